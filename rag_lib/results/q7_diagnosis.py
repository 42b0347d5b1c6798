"""``05_q7_diagnosis``'s stored result: Q7's Top-10 and piece ranks per phrasing and language."""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.results.provenance import RetrieverProvenance
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class TopChunk:
    """One chunk of a ranking's top (05): its rank, cosine, page, heading path and the pieces it covers."""

    rank: int
    score: float
    page: str
    heading: str
    covers: str  # "C1,C3", or "-" when it covers none
    chunk_id: str


@dataclass(frozen=True)
class Q7Case:
    """Q7 in one phrasing and language (05): its Top-10 and where each piece first ranks."""

    question: str
    top10: list[TopChunk]
    piece_ranks: dict[str, int | None]  # piece → first rank (None: no chunk of it was ranked)
    piece_layers: dict[str, str]  # piece → rag_lib.evaluation.metrics.Layer
    top10_margins: dict[str, float | None]  # piece → cosine margin to the Top-10 cut (positive: inside)
    top10_median_gap: float | None  # median gap between neighbouring Top-10 scores
    coverage_at_k: str  # "1/4"
    coverage_top10: str
    layer: str
    worst_rank: int | None


@dataclass(frozen=True)
class CasebookQ7:
    """The casebook's published Q7 figures (theirs: bge-m3 on their snapshot)."""

    piece_ranks: dict[str, int]
    coverage_top10: str
    note: str


@dataclass(frozen=True)
class Q7DiagnosisResult(ExperimentResult):
    """``05_q7_diagnosis``: Q7's Top-10, each piece's first rank and layer, per phrasing.

    Returned by :func:`rag_lib.experiments.q7_diagnosis.run_q7_diagnosis`.
    """

    configuration: str
    provenance: RetrieverProvenance
    k: int
    languages: list[str]
    pieces: dict[str, str]  # piece id → what the piece is
    cases: dict[str, dict[str, Q7Case]]  # phrasing → language → case
    rank_rows: list[dict[str, str | int | None]]  # one row per phrasing and language: C1… first ranks, shares
    casebook: CasebookQ7


EXPERIMENT = Experiment(
    "05_q7_diagnosis", Q7DiagnosisResult,
)
