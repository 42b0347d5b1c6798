"""``02_q5_success``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.results.answer_rows import (
    CheckedCitationRecord,
    DecisionRecord,
    GatedAnswerRecord,
    GeneratorInfo,
)
from rag_lib.results.gate_rows import GateParameters
from rag_lib.results.provenance import RetrieverProvenance
from rag_lib.results.retrieval_rows import TopRow
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class CasebookQ5:
    """The casebook's published Q5 figures (theirs: bge-m3 on their snapshot)."""

    sufficient: bool
    cited_ranks: list[int]
    wrangler_config_chunk_rank: int
    rank5_score: float


@dataclass(frozen=True)
class Q5Question:
    """The question as asked: benchmark id, language and text."""

    id: str
    lang: str
    text: str


@dataclass(frozen=True)
class PieceRank:
    """A gold piece of Q5 and the first rank of a chunk that provides it (``None``: none was ranked)."""

    piece: str
    what: str
    first_rank: int | None


@dataclass(frozen=True)
class LLMGatedAnswer(GatedAnswerRecord):
    """The local LLM's answer behind the same gate, with the generator that gave it."""

    generator: GeneratorInfo


@dataclass(frozen=True)
class WranglerRow:
    """A Wrangler-configuration "R2 buckets" chunk and its rank for Q5 in one language (casebook: 8)."""

    lang: str
    page: str
    chunk: str
    heading: str
    rank: int | None
    in_top_k: bool


@dataclass(frozen=True)
class WranglerRank:
    """In the question's language: the rank of the Workers reference's R2 chunk and of the Pages one."""

    workers: int | None
    pages: int | None


@dataclass(frozen=True)
class FaultRow:
    """One bad input or scripted backend fault: where it stopped and how it ended (``crashed``: it raised)."""

    case: str
    input: str
    stopped_at: str  # "input check", "gate", "generator" or "crashed"
    status: str
    error_kind: str
    generator_called: bool | None  # None: it crashed before anyone could tell
    message: str


@dataclass(frozen=True)
class KeyFacts:
    """How many of Q5's checkable key facts an answer states (``of`` and ``correct`` are ``None`` when it
    did not answer)."""

    answered: bool
    stated: int
    of: int | None
    correct: bool | None


@dataclass(frozen=True)
class KeyFactsByAnswerer:
    """:class:`KeyFacts` of the default generator's answer and of the local LLM's."""

    extractive: KeyFacts
    llm: KeyFacts


@dataclass(frozen=True)
class Q5Result(ExperimentResult):
    """``02_q5_success``: Q5 end to end (Top-k, gate decisions, the answer and its citations, faults).

    Returned by :func:`rag_lib.experiments.q5.run_q5`.
    """

    casebook: CasebookQ5
    question: Q5Question
    k: int
    retriever: str
    provenance: RetrieverProvenance
    generator: GeneratorInfo
    top: list[TopRow]
    pieces: list[PieceRank]
    gate_params: dict[str, GateParameters]  # gate name → its calibrated setting
    gate_used: str
    decisions: dict[str, DecisionRecord]  # gate name → its decision on Q5
    answer: GatedAnswerRecord
    citations: list[CheckedCitationRecord]
    citations_valid: int
    citations_total: int
    llm_answer: LLMGatedAnswer
    wrangler_r2: list[WranglerRow]
    wrangler_rank: WranglerRank
    faults: list[FaultRow]
    faults_crashed: int
    key_facts: KeyFactsByAnswerer


EXPERIMENT = Experiment(
    "02_q5_success", Q5Result,
    checked={
        "decisions.checklist.sufficient": 0,
        "citations_valid": 0,
        "wrangler_rank.workers": 2,
    },
)
