"""The generation protocol, its result types, and the shared logic of the LLM backends.

Every way a generation can fail (empty or oversized question, backend timeout, a reply over the size
cap, non-JSON reply, JSON that fails the schema, an answer that cites nothing) becomes a visible
:class:`GenerationResult` with ``status="error"`` and an ``error_kind``; nothing is retried
silently and nothing crashes the caller.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from rag_lib.core.documents import Chunk
from rag_lib.core.text import as_prose, is_fragment, sentences
from rag_lib.generation.call_records import CallRecord, LLMRequest, LLMResponse
from rag_lib.generation.citations import CitationReport, check_citations, cited_units, evidence_units
from rag_lib.generation.llm_calls import CallRecorder, LLMCallError, ReplayMissError
from rag_lib.generation.prompts import build_messages, clip_text, decline_wording_problems, echoed_prompt
from rag_lib.generation.schema import (
    DEFAULT_LIMITS,
    Answer,
    RecoverySuggestions,
    SchemaLimits,
    SufficiencyVerdict,
    answer_json_schema,
    recovery_json_schema,
    sufficiency_json_schema,
)
from rag_lib.verification import Verification, repair_cut, verify, verify_claims

Status = Literal["answered", "insufficient", "error"]
ERROR_KINDS = (
    "empty_question", "question_too_long", "timeout", "rate_limited", "server_error", "backend_error",
    "connection_failed", "bad_reply", "evidence_too_large", "replay_miss", "model_unavailable", "truncated",
    "non_json", "schema_invalid", "no_citations", "no_valid_citations", "unsupported_claims", "restates_question",
    "echoes_prompt", "reply_too_large", "off_question", "fragment",
)
# Answers that are not shown: the model answered, but its text is not carried by verified quotes.
WITHHELD_KINDS = ("no_citations", "no_valid_citations", "unsupported_claims", "restates_question", "echoes_prompt",
                  "off_question", "fragment")
MAX_QUESTION_CHARS = 4000  # a longer "question" is refused, not truncated: truncation changes its meaning

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class GenerationResult:
    """The outcome of one generation: an answer, a decline, or a named error."""

    status: Status
    question: str
    backend: str
    model: str
    model_version: str | None
    evidence_ids: tuple[str, ...] = ()
    answer: Answer | None = None
    citations: CitationReport | None = None
    call_keys: tuple[str, ...] = ()
    replayed: bool = False
    latency_s: float = 0.0  # model time as recorded (the original latency when replayed)
    cost_usd: float | None = 0.0
    error_kind: str | None = None
    error: str | None = None
    raw_output: str | None = None
    warnings: tuple[str, ...] = ()
    support: Verification | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status, "question": self.question, "backend": self.backend, "model": self.model,
            "model_version": self.model_version, "evidence_ids": list(self.evidence_ids),
            "answer": self.answer.model_dump(exclude_none=True) if self.answer else None,
            "citations": self.citations.to_json() if self.citations else None,
            "call_keys": list(self.call_keys), "replayed": self.replayed, "latency_s": self.latency_s,
            "cost_usd": self.cost_usd, "error_kind": self.error_kind, "error": self.error,
            "raw_output": self.raw_output, "warnings": list(self.warnings),
            "support": self.support.to_json() if self.support else None,
        }


@dataclass(frozen=True)
class LLMOutcome:
    """The outcome of a recovery-loop or sufficiency-judge call: ``value`` or a named error."""

    task: str
    status: Literal["ok", "error"]
    backend: str
    model: str
    model_version: str | None
    value: BaseModel | None = None
    call_keys: tuple[str, ...] = ()
    replayed: bool = False
    latency_s: float = 0.0
    error_kind: str | None = None
    error: str | None = None
    raw_output: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task, "status": self.status, "backend": self.backend, "model": self.model,
            "model_version": self.model_version, "value": self.value.model_dump() if self.value else None,
            "call_keys": list(self.call_keys), "replayed": self.replayed, "latency_s": self.latency_s,
            "error_kind": self.error_kind, "error": self.error, "raw_output": self.raw_output,
        }


@runtime_checkable
class Generator(Protocol):
    """Answers a question from ranked evidence chunks."""

    backend: str
    model: str

    @property
    def model_version(self) -> str | None: ...

    def generate(self, question: str, evidence: Sequence[Chunk]) -> GenerationResult: ...


def question_problem(question: str, max_chars: int = MAX_QUESTION_CHARS) -> tuple[str, str] | None:
    """``(error_kind, message)`` when the question cannot be sent, else ``None``."""
    if not question or not question.strip():
        return "empty_question", "The question is empty or only whitespace; pass a non-empty question."
    if len(question) > max_chars:
        return "question_too_long", (
            f"The question has {len(question)} characters, over the limit of {max_chars}; it was refused, "
            "not truncated. Shorten it or raise max_question_chars."
        )
    return None


def result_fields(
    generator: Any, question: str, evidence: Sequence[Chunk], max_chars: int = MAX_QUESTION_CHARS
) -> tuple[dict[str, Any], GenerationResult | None]:
    """The fields every :class:`GenerationResult` of ``generator`` shares, and the error result when
    the question cannot be answered at all (empty, too long), else ``None``."""
    fields: dict[str, Any] = {"question": question, "backend": generator.backend, "model": generator.model,
                              "model_version": generator.model_version,
                              "evidence_ids": tuple(c.id for c in evidence)}
    problem = question_problem(question, max_chars)
    refused = GenerationResult(status="error", error_kind=problem[0], error=problem[1], **fields) if problem else None
    return fields, refused


def quotable_sentences(text: str, min_chars: int = 15) -> list[str]:
    """The sentences of ``text`` a constrained citation may quote.

    Left out: fragments under ``min_chars`` or without a letter (fences, list markers), and any
    sentence with a double quote or a backslash, which llama-cpp-python's schema-to-grammar
    converter mis-escapes (its grammar then fails to parse and the process aborts).
    """
    return [s for s in sentences(text)
            if len(s) >= min_chars and any(ch.isalpha() for ch in s) and '"' not in s and "\\" not in s]


def parse_json_object(text: str) -> Any:
    """Parse a model reply as JSON, tolerating a Markdown code fence around it.

    ``strict=False`` accepts raw control characters (a newline, a tab) inside strings: llama.cpp's
    JSON grammar allows them, so rejecting them would fail replies the constrained decoder produced.
    """
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return json.loads(stripped, strict=False)


def finish_answer(base: dict[str, Any], answer: Answer, evidence: Sequence[Chunk],
                  notes: Sequence[str] = (), max_chars: int | None = None) -> GenerationResult:
    """Check citations and wording of a parsed answer, hand it to the verification stage and build its
    result (``notes`` join its warnings; ``max_chars`` is the answer's length cap in the schema)."""
    report = check_citations(answer.citations, evidence)
    notes = list(notes)
    if report.dropped:
        reasons = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in report.dropped_by_reason.items() if n)
        notes.append(f"dropped {len(report.dropped)} invalid citation(s): {reasons}")
    if answer.status == "insufficient":
        notes.extend(decline_wording_problems(answer.answer))
        return GenerationResult(status="insufficient", answer=answer, citations=report,
                                warnings=tuple(notes), **base)
    if not answer.citations:
        return GenerationResult(status="error", error_kind="no_citations", answer=answer, citations=report,
                                error="The answer cites nothing, so it cannot be checked against the evidence.",
                                warnings=tuple(notes), **base)
    if not report.valid:
        return GenerationResult(status="error", error_kind="no_valid_citations", answer=answer,
                                citations=report, warnings=tuple(notes),
                                error="Every citation failed the check (unknown id, or quote not in the chunk).",
                                **base)
    # Never shown cut: a reply whose string ended early (or filled its cap) loses its unfinished last sentence.
    # (an answer written as claims was repaired claim by claim where it was parsed)
    repaired, cut = (answer.answer, None) if answer.claims is not None else repair_cut(answer.answer, max_chars)
    if cut:
        notes.append(cut)
        if not repaired.strip():
            return GenerationResult(status="error", error_kind="truncated", answer=answer, citations=report,
                                    warnings=tuple(notes), error=f"The answer is not shown: {cut}.", **base)
        answer = answer.model_copy(update={"answer": repaired})
    echoed = echoed_prompt(answer.answer)
    if echoed:
        return GenerationResult(status="error", error_kind="echoes_prompt", answer=answer, citations=report,
                                warnings=tuple(notes), error=f"The answer is not shown: it repeats {echoed} "
                                "instead of answering from the evidence.", **base)
    if answer.claims is None:
        support = verify(base["question"], answer.answer, cited_units(report.valid, evidence), evidence_units(evidence))
    else:  # each claim against its own valid quotes
        valid = {(c.chunk_id, c.quote) for c in report.valid}
        own = [(claim.text, cited_units([c for c in claim.citations if (c.chunk_id, c.quote) in valid], evidence))
               for claim in answer.claims]
        support = verify_claims(base["question"], answer.answer, own, evidence_units(evidence))
    if not support.supported:
        kind = ("off_question" if support.unasked else
                "restates_question" if support.restates_question and not support.dropped else "unsupported_claims")
        return GenerationResult(status="error", error_kind=kind, answer=answer, citations=report,
                                warnings=tuple(notes), support=support,
                                error=f"The answer is not shown: {support.problem}.", **base)
    if support.dropped:  # the reader sees the claims that passed; the model's whole text stays in raw_output
        notes.append(f"{len(support.dropped)} of {len(support.claims)} claim(s) not shown: {support.problem}")
    if support.reply_problem:
        notes.append(support.reply_problem)
    # What is shown is prose: links as their text, no markup, a table row as its cells (commands stay verbatim).
    shown = as_prose(support.shown)
    if is_fragment(shown):
        return GenerationResult(status="error", error_kind="fragment", answer=answer, citations=report,
                                warnings=tuple(notes), support=support,
                                error="The answer is not shown: it is a fragment (it ends in a colon, or is only "
                                      "citation marks), not a statement.", **base)
    if shown != answer.answer:
        answer = answer.model_copy(update={"answer": shown})
    if support.language_problem:
        notes.append(support.language_problem)
    return GenerationResult(status="answered", answer=answer, citations=report, warnings=tuple(notes),
                            support=support, **base)


class LLMGenerator:
    """Shared logic of the LLM backends: prompt, recorded call, parsing, citation check.

    Subclasses set ``backend`` and ``model`` and implement :meth:`_params` (request parameters)
    and :meth:`_complete` (one live call). Every call goes through the :class:`CallRecorder`.
    """

    backend: ClassVar[str] = "llm"

    def __init__(
        self,
        model: str,
        recorder: CallRecorder | None = None,
        limits: SchemaLimits = DEFAULT_LIMITS,
        max_question_chars: int = MAX_QUESTION_CHARS,
        max_chunk_chars: int | None = None,
        constrain_quotes: bool = False,
    ) -> None:
        self.model = model
        self.recorder = recorder if recorder is not None else CallRecorder()
        self.limits = limits
        self.max_question_chars = max_question_chars
        self.max_chunk_chars = max_chunk_chars  # each evidence chunk cut to this in the prompt (None: whole)
        self.constrain_quotes = constrain_quotes  # quotes drawn from the cited chunk's sentences (schema)

    @property
    def model_version(self) -> str | None:
        return None

    # -- to implement -------------------------------------------------------------------------
    def _params(self, json_schema: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _complete(self, request: LLMRequest) -> LLMResponse:
        raise NotImplementedError

    # -- public API ---------------------------------------------------------------------------
    def request(self, task: str, question: str, evidence: Sequence[Chunk]) -> LLMRequest:
        """The exact request that ``task`` would send (useful to look up its record)."""
        quotes = ({c.id: quotable_sentences(clip_text(c.text, self.max_chunk_chars).removesuffix(" …"))
                   for c in evidence} if self.constrain_quotes else None)
        schemas = {
            "answer": lambda: answer_json_schema([c.id for c in evidence], self.limits, quotes),
            "recovery": lambda: recovery_json_schema(self.limits),
            "sufficiency": lambda: sufficiency_json_schema(self.limits),
        }
        return self.build_request(build_messages(task, question, evidence, self.max_chunk_chars), schemas[task]())

    def build_request(self, messages: Sequence[Mapping[str, str]], json_schema: dict[str, Any]) -> LLMRequest:
        """A request for any task: chat ``messages`` and the JSON schema the reply must follow."""
        return LLMRequest(backend=self.backend, model=self.model, model_version=self.model_version,
                          messages=tuple(messages), params=self._params(json_schema))

    def run_request(self, task: str, request: LLMRequest, reply_model: type[M]) -> LLMOutcome:
        """Send ``request`` through the recorder and parse the reply into ``reply_model``.

        Failures (transport, replay miss, non-JSON, schema) come back as ``status="error"``.
        """
        base: dict[str, Any] = {"task": task, "backend": self.backend, "model": self.model,
                                "model_version": self.model_version}
        record, failure = self._recorded_call(request)
        if record is None:
            return LLMOutcome(status="error", error_kind=failure[0], error=failure[1], **base)
        base.update(call_keys=(record.key,), replayed=record.replayed, latency_s=record.latency_s,
                    raw_output=record.response.content, model_version=self._version_of(record))
        parsed = self._parse(record.response, reply_model)
        if isinstance(parsed, tuple):
            return LLMOutcome(status="error", error_kind=parsed[0], error=parsed[1], **base)
        return LLMOutcome(status="ok", value=parsed, **base)

    def generate(self, question: str, evidence: Sequence[Chunk]) -> GenerationResult:
        """Answer ``question`` from ``evidence`` (rank order), with checked citations."""
        base, refused = result_fields(self, question, evidence, self.max_question_chars)
        if refused:
            return refused
        record, failure = self._recorded_call(self.request("answer", question, evidence))
        if record is None:
            return GenerationResult(status="error", error_kind=failure[0], error=failure[1], **base)
        base.update(call_keys=(record.key,), replayed=record.replayed, latency_s=record.latency_s,
                    cost_usd=record.cost_usd, raw_output=record.response.content,
                    model_version=self._version_of(record))
        parsed = self._parse(record.response, Answer)
        if isinstance(parsed, tuple):
            return GenerationResult(status="error", error_kind=parsed[0], error=parsed[1], **base)
        return finish_answer(base, parsed, evidence, max_chars=self.limits.max_answer_chars)

    def suggest_questions(self, question: str, evidence: Sequence[Chunk]) -> LLMOutcome:
        """Recovery loop: 2–3 narrower questions from the question and its current Top-k only."""
        return self._structured("recovery", question, evidence, RecoverySuggestions)

    def judge_sufficiency(self, question: str, evidence: Sequence[Chunk]) -> LLMOutcome:
        """Ask the model whether ``evidence`` is sufficient to answer ``question``.

        The verdict is sufficient only when the model also lists nothing as missing: a small model
        writes ``"sufficient": true`` beside parts it has just named as missing (issue 44).
        """
        outcome = self._structured("sufficiency", question, evidence, SufficiencyVerdict)
        verdict = outcome.value
        if isinstance(verdict, SufficiencyVerdict) and verdict.sufficient and verdict.missing:
            return LLMOutcome(**{**outcome.__dict__, "value": verdict.model_copy(update={"sufficient": False})})
        return outcome

    # -- internals ----------------------------------------------------------------------------
    def _structured(self, task: str, question: str, evidence: Sequence[Chunk], model: type[M]) -> LLMOutcome:
        base: dict[str, Any] = {"task": task, "backend": self.backend, "model": self.model,
                                "model_version": self.model_version}
        problem = question_problem(question, self.max_question_chars)
        if problem:
            return LLMOutcome(status="error", error_kind=problem[0], error=problem[1], **base)
        return self.run_request(task, self.request(task, question, evidence), model)

    def _version_of(self, record: CallRecord) -> str | None:
        # A hosted model has no file to hash: the model id the server answered with is its version.
        return self.model_version or record.response.model_version or record.response.served_model

    def _recorded_call(self, request: LLMRequest) -> tuple[CallRecord | None, tuple[str, str]]:
        try:
            return self.recorder.call(request, self._complete), ("", "")
        except LLMCallError as exc:
            return None, (exc.kind, str(exc))
        except ReplayMissError as exc:
            return None, ("replay_miss", str(exc))

    @staticmethod
    def _parse(response: LLMResponse, model: type[M]) -> M | tuple[str, str]:
        if response.finish_reason == "length":  # the reply hit max_tokens: its JSON is cut, never half-parsed
            return "truncated", (f"The reply stopped at the token limit ({response.completion_tokens} tokens) "
                                 "before its JSON closed; raise max_tokens or lower the schema's length caps.")
        try:
            data = parse_json_object(response.content)
        except ValueError as exc:
            return "non_json", f"The model's reply is not JSON ({exc}); see raw_output."
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            summary = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors())
            return "schema_invalid", f"The model's JSON does not match the {model.__name__} schema: {summary}"


__all__ = [
    "ERROR_KINDS",
    "WITHHELD_KINDS",
    "GenerationResult",
    "Generator",
    "LLMGenerator",
    "LLMOutcome",
    "finish_answer",
    "parse_json_object",
    "question_problem",
]
