"""Plots, saved as byte-reproducible PNG files (no timestamps, fixed size and DPI).

The figures by family: :mod:`.metrics` (bars, curves, the forest of comparisons), :mod:`.ranks` (where pieces
rank), :mod:`.gates` (whether to answer: thresholds, ROC, score distributions, selective accuracy, calibration),
:mod:`.corpus` (chunk lengths, corpus size) and :mod:`.tradeoffs` (what a setting buys against what it costs);
their shared look and saving is :mod:`.style`. The notebooks call each figure through this package
(``figures.forest(...)``).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # before any figure module imports pyplot
from rag_lib.presentation.figures.corpus import chunk_length_histogram, size_curves, stacked_shares
from rag_lib.presentation.figures.gates import (
    accuracy_coverage,
    gate_roc,
    reliability,
    score_distributions,
    threshold_sweep,
    where_it_failed,
)
from rag_lib.presentation.figures.metrics import curves, forest, metric_bars
from rag_lib.presentation.figures.ranks import piece_ranks, piece_ranks_of, worst_rank_cdf
from rag_lib.presentation.figures.tradeoffs import recall_by_ef, strategy_tradeoff, tradeoff

__all__ = [
    "accuracy_coverage",
    "chunk_length_histogram",
    "curves",
    "forest",
    "gate_roc",
    "metric_bars",
    "piece_ranks",
    "piece_ranks_of",
    "recall_by_ef",
    "reliability",
    "score_distributions",
    "size_curves",
    "stacked_shares",
    "strategy_tradeoff",
    "threshold_sweep",
    "tradeoff",
    "where_it_failed",
    "worst_rank_cdf",
]
