"""Stored figures of the evidence gates on the benchmark, shared by the runs that measure them (02, 03, 10).

A gate's figures are :class:`rag_lib.evidence.GateScores` as its ``to_json`` stores them;
a sweep row puts the parameters tried before them; the LLM judge stores its decisions per language.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GateParameters:
    """A label-free gate's setting: a score floor and a minimum aspect coverage (``None``: that part is off)."""

    floor: float | None
    min_coverage: float | None


@dataclass(frozen=True)
class GateFigures:
    """How a gate's declines match the labels ("insufficient" is the positive class); a ratio with an empty
    denominator is ``None``. ``complete``: answerable questions whose evidence holds every gold piece."""

    tp: int
    fp: int
    fn: int
    tn: int
    n: int
    precision: float | None
    recall: float | None
    refusal_correctness: float | None
    false_refusal_rate: float | None
    unanswerable: int
    unanswerable_declined: int
    complete: int
    complete_declined: int


# Dataclass fields follow the bases in reverse order: the parameters first, then their figures (as stored).
@dataclass(frozen=True)
class SweepRow(GateFigures, GateParameters):
    """One setting of a sweep (``rag_lib.evidence.sweep``) and the figures it gives."""


@dataclass(frozen=True)
class ChosenGate(SweepRow):
    """The sweep row ``rag_lib.evidence.choose`` picks, with the Youden J it maximised."""

    youden_j: float


@dataclass(frozen=True)
class JudgedQuestion:
    """One question as the LLM judge decided it, beside its label."""

    question: str
    answerable: bool
    label: str  # "sufficient" / "insufficient"
    judge: str
    missing: list[str]


@dataclass(frozen=True)
class JudgeLanguage:
    """The LLM judge in one language: its figures over the questions it decided (``None`` when it decided
    none), how many it decided, the failed calls by reason (left out), and each decision."""

    scores: GateFigures | None
    judged: int
    failed: dict[str, int]
    rows: list[JudgedQuestion]


@dataclass(frozen=True)
class LLMJudge:
    """The LLM sufficiency judge as a gate on every benchmark question (``measure_llm_judge``)."""

    model: str
    gate: str
    by_lang: dict[str, JudgeLanguage]


@dataclass(frozen=True)
class JudgeTableRow:
    """A row of the LLM judge table: a judge, or a gate shown beside it, in one language. The figures are
    ``None`` for a judge that decided no question."""

    lang: str
    gate: str
    judged: int
    failed: int
    tp: int | None
    fp: int | None
    fn: int | None
    tn: int | None
    n: int | None
    precision: float | None
    recall: float | None
    refusal_correctness: float | None
    false_refusal_rate: float | None
    unanswerable: int | None
    unanswerable_declined: int | None
    complete: int | None
    complete_declined: int | None
