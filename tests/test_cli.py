"""The command line on the real corpus: ranks with gold pieces marked, and clear errors."""

from __future__ import annotations

import pytest

from rag_lib.__main__ import main


def test_rank_marks_gold_pieces_and_diagnoses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rank", "q07", "--retriever", "bm25", "--lang", "en", "--show", "5"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("bm25 · k=5 · pieces: C1@") and "diagnosis: " in first
    assert "  C1: rank " in out and "gap to the top-5 cut" in out


def test_ask_refuses_a_retriever_the_gate_was_not_calibrated_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "How do I add a secret?", "--retriever", "bm25"]) == 2
    assert "calibrated on dense scores" in capsys.readouterr().err


def test_empty_question_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rank", "  "]) == 2
    assert "non-empty question" in capsys.readouterr().err


def test_ask_reads_its_gate_parameters_from_rag_results_dir(tmp_path, monkeypatch) -> None:
    from rag_lib.answer import calibrated_gate_parameters
    from rag_lib.errors import WorkbookError

    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    with pytest.raises(WorkbookError, match=r"03_q9a_no_evidence/results\.json is missing"):
        calibrated_gate_parameters("en")
    (tmp_path / "03_q9a_no_evidence").mkdir()
    (tmp_path / "03_q9a_no_evidence" / "results.json").write_text(
        '{"calibration": {"en": {"floor_aspects": {"floor": 0.5, "min_coverage": 0.25}}}}')
    assert calibrated_gate_parameters("en") == {"floor": 0.5, "min_coverage": 0.25}
