"""The summary reads other experiments' results.json; the README headline is replaced in place."""

from __future__ import annotations

import json
from pathlib import Path

from rag_lib.experiments.summary import benchmark_rows, highlight, side_by_side
from rag_lib.report import update_readme_headline


def _write(root: Path, name: str, data: dict) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "results.json").write_text(json.dumps(data))


def test_side_by_side_and_benchmark_rows_come_from_results(tmp_path: Path) -> None:
    from rag_lib.embedding.registry import default_embedder_name

    _write(tmp_path, "01_embedding_bakeoff", {"q7_rows": [
        {"configuration": f"dense:{default_embedder_name()}", "phrasing": "original", "language": "zh",
         "C1": 20, "C2": 42, "C3": 39, "C4": 1}]})
    _write(tmp_path, "06_q7_mechanism-topk", {"mechanism": "topk", "status": "ran", "variants": [
        {"name": "k=20", "q7": {"original": {"zh": {"C1": 20, "C2": 42, "C3": 39, "C4": 1}}},
         "benchmark": {"zh": {"mrr": {"baseline": 0.5, "mechanism": 0.6, "diff": 0.1, "ci95": [0.05, 0.15]}}}}]})
    _write(tmp_path, "06_q7_mechanism-reranker", {"mechanism": "reranker", "status": "unavailable", "variants": []})
    rows = side_by_side("zh", tmp_path)
    assert [r["row"] for r in rows] == [
        "baseline (dense, default embedder, original question)", "reranker: not run (unavailable)", "topk: k=20"]
    assert highlight(rows)[0] == {"row": rows[0]["row"], "C1": 20, "C2": 42, "C3": 39, "C4": "**1**"}
    assert benchmark_rows(tmp_path) == [
        {"mechanism": "topk: k=20", "language": "zh", "mrr": "0.500 → 0.600 (+0.100 [+0.050, +0.150])"}]


def test_readme_headline_is_replaced_between_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- headline:start -->\nold\n<!-- headline:end -->\ntail\n")
    assert not update_readme_headline(readme, tmp_path)  # no headline yet: untouched
    (tmp_path / "08_summary").mkdir()
    (tmp_path / "08_summary" / "headline.md").write_text("| a |\n| --- |\n| 1 |\n")
    assert update_readme_headline(readme, tmp_path)
    text = readme.read_text()
    assert "\nold\n" not in text and "| 1 |" in text and text.endswith("<!-- headline:end -->\ntail\n")
