"""Evaluation: per-question retrieval metrics over gold pieces, layer diagnosis, paired bootstrap."""

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
from rag_lib.evaluation.stats import paired_bootstrap

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
    "paired_bootstrap",
    "piece_ranks",
]
