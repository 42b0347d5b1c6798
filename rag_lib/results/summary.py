"""``08_summary``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class SummaryResult(ExperimentResult):
    """``08_summary``: the casebook side by side, what helps, the headline, from the stored runs.

    Returned by :func:`rag_lib.experiments.summary.run_summary`.
    """

    local_llm: dict[str, Any] | None  # None when 10_local_llm has not run
    local_llm_text: str
    languages: list[str]
    missing_inputs: list[str]  # declared runs without results
    missing_text: str
    side_by_side: dict[str, Any]
    side_by_side_tables: dict[str, str]  # language → Markdown
    evidence_k: dict[str, Any]
    benchmark_rows: list[dict[str, Any]]
    benchmark_table: str
    comparisons: list[dict[str, Any]]  # every mechanism comparison with its judgement (rag_lib.evaluation.claims)
    q7_every_phrasing: dict[str, Any]  # Q7's mechanism rows of every phrasing that put all pieces in the Top-10
    multiplicity: dict[str, Any]
    what_helps: list[dict[str, Any]]
    what_helps_table: str
    relabel: dict[str, Any]
    halo_rows: list[dict[str, Any]]
    halo_table: str
    casebook_rows: list[dict[str, Any]]
    casebook_table: str
    headline_table: str
    headline_findings: list[dict[str, str]]  # the README's five findings (rag_lib.experiments.headline)
