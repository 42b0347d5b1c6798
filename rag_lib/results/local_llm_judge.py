"""``10_local_llm``'s selective answering, as stored (its judge and gate figures: :mod:`rag_lib.results.gate_rows`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SelectivePoint:
    """Answering the questions at or above ``threshold`` (None: every question): coverage and accuracy."""

    threshold: float | None
    coverage: float
    n_answered: int
    n_correct: int
    selective_accuracy: float
    ci95: tuple[float, float] | None  # Wilson 95%


@dataclass(frozen=True)
class CrossValidation:
    """How the probabilities were cross-validated."""

    scheme: str
    folds: int
    requested_folds: int
    seed: int


@dataclass(frozen=True)
class LeftOutQuestion:
    """A question selective answering left out (a feature without a record)."""

    row: int
    id: str | None
    reason: str


@dataclass(frozen=True)
class ScoredRow:
    """One question's cross-validated probability that showing the output is right, and whether it was."""

    row: int
    id: str | None
    proba: float
    y: int


@dataclass(frozen=True)
class ReliabilityBin:
    """One non-empty bin of the probabilities: its range, mean probability and observed share (Wilson 95%)."""

    lo: float
    hi: float
    n: int
    mean_proba: float
    observed: float
    ci95: tuple[float, float]


@dataclass(frozen=True)
class SelectiveAnswering:
    """Selective answering in one language (``evaluation.selective``), with its reliability bins."""

    n: int
    n_input: int
    left_out: list[LeftOutQuestion]
    features: list[str]
    coefficients: dict[str, float] | None  # feature (and "(intercept)") → log-odds per standard deviation
    coefficient_scale: str
    cv: CrossValidation
    curve: list[SelectivePoint]
    auc: float
    answer_everything: SelectivePoint
    scored: list[ScoredRow]
    note: str
    reliability: list[ReliabilityBin]
    ece: float


@dataclass(frozen=True)
class SelectiveUnfitted(SelectiveAnswering):
    """Selective answering where every kept outcome is equal: no coefficients, and the warning saying so."""

    warning: str


@dataclass(frozen=True)
class SelectiveNotRun:
    """A language with too few questions whose every signal is recorded to fit a model."""

    n: int
    not_run: str


Selective = SelectiveAnswering | SelectiveUnfitted | SelectiveNotRun
