"""Labels per batch: locators and absent strings checked against any chunk set, reported not raised."""

from __future__ import annotations

import dataclasses

import pytest

from rag_lib.benchmark import Locator, load_benchmark
from rag_lib.benchmark.batch_labels import AbsentReview, BatchLabels, benchmark_for, check_labels, load_batch_labels
from rag_lib.core.config import default_batch
from rag_lib.core.errors import BenchmarkError
from rag_lib.corpus import load_chunks


def test_current_batch_holds_every_label() -> None:
    check = check_labels(default_batch(), load_chunks())
    assert check.unresolved == () and check.absent_hits == ()
    assert check.n_locators == sum(len(p.locators) for q in load_benchmark() for p in q.gold) > 0


def test_a_chunk_stating_an_absent_string_fails_that_question_only() -> None:
    bench = load_benchmark()
    question = next(q for q in bench if q.absent)
    chunks = load_chunks()
    extra = dataclasses.replace(chunks[0], id="x/new-000-00000000", page="x/new", text=f"Now: {question.absent[0]}.")
    check = check_labels("other", [*chunks, extra], bench)
    assert check.absent_failed == (question.id,)
    assert check.absent_hits[0].pages == ("x/new",) and check.absent_hits[0].chunks == (extra.id,)
    assert check.to_json()["absent_failed"] == [question.id]


def test_a_missing_page_leaves_its_locators_unresolved() -> None:
    bench = load_benchmark()
    page = next(loc.page for q in bench for p in q.gold for loc in p.locators)
    check = check_labels("other", [c for c in load_chunks() if c.page != page], bench)
    assert check.unresolved
    assert all(u["where"].startswith(f"page={page!r} ") for u in check.unresolved)


# ------------------------------------------------------------------ labels that hold in one batch only


def test_on_the_labelled_batch_the_batch_benchmark_is_the_benchmark() -> None:
    chunks = load_chunks()
    on_batch = benchmark_for(default_batch(), chunks)
    plain = load_benchmark(chunks=chunks)
    assert on_batch.left_out == {}
    assert [q.pieces if q.answerable else [] for q in on_batch.benchmark] == [
        q.pieces if q.answerable else [] for q in plain]


def _with_new_page(text: str):
    chunks = load_chunks()
    extra = dataclasses.replace(chunks[0], id="x/new-000-00000000", page="x/new", heading_path=("New",), text=text)
    return [*chunks, extra], extra


def test_an_extra_locator_adds_its_chunk_to_that_piece_only() -> None:
    chunks, extra = _with_new_page("Secrets stay encrypted at rest.")
    bench = load_benchmark()
    q = next(q for q in bench if q.answerable)
    labels = BatchLabels("other", ((q.id, q.gold[0].id, Locator("x/new", ("New",), "stay encrypted"), "copy"),))
    on_batch = benchmark_for("other", chunks, bench, labels).benchmark
    before = load_benchmark(chunks=chunks)[q.id].pieces
    assert on_batch[q.id].pieces[0] == before[0] | {extra.id}
    assert on_batch[q.id].pieces[1:] == before[1:]


def test_absent_hits_are_left_out_unless_reviewed_as_still_unanswerable() -> None:
    bench = load_benchmark()
    question = next(q for q in bench if q.absent)
    chunks, _ = _with_new_page(f"Now: {question.absent[0]}.")
    unreviewed = benchmark_for("other", chunks, bench, BatchLabels("other"))
    assert question.id in unreviewed.left_out and "nobody has reviewed" in unreviewed.left_out[question.id]
    assert question.id not in {q.id for q in unreviewed.benchmark}
    kept = benchmark_for("other", chunks, bench, BatchLabels(
        "other", absent_review={question.id: AbsentReview(question.id, False, "the term only")}))
    assert kept.left_out == {} and kept.benchmark[question.id].absent == ()
    answered = benchmark_for("other", chunks, bench, BatchLabels(
        "other", absent_review={question.id: AbsentReview(question.id, True, "x/new states it")}))
    assert answered.left_out == {question.id: "other answers it: x/new states it"}


def test_batch_label_files_are_checked(tmp_path) -> None:
    assert load_batch_labels("nothing-here", tmp_path) == BatchLabels("nothing-here")
    (tmp_path / "b.yaml").write_text("batch: c\n", encoding="utf-8")
    with pytest.raises(BenchmarkError, match="expected 'b'"):
        load_batch_labels("b", tmp_path)
    (tmp_path / "b.yaml").write_text("batch: b\nlocators:\n  - {question: q07, piece: C9, page: p, phrase: x, "
                                     "reason: r}\n", encoding="utf-8")
    with pytest.raises(BenchmarkError, match="no piece C9"):
        benchmark_for("b", load_chunks(), labels=load_batch_labels("b", tmp_path))
    (tmp_path / "b.yaml").write_text("batch: b\nabsent_review:\n  - {question: u02, answered: maybe}\n",
                                     encoding="utf-8")
    with pytest.raises(BenchmarkError, match="answered"):
        load_batch_labels("b", tmp_path)
