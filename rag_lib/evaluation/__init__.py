"""Evaluation: per-question retrieval metrics over gold pieces, layer diagnosis, paired bootstrap, Wilson, Holm,
answer correctness from key facts."""

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
from rag_lib.evaluation.stats import holm, paired_bootstrap, paired_bootstrap_p, wilson

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
    "holm",
    "load_key_facts",
    "paired_bootstrap",
    "paired_bootstrap_p",
    "piece_ranks",
    "wilson",
]
