"""The summary reads other experiments' results.json; the README headline is replaced in place."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from mechanism_fixtures import provenance, variants
from typed_results import partial_result

from rag_lib.core.config import RunConfig
from rag_lib.evaluation.stats import compare
from rag_lib.experiments.summary.family import benchmark_rows, comparisons, failures
from rag_lib.experiments.summary.inputs import SummaryInputs
from rag_lib.experiments.summary.q7 import side_by_side
from rag_lib.presentation.label_archive import relabel_rows
from rag_lib.presentation.readme import update_readme_headline
from rag_lib.presentation.side_by_side import highlight, side_by_side_table
from rag_lib.results.bakeoff import BakeoffResult, Q7RankRow
from rag_lib.results.mechanism import BaselineFigures, MechanismResult


def _write(root: Path, name: str, data: dict) -> None:
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "results.json").write_text(json.dumps(data))


def _mechanism(root: Path, mechanism: str, status: str, given: list[dict]) -> None:
    """A stored mechanism run at k = 5 (a run stores its k and each variant's evidence size)."""
    stored = partial_result(MechanismResult, mechanism=mechanism, status=status, variants=variants(*given),
                            provenance=provenance(k=5), baseline=BaselineFigures(q7={}, benchmark={}))
    _write(root, f"06_q7_mechanism-{mechanism}", stored.to_json())


def test_side_by_side_and_benchmark_rows_come_from_results(tmp_path: Path) -> None:

    _write(tmp_path, "01_embedding_bakeoff", partial_result(BakeoffResult, q7_rows=[
        Q7RankRow(f"dense:{RunConfig.from_settings().embedder}", "original", "zh", 20, 42, 39, 1)]).to_json())
    _mechanism(tmp_path, "topk", "ran", [
        {"name": "k=20", "q7": {"original": {"zh": {"C1": 20, "C2": 42, "C3": 39, "C4": 1}}},
         "benchmark": {"zh": {"mrr": compare([0.6, 0.7, 0.5, 0.6], [0.5] * 4, n_boot=1000, seed=0)}}}])
    _mechanism(tmp_path, "reranker", "unavailable", [])
    inputs = SummaryInputs.read(tmp_path)
    rows = side_by_side("zh", inputs)
    assert [r.row for r in rows] == [
        "baseline (dense, default embedder, original question)", "reranker: not run (unavailable)", "topk: k=20"]
    assert highlight(rows)[0] == {"row": rows[0].row, "C1": 20, "C2": 42, "C3": 39, "C4": "**1**", "ties": []}
    compared = comparisons(inputs.mechanisms)
    assert compared[0].adjusted is not None
    lo, hi = compared[0].adjusted  # a family of one: the 95% interval itself
    assert benchmark_rows(compared, failures(inputs.mechanisms)) == [
        {"mechanism": "topk: k=20", "language": "zh",
         "mrr": f"0.500 → 0.600 (+0.100 [{lo:+.3f}, {hi:+.3f}]; adjusted [{lo:+.3f}, {hi:+.3f}], p_Holm "
                f"{compared[0].p:.3f})"}]


def test_readme_headline_is_replaced_between_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- headline:start -->\nold\n<!-- headline:end -->\ntail\n")
    assert not update_readme_headline(readme, tmp_path)  # no headline yet: untouched
    (tmp_path / "08_summary").mkdir()
    (tmp_path / "08_summary" / "headline.md").write_text("| a |\n| --- |\n| 1 |\n")
    assert update_readme_headline(readme, tmp_path)
    text = readme.read_text()
    assert "\nold\n" not in text and "| 1 |" in text and text.endswith("<!-- headline:end -->\ntail\n")


def test_readme_opens_with_the_findings_08_stored(tmp_path: Path) -> None:
    root = tmp_path / "results"
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- findings:start -->\nold\n<!-- findings:end -->\n"
                      "<!-- headline:start -->\n<!-- headline:end -->\n")
    (root / "08_summary").mkdir(parents=True)
    (root / "08_summary" / "headline.md").write_text("| a |\n| --- |\n| 1 |\n")
    _write(root, "08_summary", {"headline_findings": [
        {"run": "04_q8_topk", "short": "k = 10 helps.", "sentence": "k = 10 helps: 0.8 → 0.9 [0.01, 0.2] | caveat."}]})
    (root / "08_summary" / "q7_ranks_zh.png").write_bytes(b"png")
    assert update_readme_headline(readme, root)
    text = readme.read_text()
    assert "\nold\n" not in text
    assert "- k = 10 helps. ([04_q8_topk](results/notebooks/04_q8_topk.html))" in text
    assert "(results/08_summary/q7_ranks_zh.png)" in text
    assert "**Q7**" in text and "C1 " in text  # Q7 and its pieces open the README
    assert "[0.01, 0.2]" not in text  # the figures live in the index's table
    from rag_lib.presentation.readme import write_results_index

    write_results_index(root, [], {})  # results/README.md opens with the same findings, linked from there
    index = (root / "README.md").read_text()
    assert ("| k = 10 helps. | k = 10 helps: 0.8 → 0.9 [0.01, 0.2] \\| caveat. | "
            "[04_q8_topk](notebooks/04_q8_topk.html) |") in index
    assert index.index("What the workbook found") < index.index("## Headline")


def test_holm_column_bold_inside_larger_evidence_and_relabel_rows(tmp_path: Path) -> None:
    dense = f"dense:{RunConfig.from_settings().embedder}"
    _mechanism(tmp_path, "topk", "ran", [
        {"name": "k=20", "evidence_k": 20, "q7": {"original": {"zh": {"C1": 20, "C2": 42, "C3": 39, "C4": 1}}},
         "benchmark": {"zh": {
             "mrr": compare([0.5] * 5, [0.5] * 5, n_boot=1000, seed=0),
             "hit@5": compare([1, 0, 1, 1, 1], [1, 1, 0, 1, 1], n_boot=1000, seed=0),
             "coverage@evidence": compare([0.9] * 5, [0.7] * 5, n_boot=1000, seed=0)}}}])
    inputs = SummaryInputs.read(tmp_path)
    compared = comparisons(inputs.mechanisms)
    got = {c.metric: c.p_holm for c in compared}
    # mrr moved on no question: left out of the family (marked), so the other two are adjusted as a pair
    assert got == {"mrr": None, "hit@5": 1.0, "coverage@evidence": 0.0}
    row = benchmark_rows(compared, failures(inputs.mechanisms))[0]
    assert row["coverage@evidence"] == ("0.700 → 0.900 (+0.200 [+0.200, +0.200]; adjusted [+0.200, +0.200], "
                                        "p_Holm < 0.001)")
    assert row["mrr"] == "0.500 → 0.500 (no change; fixed, outside the family)"
    marked = highlight(side_by_side("zh", inputs), evidence_k={"topk: k=20": 20})
    assert marked[0]["C1"] == "**20**" and marked[0]["C2"] == 42  # rank 20 is inside a Top-20 evidence

    _write(tmp_path, "01_embedding_bakeoff", partial_result(
        BakeoffResult, k=5,
        summary_rows=[{"configuration": dense, "language": "zh", "hit@5": 0.9, "coverage@10": 0.95}],
        q7_rows=[Q7RankRow(dense, "original", "zh", 13, 5, 9, 1)]).to_json())
    archive = tmp_path / "labels-v1.json"
    archive.write_text(json.dumps({
        "commit": "abc", "note": "v1", "side_by_side": {},
        "summary_rows": [{"configuration": dense, "language": "zh", "hit@5": 0.845, "coverage@10": 0.892}],
        "q7_rows": [{"configuration": dense, "phrasing": "original", "language": "zh",
                     "C1": 20, "C2": 42, "C3": 39, "C4": 1}]}))
    relabel = relabel_rows(SummaryInputs.read(tmp_path).bakeoff, archive)
    assert relabel["closing"]["zh"]["baseline"]["hit@5"] == "0.845 → 0.900"
    assert relabel["closing"]["zh"]["q7"]["original"]["C1"] == "20 → 13"
    assert relabel["closing"]["zh"]["q7"]["original"]["C4"] == "1"
    assert not relabel_rows(None, archive)["available"]  # 01 has not run
    assert not relabel_rows(SummaryInputs.read(tmp_path).bakeoff, tmp_path / "missing.json")["available"]


def test_an_archived_label_version_reads_back_unchanged_until_the_figures_move(tmp_path: Path) -> None:
    from rag_lib.presentation.label_archive import archive_label_version
    from rag_lib.results.summary import SummaryResult

    dense = f"dense:{RunConfig.from_settings().embedder}"
    row = Q7RankRow(dense, "original", "en", 3, 5, 9, 1)
    metrics = {"configuration": dense, "language": "en", "hit@5": 0.9, "coverage@10": 0.8}
    bakeoff = partial_result(BakeoffResult, k=5, q7_rows=[row], summary_rows=[metrics])
    _write(tmp_path, "01_embedding_bakeoff", bakeoff.to_json())
    archive = tmp_path / "archive" / "labels.json"
    with pytest.raises(FileNotFoundError, match="08_summary"):
        archive_label_version("abc", "v1", tmp_path, archive)
    assert not archive.exists()
    _write(tmp_path, "08_summary", partial_result(SummaryResult, side_by_side={"en": []}).to_json())
    archive_label_version("abc", "v1", tmp_path, archive)
    same = relabel_rows(bakeoff, archive)
    assert same["before_commit"] == "abc" and same["closing"]["en"]["baseline"]["hit@5"] == "0.900"
    assert same["closing"]["en"]["q7"]["original"]["C1"] == "3"
    moved = dataclasses.replace(bakeoff, q7_rows=[dataclasses.replace(row, C1=2)])
    assert relabel_rows(moved, archive)["closing"]["en"]["q7"]["original"]["C1"] == "3 → 2"


def test_a_rank_tied_at_the_top_10_cut_is_neither_bold_nor_inside() -> None:
    from rag_lib.experiments.summary.q7 import q7_inside
    from rag_lib.results.summary import Q7TiedRanks

    rows = [Q7TiedRanks("tied", 3, 4, 10, 1, ["C3"]), Q7TiedRanks("clear", 3, 4, 10, 1, []),
            Q7TiedRanks("topk: k=20", 3, 4, 12, 1, ["C3"])]
    marked = highlight(rows, evidence_k={"topk: k=20": 20})
    assert [r["C3"] for r in marked] == ["10≈", "**10**", "**12**"]  # a larger evidence is past the cut anyway
    assert q7_inside(rows, {"topk: k=20": 20}) == ["clear", "topk: k=20"]


def test_the_side_by_side_table_is_rendered_from_the_stored_rows_with_its_marks() -> None:
    from rag_lib.results.summary import Q7Note, Q7Ranks, Q7TiedRanks
    from rag_lib.results.typed_json import encode

    rows = [Q7TiedRanks("baseline", 20, 9, 10, None, ["C3"]), Q7Note("reranker: not run (unavailable)"),
            Q7Ranks("recovery (llm) S1: x", 3, 30, 12, 1), Q7TiedRanks("topk: k=20", 20, 42, 12, 1, [])]
    evidence_k = {"topk: k=20": 20}
    stored = json.loads(json.dumps({"side_by_side": encode(rows), "evidence_k": evidence_k}))
    shown = side_by_side_table(rows, evidence_k)
    assert shown == side_by_side_table(stored["side_by_side"], stored["evidence_k"])
    assert shown.splitlines()[2:] == ["| baseline | 20 | **9** | 10≈ | — |",
                                      "| reranker: not run (unavailable) | — | — | — | — |",
                                      "| recovery (llm) S1: x | **3** | 30 | 12 | **1** |",
                                      "| topk: k=20 | **20** | 42 | **12** | **1** |"]


def test_p_values_too_small_for_three_decimals_read_below_0_001() -> None:
    from rag_lib.evaluation.stats import p_text
    from rag_lib.presentation.tables import Table

    assert (p_text(0.0), p_text(0.0004), p_text(0.0005), p_text(0.0312)) == ("< 0.001", "< 0.001", "0.001", "0.031")
    rows = [{"metric": "hit@5", "p": 0.00001, "p_Holm": 0.2, "diff": d} for d in (0.00001, -0.00001, -0.0312)]
    cells = Table(rows, signed=("diff",)).cells()
    # Only p-value columns read "< 0.001"; a difference keeps its sign, one that rounds to 0 prints 0.000.
    assert [c[3] for c in cells] == ["0.000", "0.000", "-0.031"] and cells[0][:3] == ["hit@5", "< 0.001", "0.200"]
