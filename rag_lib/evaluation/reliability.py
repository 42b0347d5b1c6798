"""Reliability of predicted probabilities: does "70% likely right" come true 70% of the time?

Out-of-sample probabilities (for example the selective-answering model's, :mod:`.selective`) are put in
equal-width bins over [0, 1]; each bin's observed rate of ``y = 1`` is shown against its mean predicted
probability, with a Wilson interval, and the expected calibration error (ECE) sums the gaps weighted by
each bin's share of the rows. With tens of rows per language the intervals are wide: a bin of 3 says little.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_lib.evaluation.stats import wilson


def reliability_bins(scored: Sequence[Mapping[str, Any]], bins: int = 5) -> list[dict[str, Any]]:
    """One row per non-empty bin of ``scored`` (rows with ``proba`` in [0, 1] and ``y`` in {0, 1}).

    Bin ``i`` holds ``i / bins <= proba < (i + 1) / bins`` (the last bin also holds 1.0). Each row gives
    ``lo``, ``hi``, ``n``, ``mean_proba``, ``observed`` (share of ``y = 1``) and its Wilson ``ci95``.
    """
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    members: list[list[Mapping[str, Any]]] = [[] for _ in range(bins)]
    for row in scored:
        p = float(row["proba"])
        if not 0.0 <= p <= 1.0 or row["y"] not in (0, 1):
            raise ValueError(f"a scored row needs 0 <= proba <= 1 and y in {{0, 1}}; got {dict(row)}")
        members[min(int(p * bins), bins - 1)].append(row)
    out = []
    for i, rows in enumerate(members):
        if not rows:
            continue
        hits = sum(int(r["y"]) for r in rows)
        out.append({"lo": i / bins, "hi": (i + 1) / bins, "n": len(rows),
                    "mean_proba": sum(float(r["proba"]) for r in rows) / len(rows),
                    "observed": hits / len(rows), "ci95": list(wilson(hits, len(rows)) or (0.0, 1.0))})
    return out


def expected_calibration_error(bins: Sequence[Mapping[str, Any]]) -> float:
    """Σ (n_bin / n) · |observed − mean_proba| over the bins of :func:`reliability_bins`."""
    total = sum(b["n"] for b in bins)
    if total == 0:
        raise ValueError("no rows: the calibration error is undefined")
    return sum(b["n"] / total * abs(b["observed"] - b["mean_proba"]) for b in bins)
