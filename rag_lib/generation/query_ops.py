"""Query operations before retrieval: split a compound question, rewrite it, fuse the parts' rankings.

Two kinds of operation, each one small class:

* :class:`RuleSplitter` - deterministic splitting at Chinese and English sentence punctuation and,
  optionally, at clause marks and the conjunctions 和/以及/and (casebook section 05,
  "splitting by sentence").
* :class:`QueryLLM` - rewriting (``rewrite``) or splitting (``split``) by a language model, through
  a generation backend's recorded call path (:class:`~rag_lib.generation.llm_calls.CallRecorder`), so a re-run
  replays the recorded replies offline. Prompts are data in ``generation/query_prompts.yaml``.

The parts of a split question are ranked separately and merged by :func:`fuse` (reciprocal rank
fusion or round-robin), giving one full :class:`~rag_lib.retrieval.Ranking` again.

>>> RuleSplitter().split("环境变量和 secret 怎么设置？本地开发有什么区别？")
['环境变量和 secret 怎么设置？', '本地开发有什么区别？']
>>> RuleSplitter(clauses=True).split("环境变量和 secret 怎么设置？本地开发有什么区别？")
['环境变量', 'secret 怎么设置？', '本地开发有什么区别？']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from rag_lib.core.text import question_sentences
from rag_lib.generation.base import LLMGenerator, question_problem
from rag_lib.generation.call_records import LLMRequest
from rag_lib.retrieval import Ranking
from rag_lib.retrieval.hybrid import rrf

QUERY_PROMPTS_YAML = Path(__file__).resolve().parent / "query_prompts.yaml"
TASKS = ("rewrite", "split")
FUSIONS = ("rrf", "round_robin")

# Clause marks and conjunctions, each a separator that is dropped: 、，, and 和/以及/and/as well as.
# Not 及 or 与 alone: they are also parts of words (及时, 参与).
_CLAUSE = re.compile(r"\s*,?\s+(?:and|as well as)\s+|\s*(?:[、，,]|以及|和)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class RuleSplitter:
    """Split a question at sentence punctuation, and optionally at clause marks and conjunctions.

    Parameters
    ----------
    clauses : bool
        Also split each sentence at 、，, and at 和/以及/and/as well as. A list such as
        "X、Y 和 Z 应该怎么设置" becomes "X", "Y", "Z 应该怎么设置": the shared predicate stays
        with the last item only (a rule does not know grammar; that is the point of the experiment).
    min_chars : int
        A part shorter than this (a stray character) is joined to the part before it.
    """

    clauses: bool = False
    min_chars: int = 2

    @property
    def name(self) -> str:
        return "rule-clauses" if self.clauses else "rule-sentences"

    def split(self, text: str) -> list[str]:
        """The parts of ``text`` in order; a text with no split point gives ``[text.strip()]``."""
        parts = question_sentences(text)
        if self.clauses:
            parts = [c.strip() for s in parts for c in _CLAUSE.split(s) if c.strip()]
        merged: list[str] = []
        for part in parts:
            if merged and len(part) < self.min_chars:
                merged[-1] = f"{merged[-1]} {part}"
            else:
                merged.append(part)
        return merged or [text.strip()]


def round_robin(rankings: Sequence[Ranking]) -> Ranking:
    """Interleave rankings: first of each, then second of each, …; a chunk keeps its first slot.

    Scores are ``1 / position`` in the merged list (only the order is meaningful).
    """
    if not rankings:
        raise ValueError("round_robin needs at least one ranking")
    seen: dict[str, None] = {}
    for depth in range(max(len(r) for r in rankings)):
        for ranking in rankings:
            if depth < len(ranking):
                seen.setdefault(ranking.ids[depth], None)
    ids = tuple(seen)
    source = f"round_robin({','.join(r.source for r in rankings)})"
    return Ranking(ids, tuple(1.0 / (i + 1) for i in range(len(ids))), source=source)


def fuse(rankings: Sequence[Ranking], method: str = "rrf", *, k: int) -> Ranking:
    """Merge the rankings of a question's parts into one full ranking.

    Parameters
    ----------
    rankings : sequence of Ranking
        One full ranking per part, over the same chunks. A single ranking is returned unchanged.
    method : {"rrf", "round_robin"}
        Reciprocal rank fusion (constant ``k``) or :func:`round_robin`.
    k : int
        The RRF constant (``retrieval.rrf_k`` of the run configuration); unused by ``round_robin``.
    """
    if method not in FUSIONS:
        raise ValueError(f"unknown fusion {method!r}; use one of {FUSIONS}")
    if len(rankings) == 1:
        return rankings[0]
    return rrf(rankings, k=k) if method == "rrf" else round_robin(rankings)


# --------------------------------------------------------------------------- LLM operations
class RewrittenQuery(BaseModel):
    """The ``rewrite`` task's reply."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)


class SplitQuestion(BaseModel):
    """The ``split`` task's reply."""

    model_config = ConfigDict(extra="forbid")

    questions: list[str] = Field(min_length=1, max_length=4)


_REPLY_MODELS: dict[str, type[BaseModel]] = {"rewrite": RewrittenQuery, "split": SplitQuestion}


def _json_schema(task: str, max_chars: int) -> dict[str, Any]:
    # Length caps make a grammar-constrained decoder close the JSON (as generation/schema.py does).
    text = {"type": "string", "minLength": 1, "maxLength": max_chars}
    if task == "rewrite":
        properties: dict[str, Any] = {"query": text}
    else:
        properties = {"questions": {"type": "array", "items": text, "minItems": 1, "maxItems": 4}}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


@cache
def query_prompts() -> dict[str, Any]:
    """The parsed ``query_prompts.yaml``."""
    with open(QUERY_PROMPTS_YAML, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def build_query_messages(task: str, question: str) -> list[dict[str, str]]:
    """System + user messages of ``task`` (``rewrite`` or ``split``)."""
    if task not in TASKS:
        raise ValueError(f"unknown query task {task!r}; use one of {TASKS}")
    spec = query_prompts()[task]
    return [{"role": "system", "content": spec["system"]},
            {"role": "user", "content": Template(spec["user"]).substitute(question=question.strip())}]


@dataclass(frozen=True)
class QueryOutcome:
    """One LLM query operation: the resulting queries, or a named error (then ``queries`` is empty)."""

    task: str
    question: str
    status: Literal["ok", "error"]
    queries: tuple[str, ...] = ()
    call_key: str | None = None
    replayed: bool = False
    raw_output: str | None = None
    error_kind: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task, "question": self.question, "status": self.status, "queries": list(self.queries),
                "call_key": self.call_key, "replayed": self.replayed, "raw_output": self.raw_output,
                "error_kind": self.error_kind, "error": self.error}


LLM_MAX_TOKENS = 96  # a query is short; a degenerate reply stops here (and fails as non_json, visibly)


class QueryLLM:
    """Rewrite or split questions with an LLM backend; every call is recorded and replayed.

    Parameters
    ----------
    generator : LLMGenerator
        A backend from :func:`rag_lib.generation.get_generator` (``llama_cpp`` or ``openai``); its
        request parameters (temperature, seed, JSON schema), recorder and live call are reused.
    max_chars : int
        Length cap of each returned query, written into the JSON schema.
    """

    def __init__(self, generator: LLMGenerator, max_chars: int = 300) -> None:
        if not isinstance(generator, LLMGenerator):
            raise TypeError(
                f"QueryLLM needs an LLM backend (llama_cpp or openai), got {type(generator).__name__}; "
                "pass get_task_generator('rewrite') (or 'split'), a model of generation.llm_tasks"
            )
        self.generator = generator
        self.max_chars = max_chars

    def describe(self) -> dict[str, Any]:
        """Backend, model and model version (recorded beside every result)."""
        g = self.generator
        return {"backend": g.backend, "model": g.model, "model_version": g.model_version,
                "prompts_version": query_prompts()["version"]}

    def request(self, task: str, question: str) -> LLMRequest:
        """The exact request ``task`` sends for ``question`` (its ``key`` names the record file)."""
        return self.generator.build_request(build_query_messages(task, question), _json_schema(task, self.max_chars))

    def run(self, task: str, question: str) -> QueryOutcome:
        """Run ``task`` on ``question``; failures come back as ``status="error"``, never raised."""
        problem = question_problem(question)
        if problem:
            return QueryOutcome(task, question, "error", error_kind=problem[0], error=problem[1])
        outcome = self.generator.run_request(task, self.request(task, question), _REPLY_MODELS[task])
        common = {"call_key": outcome.call_keys[0] if outcome.call_keys else None, "replayed": outcome.replayed,
                  "raw_output": outcome.raw_output}
        if outcome.status == "error":
            return QueryOutcome(task, question, "error", error_kind=outcome.error_kind, error=outcome.error, **common)
        parsed = outcome.value
        raw = [parsed.query] if isinstance(parsed, RewrittenQuery) else list(getattr(parsed, "questions", []))
        queries = [q.strip() for q in raw if q.strip()]
        if not queries:
            return QueryOutcome(task, question, "error", error_kind="schema_invalid",
                                error="The model returned only empty queries; see raw_output.", **common)
        return QueryOutcome(task, question, "ok", tuple(queries), **common)

    def rewrite(self, question: str) -> QueryOutcome:
        return self.run("rewrite", question)

    def split(self, question: str) -> QueryOutcome:
        return self.run("split", question)


__all__ = [
    "FUSIONS", "QueryLLM", "QueryOutcome", "RewrittenQuery", "RuleSplitter", "SplitQuestion",
    "build_query_messages", "fuse", "query_prompts", "round_robin",
]
