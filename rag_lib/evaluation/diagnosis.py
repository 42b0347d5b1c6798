"""Claim-level diagnosis: where each answer failed, and RAGChecker's metrics computed without an LLM.

RAGChecker (Ru et al., 2024, "RAGChecker: A Fine-grained Framework for Diagnosing Retrieval-Augmented
Generation") extracts claims with a 70B model and checks them against the gold answer and the retrieved
chunks. Here the gold answer's claims are the benchmark's **key facts** (strings an answer must state),
the answer's claims are the verification stage's (:mod:`rag_lib.verification`), and "entailed by a chunk"
is that stage's rules against the quotes the model cited. So every figure is deterministic, in both
languages, and per question; it is as good as the key facts and the rules (notebook 10's hand checks
measure both).

:func:`where_it_failed` names the first stage that lost an answerable question's answer, in pipeline
order; :func:`claim_metrics` aggregates one run's rows into long ``(metric, value, numerator,
denominator)`` rows, in the style of ``ir_measures``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_lib.evaluation.stats import rounded_rate, wilson_text

# The stages an answerable question's answer can be lost at, in pipeline order, then success.
STAGES = ("not retrieved", "ranked below the cut", "declined by the gate", "declined by the judge",
          "not sent by narrowing", "sent but not stated", "stated but unsupported", "withheld as off the question",
          "supported but wrong", "answered")


@dataclass(frozen=True)
class QuestionTrace:
    """What one answerable question went through in one run (every input of :func:`where_it_failed`).

    ``gold_ranks``: each gold piece's best rank in the full ranking (``None``: not in it); ``depth``: how
    deep retrieval is counted as having found a piece; ``k``: the cut; ``facts_sent``: every key fact is in
    what the model was sent (``None``: the pipeline sends the whole Top-k, so the cut decides);
    ``declined_by``: gate / judge / None; ``shown`` and ``correct``: the answer was shown and states every
    key fact; ``stated``: the model's whole reply states every key fact; ``off_question``: its supported claims
    were withheld as off the question (:class:`rag_lib.verification.AskedCheck`).
    """

    question: str
    gold_ranks: tuple[int | None, ...]
    depth: int
    k: int
    facts_sent: bool | None
    declined_by: str | None
    shown: bool
    correct: bool
    stated: bool
    off_question: bool = False


def where_it_failed(t: QuestionTrace) -> str:
    """The first stage that lost ``t``'s answer (one of :data:`STAGES`; "answered" when it was not lost).

    A shown answer stating every key fact is "answered" whatever happened before it (the facts can come
    from chunks that are not labelled gold). Otherwise, in order: a gold piece beyond the retrieval depth;
    beyond the cut; a decline by the gate, then by the judge; key facts missing from what narrowing sent;
    the model's reply not stating them; a reply that states them but whose claims the verification stage
    did not show, because they were unsupported or, supported, off the question; a shown answer that misses a key
    fact.
    """
    if t.shown and t.correct:
        return "answered"
    if any(r is None or r > t.depth for r in t.gold_ranks):
        return "not retrieved"
    if any(r is not None and r > t.k for r in t.gold_ranks):
        return "ranked below the cut"
    if t.declined_by == "gate":
        return "declined by the gate"
    if t.declined_by == "judge":
        return "declined by the judge"
    if t.facts_sent is False:
        return "not sent by narrowing"
    if t.shown:
        return "supported but wrong"
    if not t.stated:
        return "sent but not stated"
    return "withheld as off the question" if t.off_question else "stated but unsupported"


@dataclass(frozen=True)
class ClaimMeasure:
    """One claim-level measure of one run: value = numerator / denominator, with its Wilson interval."""

    metric: str
    value: float | None
    numerator: int
    denominator: int
    ci: str
    definition: str


@dataclass(frozen=True)
class ClaimCounts:
    """The sums one run's claim-level measures are made of."""

    facts: int  # checkable key facts of the answerable questions
    facts_shown: int  # … stated in a shown answer
    facts_sent: int  # … present in what the model was sent
    facts_shown_of_sent: int  # … stated in a shown answer and present in what was sent
    top_k_slots: int  # Top-k chunks over the answerable questions
    top_k_gold: int  # … holding a gold piece
    claims: int  # claims of the model's replies (answered, shown or withheld)
    claims_supported: int  # … stated by their own quotes (the verification rules)
    claims_ungrounded: int  # … with a number, name or URL no unit of the evidence states


MEASURES = {
    "claim recall": ("facts_shown", "facts",
                     "key facts stated in a shown answer / checkable key facts of the answerable questions"),
    "context precision": ("top_k_gold", "top_k_slots", "Top-k chunks holding a gold piece / Top-k chunks"),
    "context utilisation": ("facts_shown_of_sent", "facts_sent",
                            "key facts stated in a shown answer / key facts present in what the model was sent"),
    "faithfulness": ("claims_supported", "claims",
                     "claims stated by their own cited quotes (the verification rules) / claims of the replies"),
    "hallucination": ("claims_ungrounded", "claims",
                      "claims with a number, name or URL that no unit of the evidence states / claims of the replies"),
}


def claim_metrics(counts: ClaimCounts) -> list[ClaimMeasure]:
    """RAGChecker's measures over one run, as key facts and verification rules can compute them. Noise
    sensitivity (wrong claims resting on relevant or irrelevant chunks) needs each claim judged right or
    wrong, which only the hand checks do; it is not computed here."""
    out = []
    for metric, (top, bottom, definition) in MEASURES.items():
        n, d = getattr(counts, top), getattr(counts, bottom)
        out.append(ClaimMeasure(metric, rounded_rate(n, d), n, d, wilson_text(n, d), definition))
    return out


def stage_counts(stages: Sequence[str]) -> dict[str, int]:
    """How many questions each stage lost (every stage present, in :data:`STAGES` order)."""
    return {s: sum(x == s for x in stages) for s in STAGES}


__all__ = ["MEASURES", "STAGES", "ClaimCounts", "ClaimMeasure", "QuestionTrace", "claim_metrics", "stage_counts",
           "where_it_failed"]
