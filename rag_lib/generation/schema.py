"""The JSON the models must return, as pydantic models, and the JSON schemas sent to constrain them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Citation(BaseModel):
    """One cited chunk and the words quoted from it."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    quote: str


class AnswerClaim(BaseModel):
    """One claim of an answer written as claims, with the quotes it rests on (its own, not the answer's)."""

    model_config = ConfigDict(extra="forbid")

    text: str
    citations: list[Citation] = Field(default_factory=list)


class Answer(BaseModel):
    """A grounded answer, or a decline naming what the evidence does not include.

    ``claims``: set when the model wrote its answer as claims, each citing its own quotes (the
    narrowed-claims pipeline); each is then checked against its own quotes only, and ``answer`` is the
    text the asker reads (in the asker's language).
    """

    model_config = ConfigDict(extra="forbid")

    status: Literal["answered", "insufficient"]
    answer: str
    citations: list[Citation] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    claims: list[AnswerClaim] | None = None


class RecoverySuggestions(BaseModel):
    """Recovery loop (casebook section 06): 2–3 narrower questions, no answer."""

    model_config = ConfigDict(extra="forbid")

    reason: str
    suggestions: list[str] = Field(min_length=2, max_length=3)


class SufficiencyVerdict(BaseModel):
    """LLM sufficiency judge (Joren et al., ICLR 2025): is the evidence enough to answer?"""

    model_config = ConfigDict(extra="forbid")

    sufficient: bool
    missing: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class SchemaLimits:
    """Length caps written into the JSON schema so a constrained decoder always closes the JSON."""

    max_answer_chars: int = 2000
    max_quote_chars: int = 400
    max_citations: int = 8
    max_missing: int = 5
    max_item_chars: int = 300  # one "missing" aspect, one suggestion, the recovery reason


    def clipped(self, max_string: int) -> SchemaLimits:
        """These limits with every string cap at most ``max_string`` (a backend's grammar limit)."""
        return replace(self, max_answer_chars=min(self.max_answer_chars, max_string),
                       max_quote_chars=min(self.max_quote_chars, max_string),
                       max_item_chars=min(self.max_item_chars, max_string))


DEFAULT_LIMITS = SchemaLimits()


def _string(max_chars: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_chars}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def answer_json_schema(chunk_ids: Sequence[str], limits: SchemaLimits = DEFAULT_LIMITS,
                       quotes: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
    """JSON schema of :class:`Answer`, with ``chunk_id`` restricted to the ids actually sent.

    The enum makes a fabricated id impossible for grammar-constrained backends; the citation
    check still verifies every id, because not every backend honours a schema. With ``quotes``
    (chunk id → its sentences, as sent), each citation is one of the evidence chunks paired with
    one of *its own* sentences: a small model then cannot paraphrase or translate a quote, or put
    one chunk's words under another's id. What it quotes still has to support its answer, which
    the citation check cannot tell (answer correctness is judged separately).
    """
    citation = _object({"chunk_id": {"type": "string", "enum": list(chunk_ids)},
                        "quote": _string(limits.max_quote_chars)})
    if not chunk_ids:  # an empty enum is not valid JSON schema; no evidence means no citations
        citation["properties"]["chunk_id"] = {"type": "string"}
    elif quotes:
        citation = {"anyOf": [
            _object({"chunk_id": {"const": cid},
                     "quote": {"type": "string", "enum": list(dict.fromkeys(
                         q[: limits.max_quote_chars] for q in quotes[cid]))}})
            for cid in chunk_ids if quotes.get(cid)
        ]}
    return _object({
        "status": {"type": "string", "enum": ["answered", "insufficient"]},
        "answer": _string(limits.max_answer_chars),
        "citations": {"type": "array", "items": citation, "maxItems": limits.max_citations},
        "missing": {"type": "array", "items": _string(limits.max_item_chars), "maxItems": limits.max_missing},
    })


def recovery_json_schema(limits: SchemaLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """JSON schema of :class:`RecoverySuggestions`."""
    return _object({
        "reason": _string(limits.max_item_chars),
        "suggestions": {"type": "array", "items": _string(limits.max_item_chars), "minItems": 2, "maxItems": 3},
    })


def sufficiency_json_schema(limits: SchemaLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """JSON schema of :class:`SufficiencyVerdict`."""
    return _object({
        "sufficient": {"type": "boolean"},
        "missing": {"type": "array", "items": _string(limits.max_item_chars), "maxItems": limits.max_missing},
    })
