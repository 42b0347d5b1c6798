"""The key-fact rule that decides new pool candidates: never gold, partial and absent facts named exactly."""

from __future__ import annotations

from rag_lib.benchmark import load_benchmark
from rag_lib.core.documents import Chunk
from rag_lib.evaluation.key_facts import default_key_facts
from rag_lib.labels.propose import key_fact_rule, yaml_entry


def _chunk(text: str) -> Chunk:
    return Chunk(id="x-000-1", page="workers/x", title="X", heading_path=("Limits",), text=text, start=0,
                 end=len(text), url="https://example.com", ordinal=0, embeddable=True, oversized=False)


def test_a_chunk_stating_every_key_fact_of_a_piece_is_read_by_hand_never_decided() -> None:
    bench, facts = load_benchmark(), default_key_facts()
    read = key_fact_rule(bench["a25"], _chunk("wrangler secret put creates a new version of the Worker."), facts)
    assert read.reason is None and read.why_read == "states every key fact of C2"


def test_absent_and_partial_key_facts_are_named_in_the_reason() -> None:
    bench, facts = load_benchmark(), default_key_facts()
    nothing = key_fact_rule(bench["a25"], _chunk("Deleting a KV namespace."), facts)
    assert nothing.reason == ("about workers/x › Limits; C1: none of its key facts ('prompted'); "
                              "C2: none of its key facts ('new version')")
    c2 = [f for f in facts["a09"] if f.piece == "C2"]
    assert len(c2) == 2  # 30 million included CPU ms and $0.02 per additional million
    partial = key_fact_rule(bench["a09"], _chunk(f"The plan includes {c2[0].alternatives[0]} per month."), facts)
    assert f"C2 partial: states {c2[0].alternatives[0]!r} but not {c2[1].alternatives[0]!r}" in (partial.reason or "")
    entry = yaml_entry(nothing)
    assert entry.startswith("- question: a25\n  piece: '*'\n  chunk: x-000-1\n  decision: not_gold\n")
    assert "('prompted')" not in entry and "(''prompted'')" in entry  # single quotes doubled inside YAML ''
