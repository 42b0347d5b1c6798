"""Paired comparison of a mechanism against the baseline, intervals for small-count rates, multiplicity."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

# Enough resamples that a tail tested at a Holm level near 0.05 / 100 still holds about a hundred of them.
MIN_RESAMPLES = 200_000
_BLOCK = 20_000  # resamples drawn at a time (memory), from one generator: the same stream as all at once


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], n: int = MIN_RESAMPLES, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Mean of ``a − b`` and its percentile bootstrap confidence interval.

    Questions are resampled with replacement, keeping each question's pair together. The interval's ends are
    order statistics of the resampled means (no interpolation), so it excludes 0 exactly when
    :func:`paired_bootstrap_p` from the same resamples is below ``1 − confidence``.

    Parameters
    ----------
    a, b : sequence of float
        Per-question scores of the mechanism (``a``) and the baseline (``b``), same question order.
    n : int
        Bootstrap resamples.
    seed : int
        Seed of :func:`numpy.random.default_rng`; same inputs and seed, same interval.
    confidence : float
        Coverage of the interval (0.95 → 2.5th and 97.5th percentiles).

    Returns
    -------
    (mean_diff, lo, hi) : tuple of float
    """
    diff = _diff(a, b, "paired_bootstrap")
    if n < 1 or not 0.0 < confidence < 1.0:
        raise ValueError(f"need n >= 1 and 0 < confidence < 1; got n={n}, confidence={confidence}")
    lo, hi = _percentile_interval(_bootstrap_means(tuple(diff.tolist()), n, seed), 1.0 - confidence)
    return float(diff.mean()), lo, hi


def _diff(a: Sequence[float], b: Sequence[float], who: str) -> np.ndarray:
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if diff.ndim != 1 or len(a) != len(b) or len(diff) == 0:
        raise ValueError(f"{who} needs two equally long, non-empty score lists; got {len(a)} and {len(b)}")
    if np.isnan(diff).any():
        raise ValueError(f"{who} got NaN scores; drop questions a metric cannot score (no gold) first")
    return diff


@lru_cache(maxsize=256)
def _bootstrap_means(diff: tuple[float, ...], n: int, seed: int) -> np.ndarray:
    """The ``n`` resampled means of ``diff``, sorted (cached: a comparison's p and its intervals share them)."""
    values = np.asarray(diff, dtype=np.float64)
    rng = np.random.default_rng(seed)
    blocks = [values[rng.integers(0, len(values), size=(min(_BLOCK, n - start), len(values)))].mean(axis=1)
              for start in range(0, n, _BLOCK)]
    return np.sort(np.concatenate(blocks))


def _percentile_interval(means: np.ndarray, level: float) -> tuple[float, float]:
    """The central interval of the sorted ``means`` with fewer than ``level / 2`` of them below its lower end
    and above its upper end: its lower end is above 0 exactly when fewer than ``level / 2`` are ≤ 0."""
    n = len(means)
    k = math.ceil(level / 2 * n) - 1  # the most resamples that may lie strictly outside one end
    return float(means[min(max(k, 0), n - 1)]), float(means[max(n - 1 - max(k, 0), 0)])


def paired_bootstrap_p(a: Sequence[float], b: Sequence[float], n: int = MIN_RESAMPLES, seed: int = 0) -> float:
    """Two-sided bootstrap p of "mean(a − b) = 0", from the same resamples as :func:`paired_bootstrap`:
    ``2 · min(share of resampled means ≤ 0, share ≥ 0)``, capped at 1; identical scores give 1."""
    means = _bootstrap_means(tuple(_diff(a, b, "paired_bootstrap_p").tolist()), n, seed)
    below = int(np.searchsorted(means, 0.0, side="right"))
    above = len(means) - int(np.searchsorted(means, 0.0, side="left"))
    return float(min(1.0, 2.0 * min(below, above) / len(means)))


def is_sign_data(diffs: Sequence[float]) -> bool:
    """Paired binary outcomes: every per-question difference is −1, 0 or +1 (hit@k, answered, correct)."""
    return all(d in (-1.0, 0.0, 1.0) for d in diffs)


def sign_test_p(diffs: Sequence[float]) -> float:
    """McNemar's exact test (a two-sided sign test on the discordant questions): with ``b`` questions that
    gained and ``c`` that lost, ``2 · min(P(X ≤ b), P(X ≥ b))`` for X ~ Binomial(b + c, 1/2), capped at 1."""
    from scipy.stats import binom

    b, c = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    if b + c == 0:
        return 1.0
    return float(min(1.0, 2.0 * min(binom.cdf(b, b + c, 0.5), binom.sf(b - 1, b + c, 0.5))))


def clopper_pearson(k: int, n: int, level: float = 0.05) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided ``1 - level`` interval of a binomial share ``k / n`` (n > 0)."""
    from scipy.stats import beta

    low = 0.0 if k == 0 else float(beta.ppf(level / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - level / 2, k + 1, n - k))
    return low, high


def sign_interval(diffs: Sequence[float], level: float) -> tuple[float, float]:
    """An interval for the mean paired difference of binary outcomes that inverts :func:`sign_test_p`: the
    Clopper-Pearson interval of the share of gains among the d discordant questions (given d), mapped to
    ``d / n · (2θ − 1)``. It excludes 0 exactly when :func:`sign_test_p` is below ``level``."""
    n = len(diffs)
    b, d = sum(x > 0 for x in diffs), sum(x != 0 for x in diffs)
    if d == 0:
        return 0.0, 0.0
    low, high = clopper_pearson(b, d, level)
    return d / n * (2 * low - 1), d / n * (2 * high - 1)


def paired_p(diffs: Sequence[float], n_boot: int = MIN_RESAMPLES, seed: int = 0) -> float:
    """The two-sided p of "no paired difference": McNemar's exact test for binary outcomes, else the bootstrap's."""
    if is_sign_data(diffs):
        return sign_test_p(diffs)
    return paired_bootstrap_p(diffs, [0.0] * len(diffs), n=n_boot, seed=seed)


def paired_interval(diffs: Sequence[float], level: float, n_boot: int = MIN_RESAMPLES,
                    seed: int = 0) -> tuple[float, float]:
    """The interval that inverts :func:`paired_p` at ``level``: it excludes 0 exactly when ``paired_p < level``."""
    if is_sign_data(diffs):
        return sign_interval(diffs, level)
    _, lo, hi = paired_bootstrap(diffs, [0.0] * len(diffs), n=n_boot, seed=seed, confidence=1.0 - level)
    return lo, hi


def stored_value(x: float) -> float:
    """A p or an interval end as results keep it: 6 decimals, never rounded onto 0 from either side (so a
    stored interval excludes 0 exactly when the computed one does)."""
    rounded = round(x, 6)
    return math.copysign(1e-6, x) if rounded == 0 and x != 0 else rounded


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order (family-wise error over all of them).

    The i-th smallest p (0-based) is multiplied by ``m − i``; a running maximum keeps the order.
    """
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))
        adjusted[i] = running
    return adjusted


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float] | None:
    """Wilson score interval of a rate ``successes / n`` (95% by default); ``None`` when ``n`` is 0.

    Unlike the normal approximation it stays inside [0, 1] and is honest at 16/17 or 0/8.
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson needs 0 <= successes <= n; got {successes}/{n}")
    if n == 0:
        return None
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def rounded_rate(successes: int, n: int) -> float | None:
    """``successes / n`` to 4 decimals, as results store a rate; ``None`` when ``n`` is 0."""
    return round(successes / n, 4) if n else None


def count_of(rate: float | None, n: int) -> int:
    """The count behind a stored rate of ``n`` (rates are stored rounded, counts are whole)."""
    return round((rate or 0.0) * n)


def wilson_text(successes: int, n: int) -> str:
    """The Wilson 95% interval of ``successes / n`` as tables show it (``[0.12, 0.33]``; "—" when ``n`` is 0)."""
    ci = wilson(successes, n)
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "—"


def count_text(successes: int, n: int) -> str:
    """``successes/n`` with its Wilson 95% interval, as sentences give a count: ``9/44 [0.11, 0.35]``."""
    return f"{successes}/{n} {wilson_text(successes, n)}"


@dataclass(frozen=True)
class PairedDifference:
    """A mechanism's per-question scores against the baseline's on the same questions (:func:`compare`).

    Attributes
    ----------
    baseline, mechanism : float
        Means over the questions, to 4 decimals.
    diff : float
        Mean paired difference (mechanism − baseline), to 6 decimals (an exact interval can end on it).
    ci95 : (float, float)
        Its 95% interval (:func:`paired_interval`), to 6 decimals.
    p : float
        Two-sided p (:func:`paired_p`), unadjusted, to 6 decimals.
    diffs : tuple of float
        The per-question differences, kept so that a family of comparisons can be adjusted later with the
        same resamples (:func:`rag_lib.evaluation.claims.judge`).
    """

    baseline: float
    mechanism: float
    diff: float
    ci95: tuple[float, float]
    p: float
    diffs: tuple[float, ...]

    @property
    def no_question_changed(self) -> bool:
        """The metric moved on no question (e.g. hit@5 under a larger k): diff and interval are all 0."""
        return no_question_changed({"diff": self.diff, "ci95": self.ci95})

    @property
    def interval_text(self) -> str:
        """The 95% interval as tables show it: ``[-0.036, +0.071]``."""
        return interval_text(self.ci95)

    def interval_fields(self) -> dict[str, Any]:
        """What a table row of comparisons keeps beside its own figures: the interval (``ci95``, and as text under
        ``95% CI``), ``p`` and the per-question ``diffs`` that :func:`~rag_lib.evaluation.claims.judge_rows` adjusts."""
        return {"ci95": list(self.ci95), "95% CI": self.interval_text, "p": self.p, "diffs": list(self.diffs)}

    def stored(self) -> dict[str, Any]:
        """As a results.json keeps it: its fields under their names (``typed_json.decode`` reads it back)."""
        return {"baseline": self.baseline, "mechanism": self.mechanism, "diff": self.diff, "ci95": list(self.ci95),
                "p": self.p, "diffs": list(self.diffs)}


def compare(mechanism: Sequence[float], baseline: Sequence[float], n_boot: int = MIN_RESAMPLES,
            seed: int = 0) -> PairedDifference:
    """Means, paired mean difference, its 95% interval and two-sided p (unadjusted; McNemar's exact test and its
    inverted interval for binary outcomes, the bootstrap's otherwise: :func:`paired_p`, :func:`paired_interval`),
    and the per-question differences, as a :class:`PairedDifference`."""
    diffs = _diff(mechanism, baseline, "compare").tolist()
    lo, hi = paired_interval(diffs, 0.05, n_boot, seed)
    return PairedDifference(baseline=round(float(np.mean(baseline)), 4), mechanism=round(float(np.mean(mechanism)), 4),
                            diff=stored_value(float(np.mean(diffs))), ci95=(stored_value(lo), stored_value(hi)),
                            p=stored_value(paired_p(diffs, n_boot, seed)), diffs=tuple(diffs))


def p_text(p: float) -> str:
    """A p-value to three decimals, or "< 0.001" where three decimals would print it as 0.000."""
    return "< 0.001" if p < 0.0005 else f"{p:.3f}"


def signed_text(x: float, decimals: int = 3) -> str:
    """A difference with its sign ("+0.036", "-0.071"); one that rounds to zero prints as "0.000", never "-0.000"."""
    text = f"{x:+.{decimals}f}"
    return f"{0:.{decimals}f}" if float(text) == 0 else text


def interval_text(interval: Sequence[float]) -> str:
    """An interval of differences as tables show it: ``[-0.036, +0.071]``."""
    return f"[{signed_text(interval[0])}, {signed_text(interval[1])}]"


def no_question_changed(c: Mapping[str, Any]) -> bool:
    """A stored comparison (:meth:`PairedDifference.stored`, or a row with its ``diff`` and ``ci95``) whose
    metric moved on no question (e.g. hit@5 under a larger k): diff and interval are all 0."""
    return c["diff"] == 0 and c["ci95"][0] == 0 and c["ci95"][1] == 0


def effect_text(c: Mapping[str, Any], unchanged: str = "no change on any question") -> str:
    """"difference [95% interval]" of a stored comparison, or ``unchanged`` when it moved on no question."""
    return unchanged if no_question_changed(c) else f"{signed_text(c['diff'])} {interval_text(c['ci95'])}"
