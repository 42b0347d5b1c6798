"""``00_corpus``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class OversizedChunk:
    """A chunk over the size limit: one block (table, code, details) kept whole."""

    id: str
    chars: int
    kinds: list[str]  # the block kinds it holds
    heading: str  # its heading path, "A > B"


@dataclass(frozen=True)
class KvMentions:
    """Where the casebook's corpus mentions Workers KV."""

    chunks: int
    pages: int


@dataclass(frozen=True)
class CasebookCorpus:
    """The casebook's published corpus figures (theirs: 26 pages of their snapshot)."""

    pages: int
    chunks: int
    embeddable_chunks: int
    median_chars: float
    oversized: int
    max_chars: int
    max_chars_limit: int
    oversized_note: str
    kv_mentions: KvMentions


@dataclass(frozen=True)
class BatchSummary:
    """One batch's figures side by side with the others (:func:`rag_lib.corpus.batch_summary`)."""

    pages: int
    partials: int
    raw_chars: int
    normalized_chars: int
    chunks: int
    embeddable_chunks: int
    heading_only_chunks: int
    median_chars: float
    max_chars: int
    removed_chars: int
    n_warnings: int
    unknown_components: list[str]
    dropped_expressions: int
    oversized: int  # chunks over the limit
    removals: int  # logged removals


@dataclass(frozen=True)
class UnresolvedLocator:
    """A gold locator that matches no chunk of a batch."""

    question: str
    piece: str
    locator: int  # its number among the piece's locators, from 1
    where: str


@dataclass(frozen=True)
class AbsentHitCount:
    """An unanswerable question's ``absent`` string found in a batch: how many chunks, on which pages."""

    question: str
    term: str
    chunks: int
    pages: list[str]


@dataclass(frozen=True)
class BatchLabelStatus:
    """The benchmark's labels checked on one batch (:func:`rag_lib.benchmark.batch_labels.label_status`)."""

    batch: str
    questions: int
    locators: int
    n_unresolved: int
    unresolved_locators: list[UnresolvedLocator]
    absent_failed: list[str]  # questions whose absent check fails in this batch
    absent_hits: list[AbsentHitCount]
    extra_locators: int  # gold locators on pages only this batch has
    answered_here: list[str]  # reviewed: the batch answers them
    still_unanswerable: list[str]  # reviewed: still unanswerable here
    unreviewed: list[str]


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
    oversized: list[OversizedChunk]
    chunks_per_page: dict[str, int]  # page slug → chunks
    removals_by_kind: dict[str, int]  # removal kind → logged removals
    removed_chars: int
    warnings: dict[str, list[str]]  # page slug → the normaliser's warnings (pages without any left out)
    n_warnings: int
    unknown_components: list[str]
    dropped_expressions: int
    n_oversized: int
    n_removals: int
    casebook: CasebookCorpus
    batches: dict[str, BatchSummary]  # batch → its figures
    labels: dict[str, BatchLabelStatus]  # batch → the labels checked on it


EXPERIMENT = Experiment(
    "00_corpus", CorpusResult,
    checked={
        "pages": 0,
        "chunks": 0,
        "embeddable_chunks": 0,
        "median_chars": 0,
        "max_chars": 0,
        "n_oversized": 0,
        "labels.cloudflare-docs-wide-2026-11-30.extra_locators": 0,
        "batches.cloudflare-docs-wide-2026-11-30.chunks": 0,
    },
)
