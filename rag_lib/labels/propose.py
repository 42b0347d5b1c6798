"""Decide the pool's new candidates by the key-fact rule, and list the ones a person must read.

``python -m rag_lib.labels.propose`` audits every batch against the pool (``data/benchmark/pool.json``) and,
for each candidate no locator or decision settles yet, applies the rule labels v3 were decided by
(``data/benchmark/pool_decisions.yaml``'s header):

- a candidate that states **no** checkable key fact of a piece, or only **some** of them (a partial statement),
  is not gold for that piece; when that holds for every piece, it is decided ``not_gold`` for ``*`` with a
  reason naming what the chunk is about and which key facts it lacks;
- a candidate that states **every** checkable key fact of some piece, or that belongs to a question with a
  piece no string can check, is listed to be **read by hand** (its text, question and pieces are printed);
  the rule never calls a chunk gold.

``--write`` appends the rule's decisions to ``pool_decisions.yaml`` (nothing is written for the ones to read).
The rule judges strings, so it can miss a fact stated in other words: that is why the blind second pass
(:mod:`rag_lib.labels.review`) samples these decisions too.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from rag_lib.benchmark import Benchmark, Question
from rag_lib.core.config import BENCHMARK_DIR
from rag_lib.core.documents import Chunk
from rag_lib.evaluation.key_facts import KeyFact, KeyFacts, default_key_facts, stated_in

POOL_DECISIONS = BENCHMARK_DIR / "pool_decisions.yaml"


@dataclass(frozen=True)
class Proposal:
    """The rule's outcome for one (question, chunk): a ``not_gold`` reason, or ``None`` (read it)."""

    question: str
    chunk: str
    reason: str | None
    why_read: str = ""


def _first(fact: KeyFact) -> str:
    return fact.alternatives[0]


def key_fact_rule(q: Question, chunk: Chunk, facts: KeyFacts) -> Proposal:
    """The rule for one candidate of ``q`` (see the module docstring)."""
    where = " › ".join((chunk.page, *chunk.heading_path[-1:])) if chunk.heading_path else f"{chunk.page} › intro"
    parts = []
    for piece in q.gold:
        piece_facts = [f for f in facts[q.id] if f.piece == piece.id]
        if not piece_facts or any(not f.checkable for f in piece_facts):
            return Proposal(q.id, chunk.id, None, f"{piece.id} has a key fact no string can check")
        stated = [f for f in piece_facts if stated_in(f.alternatives, chunk)]
        if len(stated) == len(piece_facts):
            return Proposal(q.id, chunk.id, None, f"states every key fact of {piece.id}")
        missing = [f for f in piece_facts if f not in stated]
        if stated:
            parts.append(f"{piece.id} partial: states {', '.join(repr(_first(f)) for f in stated)} but not "
                         f"{', '.join(repr(_first(f)) for f in missing)}")
        else:
            parts.append(f"{piece.id}: none of its key facts ({', '.join(repr(_first(f)) for f in piece_facts)})")
    return Proposal(q.id, chunk.id, f"about {where}; " + "; ".join(parts))


def propose(bench: Benchmark, chunks: Sequence[Chunk], undecided: Sequence[tuple[str, str]],
            facts: KeyFacts) -> list[Proposal]:
    """The rule's proposal for each undecided (question id, chunk id) pair."""
    by_id = {c.id: c for c in chunks}
    return [key_fact_rule(bench[qid], by_id[cid], facts) for qid, cid in undecided]


def yaml_entry(p: Proposal) -> str:
    """One ``pool_decisions.yaml`` entry (``not_gold`` for every piece) in the file's layout."""
    reason = (p.reason or "").replace("'", "''")
    return (f"- question: {p.question}\n  piece: '*'\n  chunk: {p.chunk}\n  decision: not_gold\n"
            f"  reason: '{reason}'\n")


def main(argv: Sequence[str] | None = None) -> None:
    from rag_lib.benchmark import load_benchmark
    from rag_lib.benchmark.batch_labels import benchmark_for
    from rag_lib.benchmark.pool import load_pool
    from rag_lib.core.config import snapshot_batches
    from rag_lib.corpus import load_chunks
    from rag_lib.labels.audit import audit, load_decisions

    parser = argparse.ArgumentParser(prog="python -m rag_lib.labels.propose", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help=f"append the rule's decisions to {POOL_DECISIONS.name}")
    args = parser.parse_args(argv)
    pool, decisions = load_pool(), load_decisions()
    if pool is None:
        raise SystemExit("no pool: build it first with python -m rag_lib.labels.pool")
    proposals: list[Proposal] = []
    seen: set[tuple[str, str]] = set()
    for i, batch in enumerate(snapshot_batches()):
        chunks = load_chunks(batch)
        bench = load_benchmark(chunks=chunks) if i == 0 else benchmark_for(batch, chunks).benchmark
        rows = audit(bench, chunks, decisions=decisions, pool=pool)["pool"]
        undecided = [(r["question"], r["chunk"]) for r in rows if r["status"] == "undecided"
                     and (r["question"], r["chunk"]) not in seen]
        seen.update(undecided)
        batch_proposals = propose(bench, chunks, undecided, default_key_facts())
        proposals += batch_proposals
        by_id = {c.id: c for c in chunks}
        for p in (p for p in batch_proposals if p.reason is None):
            q = bench[p.question]
            print(f"READ {p.question} {p.chunk} ({batch}): {p.why_read}\n  Q: {q.en}\n  pieces: "
                  + "; ".join(f"{g.id}: {g.what}" for g in q.gold) + f"\n  text: {by_id[p.chunk].text[:1200]}\n")
    decided = [p for p in proposals if p.reason is not None]
    print(f"{len(proposals)} undecided candidates: {len(decided)} decided by the key-fact rule, "
          f"{len(proposals) - len(decided)} to read by hand")
    if args.write and decided:
        with open(POOL_DECISIONS, "a", encoding="utf-8") as fh:
            fh.writelines(yaml_entry(p) for p in decided)
        print(f"appended {len(decided)} decisions to {POOL_DECISIONS}")


if __name__ == "__main__":
    main()
