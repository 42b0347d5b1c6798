"""``W1_diagnosis``: where retrieval fails on any workbook's corpus and questions (the casebook's Q7 diagnosis,
generalised to every question): each configuration ranks every question in each language, and each answerable
question's gold pieces are located in the ranking. Stored long (:mod:`rag_lib.results.workbook`)."""

from __future__ import annotations

import json
import math

from rag_lib.core.config import shown_path
from rag_lib.evaluation.blind_labels import blind_agreement
from rag_lib.evaluation.metrics import HitAt, NDCGAt, PieceCoverage, piece_ranks
from rag_lib.pipeline.workbook import OpenWorkbook
from rag_lib.results.workbook import (
    CorpusProfile,
    Measurement,
    PieceRanks,
    QuestionsProfile,
    WorkbookDiagnosisResult,
)


def _parser_warnings(opened: OpenWorkbook) -> dict[str, int]:
    from rag_lib.core.config import batch_dir

    report = batch_dir(opened.workbook.batch) / "import_report.json"
    return json.loads(report.read_text(encoding="utf-8"))["warnings_by_check"] if report.is_file() else {}


def _model(opened: OpenWorkbook, configuration: str) -> str:
    embedder = opened.workbench.provenance(configuration).get("embedder")
    return "" if not embedder else f"{embedder['model']} ({embedder['backend']}, {embedder['version']})"


def run_diagnosis(opened: OpenWorkbook) -> WorkbookDiagnosisResult:
    wb, workbook = opened.workbench, opened.workbook
    questions = wb.benchmark.questions()
    answerable = [q for q in questions if q.answerable]
    measures = (HitAt(workbook.k), PieceCoverage(workbook.k), PieceCoverage(10), NDCGAt(10))
    labels = [wb.resolve(c).label for c in workbook.configurations]
    ranks: list[PieceRanks] = []
    measurements: list[Measurement] = []
    for label in labels:
        for lang in workbook.languages:
            rankings = wb.run(label, answerable, lang)
            table = wb.evaluate(rankings, measures)
            for q in answerable:
                ranks.append(PieceRanks(label, lang, q.id, piece_ranks(q.pieces, rankings[q.id])))
                measurements += [Measurement(label, lang, q.id, m.name, float(table.loc[q.id, m.name]))
                                 for m in measures if not math.isnan(table.loc[q.id, m.name])]
    pages = {c.page for c in wb.chunks}
    corpus = CorpusProfile(workbook.batch, workbook.source or "committed snapshot",
                           workbook.licence or "see its README", len(pages), len(wb.chunks), len(wb.embeddable),
                           _parser_warnings(opened))
    source = (shown_path(workbook.questions) if workbook.questions
              else "data/benchmark/questions.yaml (the labelled benchmark)")
    coarse = sorted(opened.questions.document_level) if opened.questions else []
    review = workbook.folder / "blind_review"
    blind = blind_agreement(wb.benchmark, review) if opened.questions and (review / "reader_b.yaml").is_file() else None
    return WorkbookDiagnosisResult(
        workbook.name, workbook.title, workbook.k, list(workbook.languages), labels, corpus,
        QuestionsProfile(source, len(questions), len(answerable), coarse), ranks, measurements,
        {label: _model(opened, label) for label in labels}, blind)
