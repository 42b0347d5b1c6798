"""Evaluation: per-question retrieval metrics over gold pieces, layer diagnosis, paired bootstrap, Wilson, Holm,
answer correctness from key facts."""

from rag_lib.evaluation.correctness import CorrectnessResult, answer_correct, correctness_summary
from rag_lib.evaluation.key_facts import KeyFact, KeyFacts, load_key_facts
from rag_lib.evaluation.metrics import (
    MRR,
    Diagnosis,
    HitAt,
    Layer,
    Measure,
    NDCGAt,
    PieceCoverage,
    Pieces,
    RecallAt,
    default_measures,
    diagnose,
    evaluate,
    hit_name,
    piece_ranks,
)
from rag_lib.evaluation.stats import compare, effect_text, holm, paired_bootstrap, paired_bootstrap_p, wilson

__all__ = [
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
    "compare",
    "correctness_summary",
    "default_measures",
    "diagnose",
    "effect_text",
    "evaluate",
    "hit_name",
    "holm",
    "load_key_facts",
    "paired_bootstrap",
    "paired_bootstrap_p",
    "piece_ranks",
    "wilson",
]
