"""Measuring gates against the labels, and choosing their thresholds in and out of sample."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_lib.benchmark import Question
from rag_lib.core.errors import WorkbookError

if TYPE_CHECKING:
    pass


# -------------------------------------------------------------------------------- measurement


def label_insufficient(question: Question, evidence_ids: Iterable[str]) -> bool:
    """The benchmark's label: unanswerable, or some gold piece has no chunk in the evidence."""
    return not question.answerable or not all(question.covered(evidence_ids))


@dataclass(frozen=True)
class GateScores:
    """How well a gate's declines match the labels ("insufficient" is the positive class).

    ``refusal_correctness`` is the share of unanswerable questions declined;
    ``false_refusal_rate`` the share of answerable questions with complete evidence declined.
    Ratios with an empty denominator are ``None``.
    """

    tp: int
    fp: int
    fn: int
    tn: int
    unanswerable: int
    unanswerable_declined: int
    complete: int  # answerable with every gold piece in the evidence (label: sufficient)
    complete_declined: int

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def refusal_correctness(self) -> float | None:
        return _ratio(self.unanswerable_declined, self.unanswerable)

    @property
    def false_refusal_rate(self) -> float | None:
        return _ratio(self.complete_declined, self.complete)

    def to_json(self) -> dict[str, Any]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn, "n": self.tp + self.fp + self.fn + self.tn,
                "precision": _round(self.precision), "recall": _round(self.recall),
                "refusal_correctness": _round(self.refusal_correctness),
                "false_refusal_rate": _round(self.false_refusal_rate),
                "unanswerable": self.unanswerable, "unanswerable_declined": self.unanswerable_declined,
                "complete": self.complete, "complete_declined": self.complete_declined}


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


@dataclass(frozen=True)
class Case:
    """One question as a gate saw it: the label and the gate's decision."""

    question_id: str
    answerable: bool
    label_insufficient: bool
    declined: bool


def score_cases(cases: Iterable[Case]) -> GateScores:
    """Confusion counts and rates of ``cases`` (see :class:`GateScores`)."""
    rows = list(cases)
    return GateScores(
        tp=sum(c.declined and c.label_insufficient for c in rows),
        fp=sum(c.declined and not c.label_insufficient for c in rows),
        fn=sum(not c.declined and c.label_insufficient for c in rows),
        tn=sum(not c.declined and not c.label_insufficient for c in rows),
        unanswerable=sum(not c.answerable for c in rows),
        unanswerable_declined=sum(c.declined and not c.answerable for c in rows),
        complete=sum(c.answerable and not c.label_insufficient for c in rows),
        complete_declined=sum(c.declined and c.answerable and not c.label_insufficient for c in rows),
    )


@dataclass(frozen=True)
class ScoredQuestion:
    """What the label-free gates see of one question (best score, aspect coverage) and its label."""

    question_id: str
    answerable: bool
    label_insufficient: bool
    best_score: float
    aspect_coverage: float | None = None  # None: no checkable aspect (the aspect gate declines)

    def declined(self, floor: float | None, min_coverage: float | None) -> bool:
        """The decision of ``floor`` (if set) and the aspect gate at ``min_coverage`` (if set)."""
        below_floor = floor is not None and self.best_score < floor
        uncovered = min_coverage is not None and (
            self.aspect_coverage is None or self.aspect_coverage + 1e-12 < min_coverage)
        return below_floor or uncovered

    def declined_with(self, parameters: Mapping[str, float | None]) -> bool:
        """:meth:`declined` with fitted ``parameters`` (``floor``, ``min_coverage``; :func:`fit`'s shape)."""
        return self.declined(parameters["floor"], parameters["min_coverage"])


def candidates(values: Iterable[float | None]) -> list[float]:
    """Every distinct value (decisions change only there) plus one above them all (decline all).

    Each is cut down, not rounded, to 4 decimals, so that a threshold at a candidate still lets its own value pass
    ("at least"): 2/3 rounds up to 0.6667, which a coverage of 2/3 fails, and the sweep would never try it.
    """
    distinct = sorted({math.floor(v * 1e4 + 1e-9) / 1e4 for v in values if v is not None})
    return [*distinct, round(distinct[-1] + 0.0001, 4)] if distinct else []


def sweep(
    rows: Sequence[ScoredQuestion],
    floors: Sequence[float | None] | None = (None,),
    coverages: Sequence[float | None] | None = (None,),
) -> list[dict[str, Any]]:
    """Gate scores for every ``(floor, min_coverage)`` pair (``None``: that part is off).

    ``floors=None`` / ``coverages=None`` mean "every candidate" (:func:`candidates` of the rows'
    best scores / aspect coverages), so a sweep is exhaustive, not a hand-picked grid.
    """
    floors = candidates(r.best_score for r in rows) if floors is None else floors
    coverages = [c for c in candidates(r.aspect_coverage for r in rows) if c <= 1.0] if coverages is None else coverages
    out = []
    for floor in floors:
        for min_coverage in coverages:
            scores = score_cases(Case(r.question_id, r.answerable, r.label_insufficient,
                                      r.declined(floor, min_coverage)) for r in rows)
            out.append({"floor": floor, "min_coverage": min_coverage, **scores.to_json()})
    return out


def floor_sweep(rows: Sequence[ScoredQuestion]) -> list[dict[str, Any]]:
    """Refusal correctness vs false refusals for every candidate floor (declined iff best < floor)."""
    return sweep(rows, floors=None)


def _youden(row: Mapping[str, Any]) -> float:
    """Refusal correctness − false-refusal rate from the counts (an empty class counts as 0)."""
    rc = row["unanswerable_declined"] / row["unanswerable"] if row["unanswerable"] else 0.0
    frr = row["complete_declined"] / row["complete"] if row["complete"] else 0.0
    return rc - frr


def choose(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The sweep row maximising refusal correctness − false-refusal rate (Youden's J).

    J is computed from the counts, not the rounded rates. Ties go to the row with the fewest
    declines, then the lowest floor and coverage. The rule is fixed in advance; measured on the
    questions it was chosen on, the figures are in-sample and optimistic: :func:`cross_validate`
    gives the out-of-sample ones.
    """
    if not rows:
        raise WorkbookError("choose got an empty sweep; sweep at least one question.")
    best = min(rows, key=lambda r: (-round(_youden(r), 10), r["tp"] + r["fp"], r["floor"] or 0.0,
                                    r["min_coverage"] or 0.0))
    return {**best, "youden_j": round(_youden(best), 4)}


# -------------------------------------------------------------------------------- out of sample

GATE_PARTS: dict[str, tuple[bool, bool]] = {"floor": (True, False), "aspects": (False, True),
                                             "floor_aspects": (True, True)}


def fit(rows: Sequence[ScoredQuestion], gate: str) -> dict[str, float | None]:
    """The parameters :func:`choose` picks over the exhaustive :func:`sweep` of ``rows`` for one gate.

    ``gate`` is ``floor``, ``aspects`` or ``floor_aspects``. Vectorised (every candidate pair at once),
    with the same candidates, J and tie-breaks as ``choose(sweep(...))``, so it is cheap enough to
    run once per cross-validation fold.
    """
    if gate not in GATE_PARTS:
        raise WorkbookError(f"unknown gate {gate!r} to fit; use one of {', '.join(GATE_PARTS)}.")
    if not rows:
        raise WorkbookError("fit got no questions; a fold needs at least one training question.")
    use_floor, use_cov = GATE_PARTS[gate]
    floors = candidates(r.best_score for r in rows) if use_floor else [None]
    coverages = [c for c in candidates(r.aspect_coverage for r in rows) if c <= 1.0] if use_cov else [None]
    declined = _declined_grid(rows, floors, coverages)  # (floors, coverages, questions)
    answerable = np.array([r.answerable for r in rows])
    complete = answerable & ~np.array([r.label_insufficient for r in rows])
    n_unans, n_complete = int((~answerable).sum()), int(complete.sum())
    rc = (declined & ~answerable).sum(-1) / n_unans if n_unans else np.zeros(declined.shape[:2])
    frr = (declined & complete).sum(-1) / n_complete if n_complete else np.zeros(declined.shape[:2])
    j = np.round(rc - frr, 10)
    n_declined = declined.sum(-1)
    f_key = np.array([f or 0.0 for f in floors])[:, None] * np.ones(len(coverages))[None, :]
    c_key = np.ones(len(floors))[:, None] * np.array([c or 0.0 for c in coverages])[None, :]
    order = np.lexsort((c_key.ravel(), f_key.ravel(), n_declined.ravel(), -j.ravel()))
    fi, ci = np.unravel_index(order[0], j.shape)
    return {"floor": floors[fi], "min_coverage": coverages[ci]}


def _declined_grid(rows: Sequence[ScoredQuestion], floors: Sequence[float | None],
                   coverages: Sequence[float | None]) -> np.ndarray:
    """``declined[f, c, q]``: whether ``(floors[f], coverages[c])`` declines question ``q`` (ScoredQuestion rule)."""
    best = np.array([r.best_score for r in rows], dtype=np.float64)
    cov = np.array([np.nan if r.aspect_coverage is None else r.aspect_coverage for r in rows], dtype=np.float64)
    f = np.array([np.nan if x is None else x for x in floors], dtype=np.float64)
    c = np.array([np.nan if x is None else x for x in coverages], dtype=np.float64)
    below = ~np.isnan(f)[:, None] & (best[None, :] < f[:, None])
    with np.errstate(invalid="ignore"):
        uncovered = ~np.isnan(c)[:, None] & (np.isnan(cov)[None, :] | (cov[None, :] + 1e-12 < c[:, None]))
    return below[:, None, :] | uncovered[None, :, :]


def held_out_parameters(rows: Sequence[ScoredQuestion], gate: str, groups: Mapping[str, str] | None = None,
                        ) -> tuple[dict[str, dict[str, float | None]], list[dict[str, float | None]]]:
    """Each question's parameters fitted without its fold (see :func:`cross_validate`), and each fold's fit.

    A question that is not among ``rows`` (e.g. asked of another corpus) has no held-out parameters.
    """
    groups = groups or {}
    folds: dict[str, list[ScoredQuestion]] = {}
    for r in rows:
        folds.setdefault(groups.get(r.question_id, r.question_id), []).append(r)
    chosen: dict[str, dict[str, float | None]] = {}
    params = []
    for name, test in folds.items():
        fitted = fit([r for r in rows if groups.get(r.question_id, r.question_id) != name], gate)
        params.append(fitted)
        chosen.update({r.question_id: fitted for r in test})
    return chosen, params


def cross_validate(rows: Sequence[ScoredQuestion], gate: str,
                   groups: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Out-of-sample figures: each fold's questions are decided with parameters fitted on the others.

    Parameters
    ----------
    rows
        Every question as the label-free gates see it.
    gate
        ``floor``, ``aspects`` or ``floor_aspects``; fitted per fold by :func:`fit`.
    groups
        Question id → fold name (e.g. its gold page); questions without an entry, and every
        question when ``groups`` is None, are folds of their own (leave-one-out).

    Returns
    -------
    dict
        ``scores`` (:class:`GateScores` JSON of the pooled out-of-fold decisions), ``declined``
        (question id → bool), ``folds`` and ``parameters`` (each fold's fitted values: how stable
        the choice is).
    """
    chosen, params = held_out_parameters(rows, gate, groups)
    declined = {r.question_id: r.declined_with(chosen[r.question_id]) for r in rows}
    cases = [Case(r.question_id, r.answerable, r.label_insufficient, declined[r.question_id]) for r in rows]
    floors = sorted(p["floor"] for p in params if p["floor"] is not None)
    coverages = sorted(p["min_coverage"] for p in params if p["min_coverage"] is not None)
    return {"gate": gate, "folds": len(params), "scores": score_cases(cases).to_json(), "declined": declined,
            "parameters": {"floor_range": [floors[0], floors[-1]] if floors else None,
                           "min_coverage_range": [coverages[0], coverages[-1]] if coverages else None}}
