"""The label audit: candidates (copies, phrase hits, better-ranked chunks), decisions, and the real labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_lib.benchmark import load_benchmark, parse_benchmark, resolve
from rag_lib.core.config import batch_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError
from rag_lib.core.io import read_jsonl
from rag_lib.labels.audit import Decision, audit, load_decisions, render, unapplied
from rag_lib.retrieval import Ranking

REAL_CHUNKS = batch_dir() / "chunks.jsonl"
PARTIAL = "When developing, create a `.dev.vars` file in the root of your project to define secrets for wrangler dev."


def chunk(cid: str, page: str, heading: tuple[str, ...], text: str) -> Chunk:
    return Chunk(id=cid, page=page, ordinal=0, title="T", heading_path=heading, text=text, start=0, end=len(text),
                 url="u", embeddable=True, oversized=False)


CHUNKS = [
    chunk("sec-dev", "workers/configuration/secrets", ("Local development",), PARTIAL),
    chunk("env-dev", "workers/wrangler/environments", ("Secrets in local development",), PARTIAL + " "),
    chunk("pages-dev", "pages/functions/bindings", ("Local",), "Intro. " + PARTIAL + " More text about Pages."),
    chunk("other", "workers/platform/limits", ("Memory",), "An isolate can use 128 MB of memory."),
    chunk("near", "workers/configuration/secrets", ("Background",), "Local development secrets live in .dev.vars."),
]
DOC = {"snapshot": "t", "questions": [{
    "id": "q1", "type": "answerable", "compound": False, "zh": "本地 secrets？", "en": "Local secrets?",
    "pieces": [{"id": "C1", "what": ".dev.vars file for local development secrets", "locators": [
        {"page": "workers/configuration/secrets", "heading": ["Local development"], "phrase": "to define secrets"}]}],
}]}


def _bench():
    return resolve(parse_benchmark(DOC), CHUNKS)


def test_copies_and_phrase_hits_are_candidates_with_their_decisions() -> None:
    bench = _bench()
    decisions = {("q1", "C1", "env-dev"): Decision("q1", "C1", "env-dev", "not_gold", "test")}
    result = audit(bench, CHUNKS, decisions=decisions)
    kinds = {r["chunk"]: r["kind"] for r in result["candidates"]}
    assert kinds == {"env-dev": "copy", "pages-dev": "phrase"}  # the copy is listed once, as a copy
    assert result["undecided"] == 1 and not result["ranked"]
    text = render(result, bench)
    assert "[not_gold: test]" in text and "[UNDECIDED]" in text


def test_better_ranked_chunks_sharing_key_terms_are_candidates() -> None:
    bench = _bench()
    ids = ("near", "other", "sec-dev", "env-dev", "pages-dev")
    ranking = Ranking(ids, tuple(1.0 - i / 10 for i in range(len(ids))))
    result = audit(bench, CHUNKS, rankings={"q1": {"en": ranking}}, decisions={})
    above = [r for r in result["candidates"] if r["kind"] == "above"]
    # "near" shares the piece's key terms and ranks above the first gold chunk (rank 3); "other" does not.
    assert [(r["chunk"], r["rank"], r["lang"]) for r in above] == [("near", 1, "en")]


def test_decisions_the_labels_do_not_carry_out_are_reported() -> None:
    bench = _bench()
    decisions = {
        ("q1", "C1", "env-dev"): Decision("q1", "C1", "env-dev", "gold", "a copy"),       # not resolved: flagged
        ("q1", "C1", "sec-dev"): Decision("q1", "C1", "sec-dev", "not_gold", "x"),        # resolved: flagged
        ("q1", "C2", "other"): Decision("q1", "C2", "other", "gold", "x"),                # no such piece
        ("q9", "C1", "other"): Decision("q9", "C1", "other", "gold", "x"),                # no such question
    }
    problems = unapplied(bench, decisions, [c.id for c in CHUNKS])
    assert len(problems) == 4
    assert any("decided gold, but no locator" in p for p in problems)
    assert any("decided not_gold, but a locator" in p for p in problems)


def test_malformed_decisions_file_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("decisions:\n- {question: q1, piece: C1, chunk: x, decision: maybe, reason: r}\n")
    with pytest.raises(BenchmarkError, match="decision 1 is 'maybe'"):
        load_decisions(path)
    path.write_text("decisions:\n- {question: q1, piece: C1, chunk: x, decision: gold}\n")
    with pytest.raises(BenchmarkError, match="needs non-empty"):
        load_decisions(path)
    path.write_text("decisions:\n" + "- {question: q1, piece: C1, chunk: x, decision: gold, reason: r}\n" * 2)
    with pytest.raises(BenchmarkError, match="decided twice"):
        load_decisions(path)


@pytest.mark.skipif(not REAL_CHUNKS.exists(), reason="snapshot chunks not built")
def test_every_recorded_decision_is_applied_and_every_copy_or_phrase_hit_is_decided() -> None:
    chunks = [Chunk.from_json(r) for r in read_jsonl(REAL_CHUNKS)]
    bench = load_benchmark(chunks=chunks)
    result = audit(bench, chunks)  # copies and phrase hits (the ranked part needs the embedder)
    assert result["unapplied"] == []
    undecided = [(r["question"], r["piece"], r["chunk"]) for r in result["candidates"] if r["decision"] is None]
    assert undecided == []


@pytest.mark.skipif(not REAL_CHUNKS.exists(), reason="snapshot chunks not built")
def test_near_miss_questions_are_unanswerable_with_a_reason() -> None:
    bench = load_benchmark()
    near = bench.questions(near_miss=True)
    assert len(near) >= 16 and all(not q.answerable and len(q.notes) > 80 for q in near)


@pytest.mark.skipif(not REAL_CHUNKS.exists(), reason="snapshot chunks not built")
def test_a_decision_on_another_batchs_page_is_skipped_but_a_vanished_chunk_is_not() -> None:
    chunks = [Chunk.from_json(r) for r in read_jsonl(REAL_CHUNKS)]
    bench = load_benchmark(chunks=chunks)
    q = next(q for q in bench if q.answerable)
    page_chunk = next(c for c in chunks if c.id not in q.pieces[0])
    other_batch = Decision(q.id, q.gold[0].id, "d1-only-in-the-wide-batch-003-0123abcd", "not_gold", "r")
    vanished = Decision(q.id, q.gold[0].id, page_chunk.id.rsplit("-", 1)[0] + "-ffffffff", "not_gold", "r")
    decisions = {(d.question, d.piece, d.chunk): d for d in (other_batch, vanished)}
    problems = unapplied(bench, decisions, (c.id for c in chunks))
    assert len(problems) == 1 and problems[0].startswith(f"{q.id} {q.gold[0].id} {vanished.chunk}: no such chunk")
