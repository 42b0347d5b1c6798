"""Paired comparison of a mechanism against the baseline over the same questions."""

from __future__ import annotations

from collections.abc import Sequence

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
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n, len(diff)))].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(diff.mean()), float(lo), float(hi)
