"""Generation behind an evidence-sufficiency gate: decline without calling the model.

Casebook section 03 (Q9a), normal path: "the evidence status is insufficient, and the system
declines without calling the model". :class:`GatedGenerator` asks a :class:`rag_lib.evidence.Gate`
first; only evidence the gate accepts reaches the wrapped generator. A gated decline is a
:class:`GenerationResult` with ``status="insufficient"``, ``backend="gate"`` and no call keys,
worded as the answer prompt requires ("The evidence provided does not include …").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_lib.core.documents import Chunk
from rag_lib.core.text import language_of
from rag_lib.evidence import Gate, GateDecision
from rag_lib.evidence.gates import FLOOR_MISSING
from rag_lib.generation.base import GenerationResult, Generator, question_problem
from rag_lib.generation.schema import Answer
from rag_lib.retrieval import Ranking

MAX_MISSING = 5  # the Answer schema's cap on "missing" items


@dataclass(frozen=True)
class GatedResult:
    """The gate's decision (``None`` when the question was refused before the gate) and the result."""

    decision: GateDecision | None
    result: GenerationResult
    generator_called: bool

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision.to_json() if self.decision else None,
                "generator_called": self.generator_called, "result": self.result.to_json()}


# The gates' own words for what is missing, in Chinese (an aspect gate's missing aspects are the question's words).
_ZH_MISSING = {FLOOR_MISSING: "相关度高于阈值的段落"}


def decline_text(question: str, missing: Sequence[str]) -> str:
    """The decline, in the question's language, naming what the evidence does not include."""
    if language_of(question) == "zh":
        what = "；".join(_ZH_MISSING.get(m, m) for m in missing) if missing else question.strip()
        return f"提供的证据中未包含回答该问题所需的信息（{what}）。"
    what = "; ".join(missing) if missing else question.strip()
    return f"The evidence provided does not include what this question needs ({what})."


class GatedGenerator:
    """Wraps a generator: the gate decides first, and a decline never calls the generator.

    Parameters
    ----------
    generator
        Any :class:`Generator` (extractive, llama_cpp, openai).
    gate
        Any :class:`rag_lib.evidence.Gate`.
    """

    def __init__(self, generator: Generator, gate: Gate) -> None:
        self.generator = generator
        self.gate = gate
        self.calls = 0  # how many times the wrapped generator was asked

    @property
    def backend(self) -> str:
        return self.generator.backend

    @property
    def model(self) -> str:
        return self.generator.model

    def generate(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GatedResult:
        """Gate, then (only if sufficient) generate."""
        ids = tuple(c.id for c in evidence)
        problem = question_problem(question)
        if problem:  # nothing to gate: the question itself cannot be used
            result = GenerationResult(status="error", question=question, backend="gate", model=self.gate.name,
                                      model_version=None, evidence_ids=ids, error_kind=problem[0], error=problem[1])
            return GatedResult(None, result, False)
        decision = self.gate.decide(question, evidence, ranking)
        if not decision.sufficient:
            missing = list(decision.missing[:MAX_MISSING])
            answer = Answer(status="insufficient", answer=decline_text(question, missing), missing=missing)
            result = GenerationResult(
                status="insufficient", question=question, backend="gate", model=decision.gate, model_version=None,
                evidence_ids=ids, answer=answer, call_keys=decision.calls,
                warnings=(f"declined by the {decision.gate} gate; the generator was not called: {decision.reason}",),
            )
            return GatedResult(decision, result, False)
        self.calls += 1
        return GatedResult(decision, self.generator.generate(question, evidence), True)
