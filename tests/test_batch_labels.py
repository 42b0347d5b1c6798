"""Labels per batch: locators and absent strings checked against any chunk set, reported not raised."""

from __future__ import annotations

import dataclasses

from rag_lib.batch_labels import check_labels
from rag_lib.benchmark import load_benchmark
from rag_lib.config import default_batch
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
