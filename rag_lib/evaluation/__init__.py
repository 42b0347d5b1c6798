"""Evaluation: per-question retrieval metrics over gold pieces, layer diagnosis, paired bootstrap, Wilson, Holm."""

from rag_lib.evaluation.metrics import (
    DEFAULT_MEASURES,
    MRR,
    Diagnosis,
    HitAt,
    Layer,
    Measure,
    NDCGAt,
    PieceCoverage,
    Pieces,
    RecallAt,
    diagnose,
    evaluate,
    piece_ranks,
)
from rag_lib.evaluation.stats import holm, paired_bootstrap, paired_bootstrap_p, wilson

__all__ = [
    "DEFAULT_MEASURES",
    "MRR",
    "Diagnosis",
    "HitAt",
    "Layer",
    "Measure",
    "NDCGAt",
    "PieceCoverage",
    "Pieces",
    "RecallAt",
    "diagnose",
    "evaluate",
    "holm",
    "paired_bootstrap",
    "paired_bootstrap_p",
    "piece_ranks",
    "wilson",
]
