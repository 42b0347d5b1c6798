"""08's mechanism comparisons: every (variant, language, metric) judged in one Holm family, read back as
judgements, the variants' failed LLM calls, and the whole-benchmark table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_lib.evaluation.claims import ALPHA, Family, Judgement, bound_text, judge
from rag_lib.evaluation.stats import effect_text, p_text
from rag_lib.results.mechanism import FailedCalls, MechanismResult, mechanism_metrics
from rag_lib.results.summary import ComparisonRow
from rag_lib.results.typed_json import decode, encode

# The compared metrics are mechanism_metrics(k) of the runs' k; coverage@evidence: pieces inside the evidence
# the variant sends to generation (Top-5, or Top-k for the top-k variants), the one metric a larger k changes.


FAMILY_NAME = "every mechanism run (variants × languages × metrics)"


def comparisons(mechanisms: Sequence[MechanismResult], alpha: float = ALPHA) -> list[ComparisonRow]:
    """Every (variant, language, metric) comparison, judged in one Holm family over all of them.

    Each row holds the stored figures (``baseline``, ``value``, ``diff``, ``ci95``, ``p``) and its judgement
    (:data:`~rag_lib.evaluation.claims.STORED_KEYS`: ``in_family`` False where no question changed,
    ``p_holm``, ``adjusted``); read it back with :func:`judgement`.
    """
    rows: list[dict[str, Any]] = []
    items = []
    for result in mechanisms:
        n_boot, seed = result.provenance.n_boot, result.provenance.seed
        for variant in result.variants if result.ran else []:
            label = variant.label(result.mechanism)
            for lang, metrics in sorted(variant.benchmark.items()):
                for metric in mechanism_metrics(result.k):
                    m = metrics.get(metric)
                    if m:
                        rows.append({"variant": label, "language": lang,
                                     "questions": variant.compared_on.get(lang, result.n_answerable),
                                     "metric": metric, "baseline": m.baseline, "value": m.mechanism,
                                     "diff": m.diff, "ci95": list(m.ci95), "p": m.p})
                        items.append(m.comparison(label, lang, metric, n_boot, seed))
    judged = judge(items, FAMILY_NAME, alpha).judgements
    return [decode(ComparisonRow, row | j.stored()) for row, j in zip(rows, judged, strict=True)]


def judgement(c: ComparisonRow, alpha: float = ALPHA) -> Judgement:
    """One row of :func:`comparisons` as a :class:`~rag_lib.evaluation.claims.Judgement`."""
    return Judgement.read(c.variant, c.language, c.metric, encode(c), alpha)


def family_of(compared: Sequence[ComparisonRow], alpha: float = ALPHA) -> Family:
    """The family :func:`comparisons` judged, read back from its rows."""
    return Family(FAMILY_NAME, tuple(judgement(c, alpha) for c in compared), alpha)


def failures(mechanisms: Sequence[MechanismResult]) -> dict[tuple[str, str], FailedCalls]:
    """(variant label, language) → the variant's failed LLM calls there, for the variants that had any."""
    return {(variant.label(result.mechanism), lang): failure
            for result in mechanisms if result.ran
            for variant in result.variants
            for lang, failure in sorted(variant.failures.items())}


def benchmark_rows(compared: Sequence[ComparisonRow], failed: dict[tuple[str, str], FailedCalls]
                   ) -> list[dict[str, str]]:
    """One row per mechanism variant and language: change vs baseline, 95% interval, Holm-adjusted p;
    a variant whose LLM calls failed for some questions says so in ``failed`` (never as a figure).

    ``compared`` and ``failed`` are :func:`comparisons` and :func:`failures` of the same runs."""
    rows: dict[tuple[str, str], dict[str, str]] = {
        (label, lang): {"mechanism": label, "language": lang,
                        "failed": f"{failure.failed}/{failure.of} ({failure.kinds_text})"}
        for (label, lang), failure in failed.items()}
    for c in compared:
        row = rows.setdefault((c.variant, c.language), {"mechanism": c.variant, "language": c.language})
        j = judgement(c)
        if j.in_family and j.adjusted is not None:
            lo, hi = j.adjusted
            effect = effect_text(encode(c), "no change")
            judged = f"{effect}; adjusted [{bound_text(lo)}, {bound_text(hi)}], p_Holm {p_text(j.p_holm)}"
        else:
            judged = "no change; fixed, outside the family"
        row[c.metric] = f"{c.baseline:.3f} → {c.value:.3f} ({judged})"
    return list(rows.values())
