"""``04_q8_topk``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class TopkResult(ExperimentResult):
    """``04_q8_topk``: the coverage curve over k, Q8's verdict, the late-complete questions.

    Returned by :func:`rag_lib.experiments.topk.run_topk`.
    """

    configuration: str
    provenance: dict[str, Any]
    languages: list[str]
    max_k: int
    n_answerable: int
    token_estimate: str
    q8: dict[str, Any]
    q8_table: str
    q8_testable: dict[str, bool]  # language → both pieces ranked
    q8_verdict: dict[str, str]  # language → the verdict sentence
    late_complete: dict[str, Any]
    late_complete_count: dict[str, int]  # language → questions
    late_complete_tables: dict[str, str]  # language → Markdown
    n_compound: int
    casebook_q8: dict[str, Any]
    curve: dict[str, Any]
    curve_rows: list[dict[str, Any]]
    curve_table: str
    plot: dict[str, Any]
