"""How far a piece's rank is from a cut (the Top-10), in the ranking's own scores.

A piece at rank 11 whose score is 0.00008 below the 10th chunk's is not "outside the Top-10" in any
sense a reader should rely on: the order of such near-ties can change with the floating-point
details of the embedding engine. The yardstick is the ranking's own spacing, so the rule holds for
cosines, fused RRF scores and reranker probabilities alike: a rank whose margin to the cut is smaller
than the median gap between neighbouring scores around the cut is a tie, neither in nor out.
"""

from __future__ import annotations

import numpy as np

from rag_lib.retrieval import Ranking

CUT = 10  # the Top-10: the casebook's green cells


def margin_to_cut(ranking: Ranking, rank: int | None, n: int = CUT) -> float | None:
    """How far a piece found at ``rank`` is from the Top-``n`` boundary, in the ranking's score: above it,
    its score minus the (n+1)-th's (what it may lose and stay in); below it, its score minus the n-th's
    (negative: what it must gain to get in). ``None`` for a piece not ranked or a ranking too short."""
    if rank is None or len(ranking) <= n:
        return None
    boundary = ranking.scores[n] if rank <= n else ranking.scores[n - 1]
    return round(ranking.scores[rank - 1] - boundary, 6)


def median_gap(ranking: Ranking, n: int = CUT) -> float | None:
    """The median score difference between neighbours among the first ``n + 1`` (the Top-``n`` and the next):
    the yardstick a margin to the Top-``n`` boundary is read against."""
    gaps = -np.diff(np.asarray(ranking.scores[: n + 1], dtype=np.float64))
    return round(float(np.median(gaps)), 6) if len(gaps) else None


def at_the_cut(ranking: Ranking, rank: int | None, n: int = CUT) -> bool:
    """Whether ``rank`` is decided by less than the ranking's median neighbour gap at the Top-``n`` cut (a tie)."""
    margin, gap = margin_to_cut(ranking, rank, n), median_gap(ranking, n)
    return margin is not None and gap is not None and abs(margin) < gap
