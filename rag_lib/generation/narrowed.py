"""An answer pipeline a small model can follow: narrowed evidence, ids to cite, quotes first.

The Top-k chunks (about 2,000 tokens) are narrowed to the sentences, list items and table rows most
relevant to the question (a selector from a higher layer: the default embedder and lexical overlap,
:mod:`rag_lib.evidence.narrowing`), within a stated token budget. Each kept unit gets an id (``S1``,
``S2`` …) and is shown inside ``<evidence>`` tags with the instruction that text there is data. The
model replies with JSON whose keys come in the order it writes them (llama.cpp writes keys in
alphabetical order): ``quotes`` (unit ids, an enum of the ids sent), then ``reply`` (in the
question's language, numbers and names copied verbatim), then ``status``. A quote is therefore a
whole unit, copied by the workbook, never retyped by the model; the verification stage
(:mod:`rag_lib.verification`) decides whether the reply is carried by the units the model cited, and
by those alone. A number or name the reply copies from a unit it did not cite stays unsupported: the
units that state it (:func:`attribute`) are only named in the result's warnings, a diagnostic counted
apart, never used as support.

``narrowed-claims-v4`` (``claims=True``) sends the same units and asks for the answer as claims, each with the
ids it rests on, in the evidence's language, and for a question in another language a reply in the asker's; the
verification stage checks each claim against its own units alone (:func:`rag_lib.verification.verify_claims`).

The sufficiency judge reads the same units and lists the question's parts, each with the id that
answers it or ``none``; its verdict is derived from the parts (every part supported), not from the
boolean the model writes last.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from string import Template
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rag_lib.core.documents import Chunk
from rag_lib.core.text import LANGUAGE_NAMES, language_name, language_of
from rag_lib.generation.base import GenerationResult, LLMGenerator, LLMOutcome, finish_answer, result_fields
from rag_lib.generation.prompts import prompts
from rag_lib.generation.schema import Answer, AnswerClaim, Citation, SufficiencyVerdict
from rag_lib.generation.support import chunk_units
from rag_lib.verification import repair_cut
from rag_lib.verification.statements import check_support, states

# v2: the workbook cites a unit sent that states what the reply states and its quotes do not.
# v3: a table row is shown under its table's header row (which column is which plan, unit, limit).
# The prompt is unchanged since v3; since issue 44 the workbook adds no citation (attribute() is a diagnostic).
PIPELINE = "narrowed-units-v3"
PIPELINE_WITHOUT_HEADERS = "narrowed-units-v2"
# v4 (issue 44): the answer as claims, each citing its own units (``answer_claims`` in prompts.yaml).
PIPELINE_CLAIMS = "narrowed-claims-v4"
MAX_REPLY_CHARS = 600  # the reply's maxLength in the schema
MAX_CLAIM_CHARS = 300  # one claim's maxLength
MAX_CLAIMS = 4
ReplyT = TypeVar("ReplyT", bound=BaseModel)
# What a declined answer written as claims says when the model wrote no reply (the question is in the
# evidence's language): the claims it did write are its partial answer.
DECLINE_TEXT = "The evidence provided does not include an answer to this question."


@dataclass(frozen=True)
class EvidenceUnit:
    """One sentence, list item or table row of an evidence chunk."""

    chunk_id: str
    rank: int  # the chunk's rank in the evidence (1-based)
    start: int  # offsets into the chunk's text
    end: int
    text: str
    header: str | None = None  # the header row of its table, for a table row (shown, never quoted)

    @property
    def id(self) -> str:
        """A stable id for caches: chunk id and offset."""
        return f"unit:{self.chunk_id}:{self.start}"

    @property
    def embed_input(self) -> str:
        return self.text

    embeddable = True


def split_units(evidence: Sequence[Chunk]) -> list[EvidenceUnit]:
    """Every unit of every chunk, in rank order then reading order."""
    return [EvidenceUnit(chunk.id, rank, offset, offset + len(text), text, header)
            for rank, chunk in enumerate(evidence, start=1) for offset, text, header in chunk_units(chunk.text)]


UnitSelector = Callable[[str, Sequence[Chunk]], list[EvidenceUnit]]


def attribute(reply: str, question: str, cited: Sequence[EvidenceUnit],
              sent: Sequence[EvidenceUnit]) -> list[EvidenceUnit]:
    """Units sent to the model that state what ``reply`` states and its cited units do not.

    A small model often copies a number or a name from one unit and cites another. For each such
    statement this finds the first unit sent (in id order) that states it. A diagnostic only (how often a
    reply rests on a unit it did not cite): the answer is verified against its own citations alone.
    """
    if not cited:
        return []
    report = check_support(reply, question, [u.text for u in cited])
    added: list[EvidenceUnit] = []
    for statement in report.unsupported:
        for unit in sent:
            if unit not in cited and unit not in added and states(statement, unit.text):
                added.append(unit)
                break
    return added


def _citations(quotes: Sequence[str], ids: Mapping[str, EvidenceUnit]) -> list[Citation]:
    """The units a reply's quote ids name, each once, then its ids that name none (kept so the citation check
    drops each as an unknown id)."""
    cited = [Citation(chunk_id=ids[q].chunk_id, quote=ids[q].text) for q in dict.fromkeys(quotes) if q in ids]
    return cited + [Citation(chunk_id=q, quote=q) for q in quotes if q not in ids]


def format_units(units: Sequence[EvidenceUnit], evidence: Sequence[Chunk],
                 table_headers: bool = True) -> tuple[str, dict[str, EvidenceUnit]]:
    """The ``<evidence>`` block and the id → unit map; units grouped by chunk in rank order.

    With ``table_headers``, a table row is preceded by its table's header row (once per table and
    source, without an id: it names columns, it states nothing a reply could cite).
    """
    spec = prompts()["evidence_units"]
    by_rank = {rank: chunk for rank, chunk in enumerate(evidence, start=1)}
    ordered = sorted(units, key=lambda u: (u.rank, u.start))
    lines, ids, current, header = [spec["open"]], {}, None, None
    for n, unit in enumerate(ordered, start=1):
        if unit.rank != current:
            chunk = by_rank[unit.rank]
            source = " > ".join((chunk.title, *chunk.heading_path))
            lines.append(Template(spec["source"]).substitute(rank=unit.rank, source=source))
            current, header = unit.rank, None
        if table_headers and unit.header and unit.header != header:
            lines.append(Template(spec["table_header"]).substitute(header=unit.header))
        header = unit.header
        unit_id = f"S{n}"
        ids[unit_id] = unit
        lines.append(Template(spec["unit"]).substitute(unit_id=unit_id, text=" ".join(unit.text.split())))
    lines.append(spec["close"])
    return "\n".join(lines), ids


class UnitAnswer(BaseModel):
    """The reply of ``answer_units``: cited unit ids, then the reply, then the status."""

    model_config = ConfigDict(extra="forbid")

    quotes: list[str] = Field(default_factory=list)
    reply: str
    status: Literal["answered", "insufficient"]


class ClaimItem(BaseModel):
    """One claim of ``answer_claims``: the unit ids it rests on, then its text."""

    model_config = ConfigDict(extra="forbid")

    quotes: list[str] = Field(default_factory=list)
    text: str


class ClaimsAnswer(BaseModel):
    """The reply of ``answer_claims``: claims, the reply in the asker's language (only when it is not the
    evidence's), then the status."""

    model_config = ConfigDict(extra="forbid")

    claims: list[ClaimItem] = Field(default_factory=list)
    reply: str | None = None
    status: Literal["answered", "insufficient"]


class UnitPart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    part: str
    support: str


class UnitVerdict(BaseModel):
    """The reply of ``sufficiency_units``."""

    model_config = ConfigDict(extra="forbid")

    parts: list[UnitPart] = Field(default_factory=list)
    sufficient: bool

    def derived(self, sent: Collection[str]) -> SufficiencyVerdict:
        """Sufficient when there is at least one part and every part names a unit that was ``sent``.

        An id that was not sent (``S98`` from an endpoint whose decoder the schema's enum does not bind)
        supports nothing: its part counts as missing.
        """
        missing = [p.part for p in self.parts if p.support.strip() not in sent]
        return SufficiencyVerdict(sufficient=bool(self.parts) and not missing, missing=missing)


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def answer_units_schema(unit_ids: Sequence[str], max_reply_chars: int = MAX_REPLY_CHARS,
                        max_quotes: int = 4) -> dict[str, Any]:
    """JSON schema of :class:`UnitAnswer`: ``quotes`` restricted to the ids sent."""
    quote = {"type": "string", "enum": list(unit_ids)} if unit_ids else {"type": "string"}
    return _object({
        # At least one id: a small model otherwise leaves "quotes" empty and answers from memory.
        "quotes": {"type": "array", "items": quote, "minItems": 1 if unit_ids else 0,
                   "maxItems": max_quotes if unit_ids else 0},
        "reply": {"type": "string", "maxLength": max_reply_chars},
        "status": {"type": "string", "enum": ["answered", "insufficient"]},
    })


# A claim's text in English evidence: no CJK ideograph, kana or full-width form, so a small model asked for
# Chinese cannot write its claims in Chinese (where its words could not be compared with its quotes); as raw
# JSON text: any character but a quote or a backslash, or an escaped quote or backslash.
_NOT_CJK = '[^"\\\\\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]'  # (\u escapes: the characters themselves)
LATIN_CLAIM_PATTERN = f'^({_NOT_CJK}|\\\\["\\\\]){{1,{MAX_CLAIM_CHARS}}}$'


def answer_claims_schema(unit_ids: Sequence[str], with_reply: bool, evidence_language: str = "en") -> dict[str, Any]:
    """JSON schema of :class:`ClaimsAnswer`: each claim's ``quotes`` restricted to the ids sent, its text in
    the evidence's language when that is English (:data:`LATIN_CLAIM_PATTERN`); ``reply`` only ``with_reply``
    (a question in another language than the evidence)."""
    quote = {"type": "string", "enum": list(unit_ids)} if unit_ids else {"type": "string"}
    text = ({"type": "string", "pattern": LATIN_CLAIM_PATTERN} if evidence_language == "en"
            else {"type": "string", "maxLength": MAX_CLAIM_CHARS})
    claim = _object({"quotes": {"type": "array", "items": quote, "minItems": 1 if unit_ids else 0, "maxItems": 2},
                     "text": text})
    return _object({
        "claims": {"type": "array", "items": claim, "minItems": 1, "maxItems": MAX_CLAIMS},
        **({"reply": {"type": "string", "maxLength": MAX_REPLY_CHARS}} if with_reply else {}),
        "status": {"type": "string", "enum": ["answered", "insufficient"]},
    })


def evidence_language(units: Sequence[EvidenceUnit]) -> str:
    """The language most units are written in (``"en"`` for no units): what claims are written in."""
    counts = Counter(language_of(u.text) for u in units)
    return counts.most_common(1)[0][0] if counts else "en"


def sufficiency_units_schema(unit_ids: Sequence[str], max_parts: int = 4, max_part_chars: int = 120) -> dict[str, Any]:
    """JSON schema of :class:`UnitVerdict`: each part's ``support`` is an id sent or ``none``."""
    part = _object({"part": {"type": "string", "maxLength": max_part_chars},
                    "support": {"type": "string", "enum": [*unit_ids, "none"]}})
    return _object({"parts": {"type": "array", "items": part, "minItems": 1, "maxItems": max_parts},
                    "sufficient": {"type": "boolean"}})


class NarrowedGenerator:
    """An LLM generator behind the narrowed-units pipeline.

    Parameters
    ----------
    llm
        The :class:`LLMGenerator` that makes (and records) the calls.
    select
        Narrows the Top-k chunks to units (see :mod:`rag_lib.evidence.narrowing`).
    describe_selector
        The selector's settings, for provenance.
    table_headers
        Show each table row under its table's header row (``narrowed-units-v3``); ``False`` is the
        ``v2`` layout, rows alone.
    claims
        Ask for the answer as claims, each citing its own units (``narrowed-claims-v4``), instead of one
        reply citing units for all of it.
    """

    def __init__(self, llm: LLMGenerator, select: UnitSelector,
                 describe_selector: dict[str, Any] | None = None, table_headers: bool = True,
                 claims: bool = False) -> None:
        if claims and not table_headers:
            raise ValueError("the claims pipeline shows table header rows; table_headers=False is narrowed-units-v2")
        self.llm, self.select, self.table_headers, self.claims = llm, select, table_headers, claims
        self.backend, self.model = llm.backend, llm.model
        self.pipeline = PIPELINE_CLAIMS if claims else PIPELINE if table_headers else PIPELINE_WITHOUT_HEADERS
        self.selector = describe_selector or {}

    @property
    def model_version(self) -> str | None:
        return self.llm.model_version

    @property
    def label(self) -> str:
        """``backend:model+pipeline``, how results name this answerer."""
        return f"{self.backend}:{self.model}+{self.pipeline}"

    def messages(self, task: str, question: str, units: Sequence[EvidenceUnit],
                 evidence: Sequence[Chunk]) -> tuple[list[dict[str, str]], dict[str, EvidenceUnit]]:
        block, ids = format_units(units, evidence, self.table_headers)
        spec = prompts()[task]
        names = {"language": language_name(question), "evidence_language": LANGUAGE_NAMES[evidence_language(units)]}
        system, languages = spec["system"], ""
        if task == "answer_claims":  # claims in the evidence's language; a reply only in another language
            across = names["language"] != names["evidence_language"]
            step = Template(spec["reply_step"]).substitute(names) if across else ""
            system = Template(system).substitute(names, reply_step=step)
            languages = Template(spec["languages_across" if across else "languages_same"]).substitute(names)
        user = Template(spec["user"]).substitute(names, evidence=block, question=question.strip(), languages=languages)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}], ids

    def generate(self, question: str, evidence: Sequence[Chunk]) -> GenerationResult:
        """Answer from the narrowed units; the citations are the cited units, checked as any other."""
        base, refused = result_fields(self, question, evidence, self.llm.max_question_chars)
        if refused:
            return refused
        units = self.select(question, evidence)
        if self.claims:
            return self._generate_claims(base, question, units, evidence)
        messages, ids = self.messages("answer_units", question, units, evidence)
        reply = self._ask(base, messages, answer_units_schema(list(ids)), UnitAnswer)
        if isinstance(reply, GenerationResult):
            return reply
        cited = [ids[q] for q in dict.fromkeys(reply.quotes) if q in ids]
        notes = []
        if reply.status == "answered":
            uncited = attribute(reply.reply, question, cited, list(ids.values()))
            if uncited:  # a diagnostic only: the workbook never adds support the model did not give
                names = ", ".join(unit_id for unit_id, unit in ids.items() if unit in uncited)
                notes.append(f"units the model did not cite state what its reply states and its quotes do not: "
                             f"{names} (not used as support)")
        answer = Answer(status=reply.status, answer=reply.reply, citations=_citations(reply.quotes, ids))
        return finish_answer(base, answer, evidence, notes, max_chars=MAX_REPLY_CHARS)

    def _generate_claims(self, base: dict[str, Any], question: str, units: Sequence[EvidenceUnit],
                         evidence: Sequence[Chunk]) -> GenerationResult:
        """``narrowed-claims-v4``: each claim carries its own quotes, and is checked against them alone."""
        messages, ids = self.messages("answer_claims", question, units, evidence)
        written = evidence_language(units)
        reply = self._ask(base, messages, answer_claims_schema(list(ids), language_of(question) != written, written),
                          ClaimsAnswer)
        if isinstance(reply, GenerationResult):
            return reply
        notes: list[str] = []
        claims = []
        for item in reply.claims:
            text, cut = repair_cut(item.text, MAX_CLAIM_CHARS)  # never shown cut: its unfinished sentence goes
            if cut:
                notes.append(f"a claim {cut.removeprefix('the reply ')}")
            if text.strip():
                claims.append(AnswerClaim(text=" ".join(text.split()), citations=_citations(item.quotes, ids)))
        texts = "\n".join(c.text for c in claims)
        if reply.reply is not None:
            shown, cut = repair_cut(reply.reply, MAX_REPLY_CHARS)
            if cut:
                notes.append(cut)
        else:
            shown = texts if reply.status == "answered" else DECLINE_TEXT
        citations = list({(c.chunk_id, c.quote): c for claim in claims for c in claim.citations}.values())
        answer = Answer(status=reply.status, answer=shown, citations=citations, claims=claims)
        return finish_answer(base, answer, evidence, notes)

    def _ask(self, base: dict[str, Any], messages: list[dict[str, str]], schema: dict[str, Any],
             reply_type: type[ReplyT]) -> ReplyT | GenerationResult:
        """One answer call: its parsed reply, or the error result (``base`` gets the call's provenance)."""
        outcome = self.llm.run_request("answer", self.llm.build_request(messages, schema), reply_type)
        base.update(call_keys=outcome.call_keys, replayed=outcome.replayed, latency_s=outcome.latency_s,
                    raw_output=outcome.raw_output, model_version=outcome.model_version)
        if outcome.status != "ok" or not isinstance(outcome.value, reply_type):
            return GenerationResult(status="error", error_kind=outcome.error_kind, error=outcome.error, **base)
        return outcome.value

    def judge_sufficiency(self, question: str, evidence: Sequence[Chunk]) -> LLMOutcome:
        """Part-by-part sufficiency over the narrowed units; the verdict is derived from the parts."""
        units = self.select(question, evidence)
        messages, ids = self.messages("sufficiency_units", question, units, evidence)
        outcome = self.llm.run_request("sufficiency", self.llm.build_request(
            messages, sufficiency_units_schema(list(ids))), UnitVerdict)
        if outcome.status == "ok" and isinstance(outcome.value, UnitVerdict):
            return LLMOutcome(**{**outcome.__dict__, "value": outcome.value.derived(set(ids))})
        return outcome

    def describe(self) -> dict[str, Any]:
        """The pipeline, the selector's settings and the model, for a result's provenance."""
        inner = (self.llm.describe() if hasattr(self.llm, "describe")
                 else {"backend": self.backend, "model": self.model})
        return {**inner, "pipeline": self.pipeline, "selector": self.selector}
