"""Recorded answers for the LLM judges the ecosystem uses: a Ragas ``EvaluationDataset`` (JSONL of
``SingleTurnSample`` fields) and a RAGChecker input (``{"results": [RAGResult…]}``).

An answer is exported as a reader saw it: only answers the workbook showed (status ``answered``); the
questions it declined or withheld are counted apart, never sent as if they were answers. Each sample
carries the Top-k chunks the answerer was given (``retrieved_contexts``), one gold chunk per piece
(``reference_contexts``) and a reference built from the benchmark's labels: the pieces' one-line
descriptions (English), or, for an unanswerable question, the sentence :data:`UNANSWERABLE_REFERENCE`.
These projects score with an LLM judge of their own; the workbook's verdicts are not in the export.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rag_lib.benchmark.questions import Question
from rag_lib.core.documents import Chunk
from rag_lib.results.answer_rows import AnsweredQuestion

UNANSWERABLE_REFERENCE = "The documentation does not answer this question."


@dataclass(frozen=True)
class AnswerSample:
    """One shown answer with what it was given and what it should have said."""

    query_id: str
    question: str
    response: str
    retrieved: tuple[Chunk, ...]
    reference: str
    reference_contexts: tuple[Chunk, ...]


@dataclass(frozen=True)
class AnswerExport:
    samples: list[AnswerSample]
    left_out: dict[str, int]  # status, with the error kind of a withheld answer → questions not exported

    def note(self) -> str:
        kept = f"{len(self.samples)} shown answers exported"
        if not self.left_out:
            return kept
        return kept + "; left out (not shown to a reader): " + ", ".join(
            f"{n} {status}" for status, n in sorted(self.left_out.items()))


def reference_of(question: Question) -> str:
    if not question.answerable:
        return UNANSWERABLE_REFERENCE
    return " ".join(f"{piece.what[:1].upper()}{piece.what[1:]}." for piece in question.gold)


def answer_samples(rows: Sequence[AnsweredQuestion], questions: Sequence[Question], lang: str,
                   evidence: Callable[[str], Sequence[Chunk]], chunk: Callable[[str], Chunk]) -> AnswerExport:
    """The shown answers of ``rows`` (one answerer's run in ``lang``) as samples; ``evidence(text)`` is the
    Top-k the answerer was given for a question text, ``chunk(id)`` a chunk of the batch."""
    by_id = {q.id: q for q in questions}
    samples: list[AnswerSample] = []
    left_out: Counter[str] = Counter()
    for row in rows:
        if row.status != "answered":
            left_out[f"{row.status} ({row.error_kind})" if row.error_kind else row.status] += 1
            continue
        q = by_id[row.question]
        gold = tuple(chunk(min(piece)) for piece in q.pieces if piece)
        samples.append(AnswerSample(q.id, q.text(lang), row.answer, tuple(evidence(q.text(lang))),
                                    reference_of(q), gold))
    return AnswerExport(samples, dict(left_out))


def ragas_rows(samples: Sequence[AnswerSample]) -> list[dict[str, Any]]:
    """Ragas ``SingleTurnSample`` fields, one dict per line of an ``EvaluationDataset.from_jsonl`` file."""
    return [{"user_input": s.question, "retrieved_contexts": [c.text for c in s.retrieved],
             "reference_contexts": [c.text for c in s.reference_contexts], "response": s.response,
             "reference": s.reference} for s in samples]


def ragchecker_input(samples: Sequence[AnswerSample]) -> dict[str, Any]:
    """RAGChecker's ``RAGResults`` input: ``{"results": [{query_id, query, gt_answer, response,
    retrieved_context: [{doc_id, text}]}]}``."""
    return {"results": [{"query_id": s.query_id, "query": s.question, "gt_answer": s.reference,
                         "response": s.response,
                         "retrieved_context": [{"doc_id": c.id, "text": c.text} for c in s.retrieved]}
                        for s in samples]}
