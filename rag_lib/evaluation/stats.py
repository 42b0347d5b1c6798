"""Paired comparison of a mechanism against the baseline, intervals for small-count rates, multiplicity."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], n: int = 10000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Mean of ``a − b`` and its percentile bootstrap confidence interval.

    Questions are resampled with replacement, keeping each question's pair together.

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
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if diff.ndim != 1 or len(a) != len(b) or len(diff) == 0:
        raise ValueError(f"paired_bootstrap needs two equally long, non-empty score lists; got {len(a)} and {len(b)}")
    if np.isnan(diff).any():
        raise ValueError("paired_bootstrap got NaN scores; drop questions a metric cannot score (no gold) first")
    if n < 1 or not 0.0 < confidence < 1.0:
        raise ValueError(f"need n >= 1 and 0 < confidence < 1; got n={n}, confidence={confidence}")
    means = _bootstrap_means(diff, n, seed)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(diff.mean()), float(lo), float(hi)


def _bootstrap_means(diff: np.ndarray, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return diff[rng.integers(0, len(diff), size=(n, len(diff)))].mean(axis=1)


def paired_bootstrap_p(a: Sequence[float], b: Sequence[float], n: int = 10000, seed: int = 0) -> float:
    """Two-sided bootstrap p-value of "mean(a − b) = 0", from the same resamples as :func:`paired_bootstrap`.

    ``2 · min(share of resampled means ≤ 0, share ≥ 0)``, capped at 1; identical scores give 1.
    It is the smallest level at which the percentile interval excludes 0 (up to resampling).
    """
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if diff.ndim != 1 or len(a) != len(b) or len(diff) == 0:
        raise ValueError(f"paired_bootstrap_p needs two equally long, non-empty score lists; got {len(a)} and {len(b)}")
    means = _bootstrap_means(diff, n, seed)
    return float(min(1.0, 2.0 * min(np.mean(means <= 0.0), np.mean(means >= 0.0))))


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


def wilson_text(successes: int, n: int) -> str:
    """The Wilson 95% interval of ``successes / n`` as tables show it (``[0.12, 0.33]``; "—" when ``n`` is 0)."""
    ci = wilson(successes, n)
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "—"


@dataclass(frozen=True)
class PairedDifference:
    """A mechanism's per-question scores against the baseline's on the same questions (:func:`compare`).

    Attributes
    ----------
    baseline, mechanism : float
        Means over the questions, to 4 decimals.
    diff : float
        Mean paired difference (mechanism − baseline), to 4 decimals.
    ci95 : (float, float)
        Its paired bootstrap 95% interval, to 4 decimals.
    p : float
        Two-sided bootstrap p, unadjusted, to 4 decimals.
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


def compare(mechanism: Sequence[float], baseline: Sequence[float], n_boot: int, seed: int) -> PairedDifference:
    """Means, paired mean difference, its bootstrap 95% interval, two-sided bootstrap p (unadjusted), and the
    per-question differences, as a :class:`PairedDifference`."""
    diff, lo, hi = paired_bootstrap(mechanism, baseline, n=n_boot, seed=seed)
    p = paired_bootstrap_p(mechanism, baseline, n=n_boot, seed=seed)
    diffs = (np.asarray(mechanism, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)).tolist()
    return PairedDifference(baseline=round(float(np.mean(baseline)), 4), mechanism=round(float(np.mean(mechanism)), 4),
                            diff=round(diff, 4), ci95=(round(lo, 4), round(hi, 4)), p=round(p, 4), diffs=tuple(diffs))


def interval_text(interval: Sequence[float]) -> str:
    """An interval of differences as tables show it: ``[-0.036, +0.071]``."""
    return f"[{interval[0]:+.3f}, {interval[1]:+.3f}]"


def no_question_changed(c: Mapping[str, Any]) -> bool:
    """A stored comparison (:meth:`PairedDifference.stored`, or a row with its ``diff`` and ``ci95``) whose
    metric moved on no question (e.g. hit@5 under a larger k): diff and interval are all 0."""
    return c["diff"] == 0 and c["ci95"][0] == 0 and c["ci95"][1] == 0


def effect_text(c: Mapping[str, Any], unchanged: str = "no change on any question") -> str:
    """"difference [95% interval]" of a stored comparison, or ``unchanged`` when it moved on no question."""
    return unchanged if no_question_changed(c) else f"{c['diff']:+.3f} {interval_text(c['ci95'])}"
