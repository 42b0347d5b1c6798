"""``12_corpus_size``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class CorpusSizeResult(ExperimentResult):
    """``12_corpus_size``: retrieval as the corpus grows (nested sizes, seeded page orders).

    Returned by :func:`rag_lib.experiments.corpus_size.run_corpus_size`.
    """

    languages: list[str]
    sizes: list[int]
    seeds: list[int]
    batch: str
    base_batch: str
    n_answerable: int
    labels: dict[str, Any]
    size_rows: list[dict[str, Any]]
    label_rows: list[dict[str, Any]]
    curve: list[dict[str, Any]]
    change_rows: list[dict[str, Any]]
    by_size: dict[str, Any]
    runs: list[dict[str, Any]]
    q7_runs: list[dict[str, Any]]
    q7_rows: list[dict[str, Any]]
    slot_rows: list[dict[str, Any]]
    top_distractors: list[dict[str, Any]]
    q7_first: list[dict[str, Any]]
    gate: dict[str, Any]
    tables: dict[str, Any]
    provenance: dict[str, Any]
