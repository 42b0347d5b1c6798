"""``13_ann``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class AnnResult(ExperimentResult):
    """``13_ann``: HNSW recall and metric cost against exact search, per setting and batch.

    Returned by :func:`rag_lib.experiments.ann.run_ann`.
    """

    languages: list[str]
    settings: list[dict[str, Any]]
    batches: list[str]
    rows: list[dict[str, Any]]
    comparison_rows: list[dict[str, Any]]
    q7_rows: list[dict[str, Any]]
    by_setting: dict[str, Any]
    tables: dict[str, Any]
    provenance: dict[str, Any]
