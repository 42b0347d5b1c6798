"""A deterministic baseline with no LLM: quote the evidence sentences that best match the question.

Each sentence of each chunk is scored by *coverage*: the share of the question's content terms
(jieba tokens, so Chinese works too; lower-cased; stopwords dropped) that the sentence contains.
The best sentences are quoted verbatim with citations. When even the best sentence covers less
than ``min_coverage`` of the question, it declines (status ``insufficient``) — a relevance floor,
not a claim that the answer does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_lib.core.documents import Chunk
from rag_lib.core.text import language_of, sentences
from rag_lib.generation.base import MAX_QUESTION_CHARS, GenerationResult, finish_answer, result_fields
from rag_lib.generation.schema import Answer, Citation
from rag_lib.generation.specs import backend_defaults
from rag_lib.retrieval.tokenize import content_terms


@dataclass(frozen=True)
class ScoredSentence:
    coverage: float
    rank: int  # rank of the chunk in the evidence (0-based)
    position: int  # sentence index inside the chunk
    chunk_id: str
    text: str


class ExtractiveGenerator:
    """Answers by quoting the best-matching evidence sentences; no model, fully deterministic.

    Parameters
    ----------
    max_sentences
        How many sentences to quote at most.
    min_coverage
        Decline when the best sentence covers less than this share of the question's terms.
    """

    backend = "extractive"

    def __init__(
        self,
        max_sentences: int | None = None,
        min_coverage: float | None = None,
        max_question_chars: int = MAX_QUESTION_CHARS,
    ) -> None:
        spec = backend_defaults("extractive")
        self.model = str(spec["model"])
        self._version = str(spec["version"])
        self.max_sentences = int(max_sentences if max_sentences is not None else spec["max_sentences"])
        self.min_coverage = float(min_coverage if min_coverage is not None else spec["min_coverage"])
        self.max_question_chars = max_question_chars

    @property
    def model_version(self) -> str:
        return f"{self._version}:max_sentences={self.max_sentences},min_coverage={self.min_coverage}"

    def score(self, question: str, evidence: Sequence[Chunk]) -> list[ScoredSentence]:
        """Every evidence sentence with its coverage, best first (ties: higher rank, earlier sentence)."""
        wanted = content_terms(question)
        scored = []
        for rank, chunk in enumerate(evidence):
            for position, sentence in enumerate(sentences(chunk.text)):
                coverage = len(wanted & content_terms(sentence)) / len(wanted) if wanted else 0.0
                scored.append(ScoredSentence(coverage, rank, position, chunk.id, sentence))
        return sorted(scored, key=lambda s: (-s.coverage, s.rank, s.position))

    def generate(self, question: str, evidence: Sequence[Chunk]) -> GenerationResult:
        """Quote the best sentences, or decline below the coverage floor."""
        base, refused = result_fields(self, question, evidence, self.max_question_chars)
        if refused:
            return refused
        chosen = [s for s in self.score(question, evidence) if s.coverage >= self.min_coverage]
        chosen = chosen[: self.max_sentences]
        if not chosen:
            answer = Answer(status="insufficient", answer=self._decline(question), missing=[question.strip()])
        else:
            ranks = {c.id: i + 1 for i, c in enumerate(evidence)}
            answer = Answer(
                status="answered",
                answer=" ".join(f"{s.text} [{ranks[s.chunk_id]}]" for s in chosen),
                citations=[Citation(chunk_id=s.chunk_id, quote=s.text) for s in chosen],
            )
        return finish_answer(base, answer, evidence)

    @staticmethod
    def _decline(question: str) -> str:
        if language_of(question) == "zh":
            return f"提供的证据中未包含回答该问题所需的信息：{question.strip()}"
        return f"The evidence provided does not include an answer to: {question.strip()}"
