"""Notebook 10's claim-level diagnosis: per answerer, language and gate, where each answerable question's
answer was lost, and RAGChecker's claim-level measures (:mod:`rag_lib.evaluation.diagnosis`).

Retrieval counts a gold piece as found within ``retrieval.rerank_candidates`` (the candidates a reranker
would see) and as sent within the Top-k; the narrowed pipeline's "sent" is the units its selector keeps
(recomputed here as :mod:`.funnel` does), the other answerers are sent the whole Top-k.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag_lib.evaluation.diagnosis import ClaimCounts, QuestionTrace, claim_metrics, stage_counts, where_it_failed
from rag_lib.evaluation.fact_matching import find_alternative
from rag_lib.evaluation.key_facts import KeyFact
from rag_lib.evaluation.metrics import piece_ranks
from rag_lib.evidence.narrowing import default_narrower
from rag_lib.experiments.llm_eval.budget import fact_questions
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.local_llm import AnsweredQuestion, Answerer
from rag_lib.results.local_llm_choice import ClaimMeasureRow, FailureRow, QuestionFailure

NARROWED = ("narrowed", "claims")  # the answerers whose model is sent narrowed units, not the whole Top-k


@dataclass(frozen=True)
class Retrieved:
    """One answerable question with checkable key facts, in one language: what retrieval and narrowing kept."""

    question: str
    facts: tuple[KeyFact, ...]
    gold_ranks: tuple[int | None, ...]
    top_k_gold: int
    in_top_k: frozenset[int]  # the key facts (by position) the Top-k chunks state
    in_units: frozenset[int]  # … the narrowed units state


def found(facts: Sequence[KeyFact], text: str) -> frozenset[int]:
    """The positions of the key facts ``text`` states."""
    return frozenset(i for i, f in enumerate(facts) if find_alternative(f.alternatives, text))


def retrieved(wb: Workbench, lang: str, k: int, key: str = "dense") -> dict[str, Retrieved]:
    """Question id → what retrieval and narrowing kept of it (answerable questions with a checkable fact)."""
    narrower = default_narrower(wb.embedder())
    out = {}
    for fq in fact_questions(wb, lang, k, key):
        q, facts = fq.question, tuple(fq.facts)
        units = "\n".join(u.text for u in narrower(fq.text, fq.evidence))
        out[q.id] = Retrieved(
            q.id, facts, tuple(piece_ranks(q.pieces, wb.rank(fq.text, key))),
            sum(c.id in q.gold_chunks for c in fq.evidence), found(facts, "\n".join(c.text for c in fq.evidence)),
            found(facts, units))
    return out


def trace(kept: Retrieved, row: AnsweredQuestion, narrowed: bool, depth: int, k: int) -> QuestionTrace:
    """One question's run as :func:`where_it_failed` reads it."""
    return QuestionTrace(
        question=row.question, gold_ranks=kept.gold_ranks, depth=depth, k=k,
        facts_sent=len(kept.in_units) == len(kept.facts) if narrowed else None,
        declined_by=row.declined_by if row.declined_by in ("gate", "judge") else None,
        shown=row.status == "answered", correct=row.correct is True, stated=row.stated is True,
        off_question=row.error_kind == "off_question")


def diagnose(answers: Mapping[str, Answerer], kept_by_lang: Mapping[str, Mapping[str, Retrieved]], k: int,
             depth: int) -> tuple[list[FailureRow], list[ClaimMeasureRow], list[QuestionFailure]]:
    """Where it failed (per stage, and per question for the explorer) and the claim-level measures, for
    every answerer, language and gate run with recorded calls. ``kept_by_lang``: :func:`retrieved` per
    language; ``depth``: how deep a gold piece counts as retrieved (``retrieval.rerank_candidates``)."""
    stages: list[FailureRow] = []
    measures: list[ClaimMeasureRow] = []
    per_question: list[QuestionFailure] = []
    for name, answerer in answers.items():
        for run_key, run in answerer.runs.items():
            lang, gate = run_key.split(":", 1)
            kept = kept_by_lang[lang]
            rows = [r for r in run.rows if r.error_kind != "replay_miss" and r.question in kept]
            found = [where_it_failed(trace(kept[r.question], r, name in NARROWED, depth, k)) for r in rows]
            per_question += [QuestionFailure(name, lang, gate, r.question, s) for r, s in zip(rows, found, strict=True)]
            stages += [FailureRow(answerer.label, lang, gate, stage, n, len(rows))
                       for stage, n in stage_counts(found).items()]
            measures += [ClaimMeasureRow(**vars(m), generator=answerer.label, lang=lang, gate=gate)
                         for m in claim_metrics(counts(rows, kept, name in NARROWED, k))]
    return stages, measures, per_question


def counts(rows: Sequence[AnsweredQuestion], kept: Mapping[str, Retrieved], narrowed: bool, k: int) -> ClaimCounts:
    """One run's sums (answerable questions with a checkable fact whose call is recorded)."""
    shown = [found(kept[r.question].facts, r.answer) if r.status == "answered" else frozenset() for r in rows]
    sent = [kept[r.question].in_units if narrowed else kept[r.question].in_top_k for r in rows]
    replied = [r for r in rows if r.status != "insufficient"]
    return ClaimCounts(
        facts=sum(len(kept[r.question].facts) for r in rows), facts_shown=sum(map(len, shown)),
        facts_sent=sum(map(len, sent)), facts_shown_of_sent=sum(len(a & b) for a, b in zip(shown, sent, strict=True)),
        top_k_slots=k * len(rows), top_k_gold=sum(kept[r.question].top_k_gold for r in rows),
        claims=sum(r.claims for r in replied), claims_supported=sum(r.claims_supported for r in replied),
        claims_ungrounded=sum(r.claims_ungrounded for r in replied))


__all__ = ["Retrieved", "counts", "diagnose", "found", "retrieved", "trace"]


# What happened to every question of an answer run, left to right in the 10's outcome figure.
OUTCOMES = ("answered, every key fact", "answered, a key fact missing", "answered, not checkable",
            "declined, its gold in the Top-k (false refusal)", "declined, gold not all in the Top-k",
            "withheld or failed", "unanswerable, declined", "unanswerable, answered")


# Okabe-Ito, one per outcome: green for a complete answer, vermillion for a wrong one, blues for right declines.
OUTCOME_COLOURS = ("#009E73", "#D55E00", "#BBBBBB", "#E69F00", "#56B4E9", "#888888", "#0072B2", "#CC79A7")


def outcome(row: AnsweredQuestion) -> str:
    """One question's outcome (:data:`OUTCOMES`)."""
    if row.status == "error":
        return "withheld or failed"
    if not row.answerable:
        return "unanswerable, declined" if row.status == "insufficient" else "unanswerable, answered"
    if row.status == "insufficient":
        return ("declined, its gold in the Top-k (false refusal)" if row.label == "sufficient"
                else "declined, gold not all in the Top-k")
    return ("answered, not checkable" if row.correct is None else
            "answered, every key fact" if row.correct else "answered, a key fact missing")


def outcome_rows(answers: Mapping[str, Answerer]) -> list[FailureRow]:
    """Every answerer, language and gate: how many of its recorded questions end in each outcome (the rows of
    10's outcome figure, derived from the stored per-question rows)."""
    out = []
    for answerer in answers.values():
        for run_key, run in answerer.runs.items():
            lang, gate = run_key.split(":", 1)
            rows = [r for r in run.rows if r.error_kind != "replay_miss"]
            found = Counter(outcome(r) for r in rows)
            out += [FailureRow(answerer.label, lang, gate, name, found[name], len(rows)) for name in OUTCOMES
                    if found[name]]
    return out
