"""The command line on the real corpus: ranks with gold pieces marked, and clear errors."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typed_results import blank, partial_result

from rag_lib.__main__ import main
from rag_lib.results.gate_rows import ChosenGate
from rag_lib.results.q9a import Calibration, Q9aResult


def test_rank_marks_gold_pieces_and_diagnoses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rank", "q07", "--retriever", "bm25", "--lang", "en", "--show", "5"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("q07: How should environment variables")
    assert lines[1].startswith("bm25 · k=5 · pieces: C1@") and "diagnosis: " in lines[1]
    pieces = [line for line in lines if line.startswith(("C1 ", "C2 ", "C3 ", "C4 "))]
    assert len(pieces) == 4 and all("in top-5" in p or "below the cut" in p or "not ranked" in p for p in pieces)
    assert "plain-text environment variables" in out  # what the piece is
    ranking = lines[lines.index(next(line for line in lines if line.startswith("rank "))):]
    assert len(ranking) == 1 + 5 and all(len(line) <= 100 for line in lines[1:])  # --show 5: no cut line at 5


def test_rank_draws_the_top_k_cut_and_fits_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rank", "q07", "--lang", "zh", "--k", "3", "--show", "6"]) == 0
    lines = capsys.readouterr().out.splitlines()
    cut = next(i for i, line in enumerate(lines) if "top-3 cut" in line)
    assert lines[cut - 1].lstrip().startswith("3 ") and lines[cut + 1].lstrip().startswith("4 ")
    assert all(len(line) <= 100 for line in lines[2:])  # the question line may be longer


def test_ask_refuses_a_retriever_the_gate_was_not_calibrated_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "How do I add a secret?", "--retriever", "bm25"]) == 2
    assert "calibrated on dense scores" in capsys.readouterr().err


def test_empty_question_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rank", "  "]) == 2
    assert "non-empty question" in capsys.readouterr().err


def test_ask_reads_its_gate_parameters_from_rag_results_dir(tmp_path, monkeypatch) -> None:
    from rag_lib.core.errors import WorkbookError
    from rag_lib.pipeline.answer import calibrated_gate_parameters

    monkeypatch.setenv("RAG_RESULTS_DIR", str(tmp_path))
    with pytest.raises(WorkbookError, match=r"03_q9a_no_evidence/results\.json is missing"):
        calibrated_gate_parameters("en")
    (tmp_path / "03_q9a_no_evidence").mkdir()
    stored = tmp_path / "03_q9a_no_evidence" / "results.json"
    stored.write_text('{"calibration": {"en": {"floor_aspects": {"floor": 0.5, "min_coverage": 0.25}}}}')
    with pytest.raises(WorkbookError, match=r"lack .*bypass.*re-run it"):  # a file of another shape is not read
        calibrated_gate_parameters("en")
    chosen = dataclasses.replace(blank(ChosenGate), floor=0.5, min_coverage=0.25)
    calibration = {"en": dataclasses.replace(blank(Calibration), floor_aspects=chosen)}
    stored.write_text(json.dumps(partial_result(Q9aResult, calibration=calibration).to_json()))
    assert calibrated_gate_parameters("en") == {"floor": 0.5, "min_coverage": 0.25}
    with pytest.raises(WorkbookError, match="no floor\\+aspects calibration for 'zh'"):
        calibrated_gate_parameters("zh")


def test_rank_list_prints_every_benchmark_id_with_its_question(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rank", "--list", "--lang", "en"]) == 0
    lines = capsys.readouterr().out.splitlines()
    q07 = next(line for line in lines if line.startswith("q07 "))
    assert "answerable" in q07 and "How should environment variables" in q07
    assert len(lines) == len({line.split()[0] for line in lines}) > 50  # one line per id
    assert main(["rank"]) == 2
    assert "--list prints the ids" in capsys.readouterr().err


def test_a_benchmark_id_without_lang_is_asked_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rank", "q07", "--show", "3"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("q07: 环境变量")


def test_site_relative_links_print_absolute() -> None:
    from rag_lib.core.text import absolute_links

    text = "see [KV](/kv/concepts/) and [x](https://a.b/c), not (/plain/)"
    assert absolute_links(text, "https://developers.cloudflare.com/pages/functions/") == (
        "see [KV](https://developers.cloudflare.com/kv/concepts/) and [x](https://a.b/c), not (/plain/)")


def test_a_gate_decline_names_the_answerer_that_was_not_asked(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.delenv("RAG_RESULTS_DIR", raising=False)  # the gate's parameters: the committed 03 results
    assert main(["ask", "Workers KV 的免费额度是多少？", "--generator", "extractive"]) == 3
    out = capsys.readouterr().out
    assert "answerer: extractive-overlap (extractive" in out and "gate" not in out.split("answerer: ")[1].split("\n")[0]
    assert "it was not asked (the gate declined first)" in out
    assert " >   (" not in out  # a chunk without a heading shows no empty "> "


def test_the_first_run_note_counts_only_the_chunks_not_pinned(tmp_path, monkeypatch) -> None:
    from rag_lib.__main__ import first_embedding_note
    from rag_lib.embedding import EmbeddingStore
    from rag_lib.pipeline.workbench import Workbench

    monkeypatch.setenv("RAG_PROGRESS", "1")
    wb = Workbench(store=EmbeddingStore(tmp_path / "empty-cache", progress=False))
    assert first_embedding_note(wb, "dense") is None  # every chunk of the labelled batch is pinned: nothing to wait for
    embedder = wb.embedder()
    monkeypatch.setattr(embedder, "pins", None)
    note = first_embedding_note(wb, "dense")
    assert note is not None and f"embedding {len(wb.embeddable)} of the corpus's {len(wb.embeddable)} chunks" in note
