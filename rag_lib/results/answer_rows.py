"""Stored generation outcomes, shared by the runs that answer questions behind a gate (02, 03, 10).

Each mirrors the ``to_json`` of its counterpart in :mod:`rag_lib.generation` or
:mod:`rag_lib.evidence` (a gate decision, a generation result, a gated answer), so a run stores
``decode(GatedAnswerRecord, gated.to_json())`` and reads it back typed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GeneratorInfo:
    """Which generator ran: backend, model and its version (``None`` when the backend has none)."""

    backend: str
    model: str
    model_version: str | None


@dataclass(frozen=True)
class DecisionRecord:
    """A gate's verdict on one question's evidence (``GateDecision.to_json``)."""

    sufficient: bool
    gate: str
    reason: str
    missing: list[str]
    scores: dict[str, float | None]  # the numbers the decision rests on, by name ("floor.best_score")
    calls: list[str]  # keys of the recorded LLM calls the gate made


@dataclass(frozen=True)
class QuoteRecord:
    """A citation as the model gave it: a chunk id and the words quoted from it."""

    chunk_id: str
    quote: str


@dataclass(frozen=True)
class AnswerRecord:
    """The answer schema as the model filled it (``generation.schema.Answer``)."""

    status: str  # "answered" / "insufficient"
    answer: str
    citations: list[QuoteRecord]
    missing: list[str]


@dataclass(frozen=True)
class CheckedCitationRecord:
    """One citation after the check against the evidence sent (``reason`` is ``None`` for a valid one)."""

    chunk_id: str
    quote: str
    valid: bool
    reason: str | None
    deep_link: str | None
    page: str | None
    page_start: int | None
    page_end: int | None


@dataclass(frozen=True)
class CitationReportRecord:
    """Every citation of one answer, checked (``CitationReport.to_json``)."""

    n_valid: int
    n_total: int
    validity: float | None  # None: nothing cited
    dropped_by_reason: dict[str, int]
    citations: list[CheckedCitationRecord]


@dataclass(frozen=True)
class ClaimCheckRecord:
    """One claim of an answer and what the verification stage found wrong with it (``ClaimCheck.to_json``)."""

    claim: str
    problems: list[str]


@dataclass(frozen=True)
class SupportRecord:
    """What the verification stage decided about an answer (``rag_lib.verification.Verification.to_json``)."""

    supported: bool
    statements: list[str]
    unsupported: list[str]
    restates_question: bool
    claims: list[ClaimCheckRecord]
    shown: str | None
    language_problem: str | None
    unasked: str | None
    terms_named: list[str]  # the question's checkable terms the quotes the answer rests on name (AskedCheck)
    terms_unnamed: list[str]


@dataclass(frozen=True)
class GenerationRecord:
    """One generation's outcome: an answer, a decline or a named error (``GenerationResult.to_json``)."""

    status: str  # "answered" / "insufficient" / "error"
    question: str
    backend: str
    model: str
    model_version: str | None
    evidence_ids: list[str]
    answer: AnswerRecord | None
    citations: CitationReportRecord | None
    call_keys: list[str]
    replayed: bool
    latency_s: float
    cost_usd: float | None
    error_kind: str | None
    error: str | None
    raw_output: str | None
    warnings: list[str]
    support: SupportRecord | None


@dataclass(frozen=True)
class GatedAnswerRecord:
    """A generation behind a gate (``GatedResult.to_json``): the decision (``None`` when the question was
    refused before the gate), whether the generator was asked, and the result."""

    decision: DecisionRecord | None
    generator_called: bool
    result: GenerationRecord


@dataclass(frozen=True)
class AnsweredQuestion:
    """One benchmark question answered in one run (``question_sweeps.generation.run_generation_eval``'s rows):
    the gate's and the answer's outcome."""

    question: str
    answerable: bool
    label: str  # "sufficient" / "insufficient": the benchmark's label of the Top-k (every gold piece in it)
    gate: str | None  # the gate's decision, worded the same way; None: it could not decide (a judge call unrecorded)
    status: str  # answered / insufficient / error
    declined_by: str | None  # "gate" / "generator"; None when not declined
    error_kind: str | None
    citations_valid: int
    citations_total: int
    correct: bool | None  # states every checkable key fact; None: not judged
    answer: str
    # What the claim-level diagnosis reads (question_sweeps.generation.claim_fields); absent in older archives.
    stated: bool | None = None  # the model's whole reply states every key fact
    claims: int = 0  # claims of the reply
    claims_supported: int = 0  # … that their own quotes state
    claims_ungrounded: int = 0  # … with a number, name or URL no unit of the evidence states
    kind_unmet: bool = False  # what would be shown states no quantity of the kind the question asks for
    terms_named: int = 0  # the question's checkable terms that the quotes it rests on name …
    terms_asked: int = 0  # … of these (0: nothing left to show, or no term checkable)


@dataclass(frozen=True)
class GenerationEval:
    """Every benchmark question answered behind one gate, in one language (``run_generation_eval``)."""

    lang: str
    k: int
    retriever: str
    gate: str
    generator: GeneratorInfo
    n: int
    answered: int
    declined_by_gate: int
    declined_by_generator: int
    errors: int
    generator_calls: int
    citations_valid: int
    citations_total: int
    citation_validity: float | None
    unanswerable: int
    unanswerable_declined: int
    unanswerable_answered: int
    refusal_correctness: float | None
    answered_with_complete_evidence: int
    rows: list[AnsweredQuestion]
