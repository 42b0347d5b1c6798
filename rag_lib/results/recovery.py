"""``07_recovery_loop``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class RecoveryExperimentResult(ExperimentResult):
    """``07_recovery_loop``: the recovery loop on Q7 and on the compound questions.

    Returned by :func:`rag_lib.experiments.recovery.run_recovery_experiment`.
    """

    k: int
    languages: list[str]
    retriever: str
    sources: dict[str, Any]
    unavailable: dict[str, Any]
    choice_rule: str
    count_rule: str
    count_meaning: dict[str, Any]
    compound_question_ids: list[str]
    q7_id: str
    q7: dict[str, Any]
    benchmark: dict[str, Any]
    benchmark_table: str
    per_question: dict[str, Any]
    casebook_published: dict[str, Any]
    provenance: dict[str, Any]
