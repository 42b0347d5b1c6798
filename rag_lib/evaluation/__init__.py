"""Evaluation: retrieval metrics over gold pieces, layer diagnosis, paired bootstrap, answer correctness."""

from rag_lib.evaluation.correctness import (
    CorrectnessResult,
    KeyFact,
    KeyFacts,
    answer_correct,
    correctness_summary,
    load_key_facts,
)
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
    "CorrectnessResult",
    "Diagnosis",
    "HitAt",
    "KeyFact",
    "KeyFacts",
    "Layer",
    "Measure",
    "NDCGAt",
    "PieceCoverage",
    "Pieces",
    "RecallAt",
    "answer_correct",
    "correctness_summary",
    "diagnose",
    "evaluate",
    "load_key_facts",
    "paired_bootstrap",
    "piece_ranks",
]
