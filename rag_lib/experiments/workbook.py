"""``W1_diagnosis``: where retrieval fails on any workbook's corpus and questions (the casebook's Q7 diagnosis,
generalised to every question): each configuration ranks every question in each language, and each answerable
question's gold pieces are located in the ranking. Stored long (:mod:`rag_lib.results.workbook`)."""

from __future__ import annotations

import math
from collections import Counter

from rag_lib.core.config import shown_path
from rag_lib.corpus.importer import import_report, page_warnings
from rag_lib.evaluation.blind_labels import blind_agreement
from rag_lib.evaluation.metrics import HitAt, NDCGAt, PieceCoverage, piece_ranks
from rag_lib.pipeline.workbook import OpenWorkbook
from rag_lib.results.workbook import (
    CorpusProfile,
    Measurement,
    PageSlots,
    PieceRanks,
    QuestionsProfile,
    WorkbookDiagnosisResult,
)

CROWDING = 5  # pages kept per configuration and language, those filling the most Top-k slots


def run_diagnosis(opened: OpenWorkbook) -> WorkbookDiagnosisResult:
    wb, workbook = opened.workbench, opened.workbook
    questions = wb.benchmark.questions()
    answerable = [q for q in questions if q.answerable]
    measures = (HitAt(workbook.k), PieceCoverage(workbook.k), PieceCoverage(10), NDCGAt(10))
    labels = [wb.resolve(c).label for c in workbook.configurations]
    ranks: list[PieceRanks] = []
    measurements: list[Measurement] = []
    crowding: list[PageSlots] = []
    warned = page_warnings(workbook.batch)
    for label in labels:
        for lang in workbook.languages:
            rankings = wb.run(label, answerable, lang)
            slots = Counter(wb.by_id[cid].page for r in rankings.values() for cid in r.ids[:workbook.k])
            crowding += [PageSlots(label, lang, page, n, workbook.k * len(answerable), warned.get(page, []))
                         for page, n in slots.most_common(CROWDING)]
            table = wb.evaluate(rankings, measures)
            for q in answerable:
                ranks.append(PieceRanks(label, lang, q.id, piece_ranks(q.pieces, rankings[q.id])))
                measurements += [Measurement(label, lang, q.id, m.name, float(table.loc[q.id, m.name]))
                                 for m in measures if not math.isnan(table.loc[q.id, m.name])]
    pages = {c.page for c in wb.chunks}
    corpus = CorpusProfile(workbook.batch, workbook.source or "committed snapshot",
                           workbook.licence or "see its README", len(pages), len(wb.chunks), len(wb.embeddable),
                           import_report(workbook.batch).get("warnings_by_check", {}))
    source = (shown_path(workbook.questions) if workbook.questions
              else "data/benchmark/questions.yaml (the labelled benchmark)")
    coarse = sorted(opened.questions.document_level) if opened.questions else []
    review = workbook.folder / "blind_review"
    blind = blind_agreement(wb.benchmark, review) if opened.questions and (review / "reader_b.yaml").is_file() else None
    return WorkbookDiagnosisResult(
        workbook.name, workbook.title, workbook.k, list(workbook.languages), labels, corpus,
        QuestionsProfile(source, len(questions), len(answerable), coarse), ranks, measurements, crowding,
        {label: opened.model(label) for label in labels}, blind)
