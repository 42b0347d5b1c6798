"""Atomic writes and reports whose figures come from results.json."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from rag_lib.core.io import atomic_open, read_jsonl, write_jsonl
from rag_lib.presentation import readme, report
from rag_lib.results.store import ExperimentResult


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "chunks.jsonl"
    write_jsonl(target, [{"a": 1}])
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write('{"a": 2}\n{"half')
        raise RuntimeError("interrupted")
    assert read_jsonl(target) == [{"a": 1}]
    assert [p.name for p in tmp_path.iterdir()] == ["chunks.jsonl"]


@dataclass(frozen=True)
class Toy(ExperimentResult):
    ranks: tuple[int, ...]
    mrr: float


def test_the_report_and_findings_are_written_from_the_result_read_back(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    seen: list[Toy] = []

    def findings(result: Toy) -> list[str]:
        seen.append(result)
        return [f"MRR is {result.mrr:.2f}"]

    def report_markdown(result: Toy, said: Sequence[str]) -> str:
        return f"C1 {result.ranks[0]}, MRR {result.mrr:.3f}\n\n## Findings\n\n{report.bullets(said)}\n"

    stored = report.write_experiment("x", Toy((52, 36), 0.123456), report_markdown, findings=findings)
    assert seen == [Toy((52, 36), 0.123456)]  # rebuilt typed from the JSON as read back
    assert stored["findings"] == ["MRR is 0.12"]
    assert json.loads((tmp_path / "x" / "results.json").read_text()) == stored
    assert (tmp_path / "x" / "report.md").read_text() == (
        f"C1 52, MRR 0.123\n\n## Findings\n\n- MRR is 0.12\n\n{report.GLOSSARY_LINK}\n")


def test_markdown_table_escapes_pipes() -> None:
    table = report.markdown_table([{"a": "x|y", "b": 0.5}])
    assert table.splitlines() == ["| a | b |", "| --- | ---: |", "| x\\|y | 0.500 |"]


def test_the_results_index_names_each_runs_question_first_finding_and_checks(tmp_path, monkeypatch) -> None:
    from rag_lib.results.runs import NotebookRun
    from rag_lib.runner import expected
    from rag_lib.runner.notebooks import notebook_question

    (tmp_path / "00_corpus").mkdir()
    (tmp_path / "00_corpus" / "results.json").write_text('{"findings": ["32 pages."]}')
    (tmp_path / "expected.yaml").write_text("figures: []\n")
    monkeypatch.setattr(expected, "verdicts", lambda root: [
        expected.Verdict("00_corpus", "pages", 32, 32, "OK"), expected.Verdict("00_corpus", "chunks", 1, 2, "FAIL")])
    checks = expected.check_counts(tmp_path)
    assert checks == {"00_corpus": "1 OK, 0 OKish, 1 FAIL"}
    assert expected.check_counts(tmp_path / "nowhere") == {}  # a scratch copy without expected.yaml
    run = NotebookRun("00_corpus", "00_corpus")
    assert notebook_question(run) == "What exactly does retrieval search over?"
    readme.write_results_index(tmp_path, [run], {}, checks, {"00_corpus": notebook_question(run)})
    index = (tmp_path / "README.md").read_text()
    assert "make check: 1 OK, 0 OKish, 1 FAIL; run time: cold not measured, warm not measured." in index
    assert "No full run has been timed yet." in index
    from rag_lib.results.run_times import record_run_times

    record_run_times(tmp_path, "warm", {"00_corpus": 12.0}, 20.0, 3.0, 0.5)
    readme.write_results_index(tmp_path, [run], {}, checks, {"00_corpus": notebook_question(run)})
    assert "run time: cold not measured, warm 12 s." in (tmp_path / "README.md").read_text()
    assert "  - Question: What exactly does retrieval search over?" in index
    assert "  - Answer: 32 pages." in index
    mechanism = NotebookRun("06_q7_mechanism-hybrid", "06_q7_mechanism", {"mechanism": "hybrid"})
    assert notebook_question(mechanism).startswith("For the mechanism `hybrid`: where do C1–C4 first appear")
    assert readme.one_line("Q7 stays incomplete: 20 / 28 (caveat: one question).") == "Q7 stays incomplete: 20 / 28."
    assert (tmp_path / "notebooks" / "glossary.html").read_text().count("<strong>RRF</strong>") == 1


