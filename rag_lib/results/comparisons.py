"""The stored shape of a comparison table judged as one Holm family (11 and 12): each row's paired interval and
its judgement, and the family's summary in the provenance."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rag_lib.evaluation.claims import Comparison, Family, Judgement, judge
from rag_lib.evaluation.stats import PairedDifference
from rag_lib.results.typed_json import json_key


@dataclass(frozen=True)
class FamilySummary:
    """A notebook's Holm family as its provenance stores it (:meth:`rag_lib.evaluation.claims.Family.summary`)."""

    name: str
    comparisons: int
    fixed: int
    alpha: float
    effects: int
    method: str

    @classmethod
    def of(cls, family: Family) -> FamilySummary:
        return cls(**family.summary())


@dataclass(frozen=True)
class JudgedDifference:
    """A stored paired difference against a baseline (:meth:`~rag_lib.evaluation.stats.PairedDifference.stored`)
    and its judgement in the run's Holm family (:meth:`~rag_lib.evaluation.claims.Judgement.stored`): a
    mechanism's variant (06) or an answerer against another (10)."""

    baseline: float
    mechanism: float
    diff: float
    ci95: tuple[float, float]
    p: float
    diffs: list[float]
    changed: int
    in_family: bool
    p_holm: float | None
    adjusted: tuple[float, float] | None
    adjusted_confidence: float | None


@dataclass(frozen=True)
class JudgedComparison:
    """What a comparison table's row keeps beside its own columns (a row type adds those): the paired bootstrap
    interval (:func:`rag_lib.evaluation.stats.compare`) and its judgement in the notebook's Holm family
    (:func:`rag_lib.evaluation.claims.judge`; ``adjusted`` and ``p_holm`` are ``None`` for a fixed comparison)."""

    ci95: tuple[float, float]
    ci_text: str = field(metadata=json_key("95% CI"))
    p: float
    diffs: tuple[float, ...]
    changed: int
    in_family: bool
    p_holm: float | None
    adjusted: tuple[float, float] | None
    adjusted_confidence: float | None
    adjusted_cell: str = field(metadata=json_key("adjusted (Holm)"))

    def judged_as(self, subject: str, scope: str, metric: str, diff: float, alpha: float) -> Judgement:
        """The stored judgement back, for the row's ``subject`` in ``scope`` (no resampling)."""
        return Judgement(subject, scope, metric, diff, self.changed, self.in_family, self.p_holm, self.adjusted,
                         self.adjusted_confidence, alpha)


Compared = tuple[str, str, str, PairedDifference]  # subject, scope, metric and the paired difference


def judge_compared(compared: Iterable[Compared], name: str, n_boot: int, seed: int) -> Family:
    """Every comparison of a table as one Holm family (:func:`rag_lib.evaluation.claims.judge`), in order."""
    return judge((Comparison(subject, scope, metric, c.diff, c.p, c.diffs, n_boot, seed)
                  for subject, scope, metric, c in compared), name)


def judged_fields(difference: PairedDifference, judgement: Judgement) -> dict[str, Any]:
    """The :class:`JudgedComparison` fields of one comparison after its family's adjustment (keyword arguments
    of a row type)."""
    return {"ci95": difference.ci95, "ci_text": difference.interval_text, "p": difference.p,
            "diffs": difference.diffs, "changed": judgement.changed, "in_family": judgement.in_family,
            "p_holm": judgement.p_holm, "adjusted": judgement.adjusted,
            "adjusted_confidence": judgement.adjusted_confidence, "adjusted_cell": judgement.cell()}
