"""BEIR's layout: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv``, for one language's questions.

BEIR, ir_datasets, ranx and pytrec_eval judge documents. The workbook's gold is a locator (page, heading,
phrase), resolved to the chunks of the chunking in use, so the qrels are compiled for that chunking: a
document is an embeddable chunk (what retrieval ranks), relevant (1) to a question when it is a gold chunk of
any of its pieces. Another chunking needs another export; the locators survive it, chunk-id qrels do not.
Unanswerable questions are in ``queries.jsonl`` without qrels (tools that score only judged queries skip them,
as the workbook's own measures do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_lib.benchmark.questions import Question
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import WorkbookError
from rag_lib.core.io import write_jsonl, write_text
from rag_lib.evaluation.your_questions import QRELS_HEADER


@dataclass(frozen=True)
class BeirFiles:
    corpus: Path
    queries: Path
    qrels: Path


def corpus_rows(chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """One document per embeddable chunk: its id, page title, text and where it sits."""
    return [{"_id": c.id, "title": c.title, "text": c.text,
             "metadata": {"page": c.page, "heading_path": list(c.heading_path), "url": c.url}}
            for c in chunks if c.embeddable]


def query_rows(questions: Sequence[Question], lang: str) -> list[dict[str, Any]]:
    return [{"_id": q.id, "text": q.text(lang),
             "metadata": {"language": lang, "answerable": q.answerable, "compound": q.compound,
                          "pieces": [p.what for p in q.gold]}}
            for q in questions]


def qrels_rows(questions: Sequence[Question], documents: set[str]) -> list[tuple[str, str, int]]:
    """``(query, chunk, 1)`` for every gold chunk of every piece that is a document of the export."""
    return [(q.id, cid, 1) for q in questions for cid in sorted(q.gold_chunks) if cid in documents]


def write_beir(folder: Path, chunks: Sequence[Chunk], questions: Sequence[Question], lang: str) -> BeirFiles:
    """Write the three files (each atomically) under ``folder``.

    Raises
    ------
    WorkbookError
        When a question's gold has not been resolved to chunks (load the benchmark with its chunks).
    """
    unresolved = [q.id for q in questions if q.answerable and q.resolved is None]
    if unresolved:
        raise WorkbookError(f"questions {unresolved[:5]} have no gold resolved to chunks; load the benchmark "
                            "with the batch's chunks (a Workbench does) before exporting qrels")
    corpus = corpus_rows(chunks)
    files = BeirFiles(folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / "test.tsv")
    write_jsonl(files.corpus, corpus)
    write_jsonl(files.queries, query_rows(questions, lang))
    rows = qrels_rows(questions, {row["_id"] for row in corpus})
    write_text(files.qrels, "\n".join([QRELS_HEADER, *(f"{q}\t{c}\t{s}" for q, c, s in rows)]) + "\n")
    return files
