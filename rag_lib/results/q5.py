"""``02_q5_success``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class Q5Result(ExperimentResult):
    """``02_q5_success``: Q5 end to end (Top-k, gate decisions, the answer and its citations, faults).

    Returned by :func:`rag_lib.experiments.q5.run_q5`.
    """

    casebook: dict[str, Any]
    question: dict[str, Any]
    k: int
    retriever: str
    provenance: dict[str, Any]
    generator: dict[str, Any]
    top: list[dict[str, Any]]
    top_table: str
    pieces: list[dict[str, Any]]
    gate_params: dict[str, Any]
    gate_used: str
    decisions: dict[str, Any]
    answer: dict[str, Any]
    citations: list[dict[str, Any]]
    citations_valid: int
    citations_total: int
    llm_answer: dict[str, Any]
    wrangler_r2: list[dict[str, Any]]
    wrangler_table: str
    wrangler_rank: dict[str, Any]
    faults: list[dict[str, Any]]
    faults_table: str
    faults_crashed: int
    key_facts: dict[str, Any]
