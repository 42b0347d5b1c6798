"""``00_corpus``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class CorpusResult(ExperimentResult):
    """``00_corpus``: the default batch's figures (:func:`rag_lib.corpus.corpus_stats`), every batch side by side
    and the benchmark's labels checked on each.

    Built by :func:`rag_lib.experiments.corpus.corpus_result`.
    """

    batch: str
    pages: int
    partials: int
    raw_chars: int
    normalized_chars: int
    chunks: int
    embeddable_chunks: int
    heading_only_chunks: int
    median_chars: float
    max_chars: int
    max_chars_limit: int
    oversized: list[dict[str, Any]]
    chunks_per_page: dict[str, Any]
    removals_by_kind: dict[str, Any]
    removed_chars: int
    warnings: dict[str, Any]
    n_warnings: int
    unknown_components: list[str]
    dropped_expressions: int
    n_oversized: int
    n_removals: int
    casebook: dict[str, Any]
    batches: dict[str, Any]
    labels: dict[str, Any]
