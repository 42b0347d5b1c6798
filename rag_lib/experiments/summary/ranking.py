"""08's what-helps ranking: every mechanism variant and language ranked by its verdict over the Holm family,
the top-k variants (more context) shown after them, unranked."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from rag_lib.evaluation.claims import Verdict
from rag_lib.experiments.summary.family import judgement
from rag_lib.results.mechanism import FailedCalls, mechanism_metrics
from rag_lib.results.summary import ComparisonRow
from rag_lib.results.typed_json import Scalar

_VERDICT_ORDER = {"helps": 0, "mixed": 1, "no clear effect": 2, "nothing moved": 3, "hurts": 4}
# Ranked by the share of gold pieces in the evidence sent to generation: what an incomplete answer lacks.
RANK_METRIC = "coverage@evidence"


MORE_CONTEXT = "more context"


def is_more_context(row: Mapping[str, Scalar]) -> bool:
    """A :func:`what_helps` row of a top-k variant: shown after the mechanisms, never ranked among them."""
    return str(row["verdict"]).startswith(MORE_CONTEXT)


def what_helps(compared: Sequence[ComparisonRow], failed: dict[tuple[str, str], FailedCalls],
               more_context: Collection[str] = (), *, k: int) -> list[dict[str, Scalar]]:
    """Every mechanism variant and language, ranked: clear gains first (some metric's Holm-adjusted
    interval excludes 0 with a positive difference and none negative; :class:`~rag_lib.evaluation.claims.Verdict`),
    then mixed, no clear effect, no question changed, and clear losses; within a group by the difference in
    :data:`RANK_METRIC`. A variant whose LLM calls failed on some questions is "incomplete" and ranked last,
    whatever its figures on the rest. The variants in ``more_context`` (a larger evidence k: coverage of the
    evidence cannot fall by construction) are not ranked among mechanisms: they follow, unranked, with the
    verdict "more context: …". Cells are "difference [adjusted interval]", one per metric the runs at top-``k``
    compare; ``compared`` and ``failed`` as for :func:`~rag_lib.experiments.summary.family.benchmark_rows`."""
    grouped: dict[tuple[str, str], dict[str, ComparisonRow]] = {}
    for c in compared:
        grouped.setdefault((c.variant, c.language), {})[c.metric] = c
    rows = []
    for (variant, lang), metrics in grouped.items():
        failure = failed.get((variant, lang))
        judged = {metric: judgement(c) for metric, c in metrics.items()}
        verdict = (f"incomplete: {failure.failed} of {failure.of} questions failed" if failure
                   else Verdict(tuple(judged.values())).kind)
        extra = variant in more_context
        row: dict[str, Any] = {"mechanism": variant, "language": lang,
                               "questions": next(iter(metrics.values())).questions,
                               "verdict": f"{MORE_CONTEXT}: {verdict}" if extra else verdict}
        row.update({metric: judged[metric].cell(p_holm=False) if metric in judged else None
                    for metric in mechanism_metrics(k)})
        row["_sort"] = (extra, _VERDICT_ORDER.get(verdict, len(_VERDICT_ORDER)),
                        -metrics[RANK_METRIC].diff if RANK_METRIC in metrics else 0)
        rows.append(row)
    rows.sort(key=lambda r: r.pop("_sort"))
    ranked = [r for r in rows if not is_more_context(r)]
    return [{"rank": i, **r} for i, r in enumerate(ranked, 1)] + [{"rank": "—", **r} for r in rows[len(ranked):]]
