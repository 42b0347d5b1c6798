"""Every label decision of the benchmark, enumerated by kind (:class:`LabelDecision`: the first decision and the
blind context a reviewer sees), and the seeded draw of each kind's sample (:func:`sample`)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rag_lib.core.config import BENCHMARK_DIR

SEED = 20261202
FRACTION = 0.2
KINDS = ("question", "chunk", "key_fact")  # the sheet's order: questions first, so chunk items cannot hint them
LABELS = {"chunk": ("gold", "not_gold"), "question": ("answerable", "unanswerable"), "key_fact": ("holds", "fails")}
CONTEXT_HITS = 5  # BM25 hits shown with a question item (a start for the reviewer, who may grep the pages)


@dataclass(frozen=True)
class LabelDecision:
    """One first-pass decision: its kind, a stable key, the label, where it comes from, and what to show.

    ``show`` holds the blind context (never the label); ``origin`` and ``detail`` are only for agreement.
    """

    kind: str
    key: str
    first: str
    origin: str
    show: Mapping[str, Any] = field(default_factory=dict)
    detail: str = ""

    @property
    def ref(self) -> str:
        return draw_hash(self.kind, self.key)


def draw_hash(kind: str, key: str, seed: int = SEED) -> str:
    """The item's draw position: ``sha256(seed|kind|key)``, first 12 hex digits."""
    return hashlib.sha256(f"{seed}|{kind}|{key}".encode()).hexdigest()[:12]


def sample(decisions: Iterable[LabelDecision], fraction: float = FRACTION,
           seed: int = SEED) -> dict[str, list[LabelDecision]]:
    """The drawn decisions per kind, in draw (random) order: ``round(fraction * n)`` of each kind's n."""
    by_kind: dict[str, list[LabelDecision]] = {}
    for d in decisions:
        by_kind.setdefault(d.kind, []).append(d)
    out = {}
    for kind, items in by_kind.items():
        keys = [d.key for d in items]
        dup = [k for k, n in Counter(keys).items() if n > 1]
        if dup:
            raise ValueError(f"{kind} decision {dup[0]!r} is enumerated twice")
        ordered = sorted(items, key=lambda d: (draw_hash(d.kind, d.key, seed), d.key))
        out[kind] = ordered[:round(fraction * len(items))]
    return out



# ------------------------------------------------------------------------------- enumeration
def _question_show(q: Any) -> dict[str, Any]:
    return {"zh": q.zh, "en": q.en}


def _pieces_show(q: Any) -> list[dict[str, str]]:
    return [{"piece": p.id, "what": p.what} for p in q.gold]


def _chunk_show(c: Any, batch: str) -> dict[str, Any]:
    return {"chunk": c.id, "batch": batch, "page": c.page, "heading": " > ".join(c.heading_path), "text": c.text}


def chunk_decisions(benches: Mapping[str, Any], chunks: Mapping[str, Mapping[str, Any]],
                    decided: Mapping[tuple[str, str, str], Any],
                    decided_in: Mapping[tuple[str, str, str], str]) -> list[LabelDecision]:
    """(question, chunk) decisions: gold where a locator resolves to the chunk on some batch, else not_gold.

    Parameters
    ----------
    benches
        Batch → the benchmark resolved on it (labelled batch first).
    chunks
        Batch → chunk id → chunk.
    decided, decided_in
        The recorded decisions (``load_decisions``) and the file each came from (``audit`` / ``pool``).
    """
    gold: dict[tuple[str, str], set[str]] = {}
    where: dict[str, str] = {}
    questions: dict[str, Any] = {}
    for batch, bench in benches.items():
        for q in bench:
            questions.setdefault(q.id, q)
            if not q.answerable:
                continue
            for piece, ids in zip(q.gold, q.pieces, strict=True):
                for cid in ids:
                    gold.setdefault((q.id, cid), set()).add(piece.id)
                    where.setdefault(cid, batch)
    origins: dict[tuple[str, str], set[str]] = {}
    for (qid, _pid, cid), _d in decided.items():
        origins.setdefault((qid, cid), set()).add(decided_in[(qid, _pid, cid)])
    out = []
    for qid, cid in sorted(set(gold) | set(origins)):
        batch = where.get(cid) or next((b for b in chunks if cid in chunks[b]), None)
        if batch is None:
            continue  # a decision about a chunk no batch has (the unapplied check reports it)
        q = questions[qid]
        label = "gold" if (qid, cid) in gold else "not_gold"
        origin = "+".join(sorted(origins.get((qid, cid), set()))) or "locator"
        show = {"question": qid, **_question_show(q), "pieces": _pieces_show(q),
                **_chunk_show(chunks[batch][cid], batch)}
        detail = ",".join(sorted(gold.get((qid, cid), set())))
        out.append(LabelDecision("chunk", f"{qid}|{cid}", label, origin, show, detail))
    return out


def question_decisions(bench: Any, labelled_batch: str,
                       reviews: Mapping[str, Mapping[str, Any]]) -> list[LabelDecision]:
    """Every question on the labelled batch, and each batch's ``absent_review`` (batch → question → review)."""
    out = [LabelDecision("question", f"{labelled_batch}|{q.id}", "answerable" if q.answerable else "unanswerable",
                         "questions.yaml", {"batch": labelled_batch, **_question_show(q)}) for q in bench]
    for batch, by_q in reviews.items():
        for qid, review in sorted(by_q.items()):
            out.append(LabelDecision("question", f"{batch}|{qid}", "answerable" if review.answered else "unanswerable",
                                     "batch absent_review", {"batch": batch, **_question_show(bench[qid])}))
    return out


def key_fact_decisions(bench: Any, facts: Any, chunks: Mapping[str, Any]) -> list[LabelDecision]:
    """Each checkable fact, keyed ``question|piece|n`` (n counts the piece's facts from 1, all of them)."""
    out = []
    seen: Counter[tuple[str, str]] = Counter()
    for f in facts.all_facts():
        seen[(f.question_id, f.piece)] += 1
        if not f.checkable:
            continue
        q = bench[f.question_id]
        what = next(p.what for p in q.gold if p.id == f.piece)
        src = chunks.get(f.source)
        show = {"question": q.id, **_question_show(q), "piece": f.piece, "what": what,
                "fact_any_of": list(f.alternatives), "source_chunk": f.source,
                "source_text": src.text if src is not None else "(not in the labelled batch)"}
        out.append(LabelDecision("key_fact", f"{f.question_id}|{f.piece}|{seen[(f.question_id, f.piece)]}",
                                 "holds", "key_facts.yaml", show))
    return out


def all_decisions(with_context: bool = True) -> list[LabelDecision]:
    """Every label decision of the benchmark, from the files as they are now.

    ``with_context`` adds BM25 hits to question items (slower: builds a BM25 index per batch).
    """
    from rag_lib.benchmark.batch_labels import load_batch_labels
    from rag_lib.core.config import default_batch
    from rag_lib.evaluation.key_facts import load_key_facts
    from rag_lib.labels.audit import DECISIONS_PATH, POOL_DECISIONS_PATH, load_decisions
    from rag_lib.pipeline.workbench import Workbench

    labelled = default_batch()
    wide = sorted(p.stem for p in (BENCHMARK_DIR / "batches").glob("*.yaml"))
    wbs = {labelled: Workbench(labelled), **{b: Workbench(b) for b in wide}}
    benches = {b: wb.benchmark for b, wb in wbs.items()}
    chunks = {b: wb.by_id for b, wb in wbs.items()}
    decided: dict[tuple[str, str, str], Any] = {}
    decided_in: dict[tuple[str, str, str], str] = {}
    for name, path in (("audit", DECISIONS_PATH), ("pool", POOL_DECISIONS_PATH)):
        for key, d in load_decisions(path).items():
            decided[key] = d
            decided_in[key] = name
    bench = benches[labelled]
    reviews = {b: dict(load_batch_labels(b).absent_review) for b in wide}
    questions = question_decisions(bench, labelled, reviews)
    if with_context:
        questions = [_with_hits(d, wbs[d.show["batch"]]) for d in questions]
    return [*questions, *chunk_decisions(benches, chunks, decided, decided_in),
            *key_fact_decisions(bench, load_key_facts(bench=bench), chunks[labelled])]


def _with_hits(d: LabelDecision, wb: Any) -> LabelDecision:
    ranking = wb.rank(d.show["en"], "bm25")
    hits = [{"chunk": cid, "heading": " > ".join(wb.by_id[cid].heading_path), "text": wb.by_id[cid].text[:1200]}
            for cid in ranking.ids[:CONTEXT_HITS]]
    return LabelDecision(d.kind, d.key, d.first, d.origin, {**d.show, "bm25_hits_en": hits}, d.detail)
