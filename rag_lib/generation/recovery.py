"""The recovery loop (casebook section 06): narrower questions, each run as a new ordinary query.

When a compound question's Top-k misses pieces, the system proposes 2–3 narrower questions; the
user picks one; it is retrieved again with the *same* retriever, nothing changed, and answered
from its own Top-k with checked citations. A :class:`Decomposer` proposes the questions:

``LLMDecomposer``
    One recorded call to an LLM that sees only the question and its current Top-k
    (:meth:`LLMGenerator.suggest_questions`); frozen after that call, no retry.
``RuleDecomposer`` (:mod:`rag_lib.generation.rule_decomposer`)
    No model: splits at clause punctuation and conjunctions and expands enumerations
    ("A、B 和 C", "A, B and C") into one question per item. A deterministic baseline.
``FixedSuggestions``
    Questions given in advance (e.g. the casebook's own S1–S3), replayed on our retriever.

Example
-------
>>> result = run_recovery(Workbench(), bench["q07"], "zh", RuleDecomposer(), k=5)  # doctest: +SKIP
>>> result.rows()                                                              # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from rag_lib.benchmark import Question
from rag_lib.core.documents import Chunk
from rag_lib.evaluation import piece_ranks
from rag_lib.generation import GenerationResult, Generator, LLMGenerator, get_generator
from rag_lib.generation.prompts import prompts
from rag_lib.retrieval import Ranking


@dataclass(frozen=True)
class Suggestions:
    """What a decomposer proposed: narrower questions and why, or a named failure.

    ``status`` is ``"ok"``; ``"no_split"`` when a rule found nothing to split; ``"copied_example"``
    when every suggestion an LLM gave copies the prompt's own example; or the LLM's error kind
    (``"schema_invalid"``, ``"non_json"``, ``"replay_miss"`` …) — a recorded outcome, never a crash.
    ``copied`` holds the suggestions dropped because they copy the prompt's example.
    """

    reason: str
    questions: tuple[str, ...]
    source: str
    call_keys: tuple[str, ...] = ()
    status: str = "ok"
    error: str | None = None
    raw_output: str | None = None
    copied: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "status": self.status, "reason": self.reason,
                "questions": list(self.questions), "copied": list(self.copied),
                "call_keys": list(self.call_keys), "error": self.error, "raw_output": self.raw_output}


@runtime_checkable
class Decomposer(Protocol):
    """Proposes narrower questions from the original question and its current evidence only."""

    name: str

    def suggest(self, question: str, evidence: Sequence[Chunk]) -> Suggestions: ...


class LLMDecomposer:
    """Suggestions from one LLM call (the casebook's rules live in the ``recovery`` prompt).

    Parameters
    ----------
    generator
        Any :class:`LLMGenerator`; its recorder makes the call replayable offline.
    """

    def __init__(self, generator: LLMGenerator) -> None:
        self.generator = generator
        self.name = f"llm:{generator.backend}/{generator.model}"

    def suggest(self, question: str, evidence: Sequence[Chunk]) -> Suggestions:
        outcome = self.generator.suggest_questions(question, evidence)
        value = outcome.value
        proposed = tuple(getattr(value, "suggestions", ()))
        # A small model may hand back the prompt's placeholder; that is no suggestion and is never run.
        copied = tuple(q for q in proposed if copies_prompt_example(q))
        kept = tuple(q for q in proposed if q not in copied)
        status, error = ("ok", None) if outcome.status == "ok" else (str(outcome.error_kind), outcome.error)
        if status == "ok" and copied and not kept:
            status, error = "copied_example", f"every suggestion copies the prompt's example: {list(copied)}"
        return Suggestions(
            reason=str(getattr(value, "reason", "")), questions=kept, source=self.name,
            call_keys=outcome.call_keys, status=status, error=error, raw_output=outcome.raw_output,
            copied=copied,
        )


def copies_prompt_example(question: str) -> bool:
    """Whether a suggestion is copied from the recovery prompt's own example ("narrower question 3").

    The trailing number is ignored, so a renumbered placeholder still counts as copied.
    """
    stem = re.sub(r"\s*\d+$", "", question.strip()).lower()
    return bool(stem) and stem in prompts()["recovery"]["system"].lower()


class FixedSuggestions:
    """Questions fixed in advance, returned whatever the evidence (a replay of someone else's)."""

    def __init__(self, questions: Sequence[str], reason: str = "", name: str = "fixed") -> None:
        self.questions = tuple(questions)
        self.reason = reason
        self.name = name

    def suggest(self, question: str, evidence: Sequence[Chunk]) -> Suggestions:
        return Suggestions(reason=self.reason, questions=self.questions, source=self.name)


# --------------------------------------------------------------------------- the loop
class RankingSource(Protocol):
    """What the loop needs from a :class:`~rag_lib.pipeline.workbench.Workbench`: ranking and chunk lookup."""

    @property
    def by_id(self) -> Mapping[str, Chunk]: ...

    def rank(self, text: str, key: Any = "dense") -> Ranking: ...


@dataclass(frozen=True)
class SuggestionRun:
    """One suggestion run as a new ordinary query: its piece ranks and its Top-k."""

    question: str
    ranks: tuple[int | None, ...]
    top_ids: tuple[str, ...]


@dataclass(frozen=True)
class RecoveryResult:
    """The whole loop for one question, language and decomposer."""

    question_id: str
    lang: str
    question: str
    retriever: str
    k: int
    piece_ids: tuple[str, ...]
    baseline_ranks: tuple[int | None, ...]
    baseline_top_ids: tuple[str, ...]
    suggestions: Suggestions
    runs: tuple[SuggestionRun, ...]
    chosen: int | None  # index into ``runs``; an oracle choice from the labels (see choose_suggestion)
    answer: GenerationResult | None = None
    choice_rule: str = field(default=(
        "oracle: the suggestion bringing the most pieces not in the original Top-k into its Top-k "
        "(tie: first); it uses the gold labels, standing in for the user's pick"))

    def covered(self, k: int, which: Literal["before", "chosen", "first", "union"]) -> int:
        """Pieces with rank <= ``k`` in the original ranking, plus one suggestion's or all of them.

        ``chosen``: the oracle's pick (labels used: an upper bound for one pick); ``first``: the
        first suggestion (no labels); ``union``: every suggestion pooled (several Top-k at once: an
        upper bound). The original's evidence stays in view after a suggestion is asked, so "after"
        counts are cumulative: before <= first <= chosen <= union.
        """
        rankings = [self.baseline_ranks]
        if which == "chosen" and self.chosen is not None:
            rankings.append(self.runs[self.chosen].ranks)
        elif which == "first" and self.runs:
            rankings.append(self.runs[0].ranks)
        elif which == "union":
            rankings.extend(run.ranks for run in self.runs)
        return self._count(k, rankings)

    def covered_random(self, k: int) -> float:
        """Expected pieces covered by the original plus one suggestion picked uniformly at random (no labels)."""
        if not self.runs:
            return float(self.covered(k, "before"))
        return sum(self._count(k, [self.baseline_ranks, run.ranks]) for run in self.runs) / len(self.runs)

    def _count(self, k: int, rankings: Sequence[Sequence[int | None]]) -> int:
        return sum(any(r[i] is not None and r[i] <= k for r in rankings) for i in range(len(self.piece_ids)))

    def rows(self) -> list[dict[str, Any]]:
        """One row per suggestion: its text and each piece's rank (the table of section 06)."""
        return [{"suggestion": run.question, **dict(zip(self.piece_ids, run.ranks, strict=True))}
                for run in self.runs]

    def to_json(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id, "lang": self.lang, "question": self.question,
            "retriever": self.retriever, "k": self.k,
            "baseline": dict(zip(self.piece_ids, self.baseline_ranks, strict=True)),
            "baseline_top_ids": list(self.baseline_top_ids),
            "suggestions": self.suggestions.to_json(), "ranks": self.rows(),
            "top_ids": [list(run.top_ids) for run in self.runs],
            "chosen": self.chosen, "chosen_question": None if self.chosen is None else self.runs[self.chosen].question,
            "choice_rule": self.choice_rule,
            "answer": None if self.answer is None else self.answer.to_json(),
        }


def choose_suggestion(baseline: Sequence[int | None], runs: Sequence[SuggestionRun], k: int) -> int | None:
    """Index of the run that brings the most pieces missing from the original Top-k into its own (tie: first)."""
    if not runs:
        return None
    missing = [i for i, r in enumerate(baseline) if r is None or r > k]
    gains = [sum(1 for i in missing if run.ranks[i] is not None and run.ranks[i] <= k) for run in runs]
    return gains.index(max(gains))  # index() returns the first of equal gains


def run_recovery(
    workbench: RankingSource,
    question: Question,
    lang: str,
    decomposer: Decomposer,
    k: int,
    retriever: str = "dense",
    generator: Generator | None = None,
) -> RecoveryResult:
    """Run the loop: original Top-k → suggestions (one call, frozen) → each retrieved anew → answer one.

    Parameters
    ----------
    workbench
        A :class:`~rag_lib.pipeline.workbench.Workbench` (or anything with ``rank`` and ``by_id``).
    question
        A benchmark question with resolved gold pieces.
    lang
        ``"zh"`` or ``"en"``.
    decomposer
        Proposes the narrower questions; it sees only the question text and its Top-k chunks.
    k
        Evidence size, for the decomposer, the choice and the answer (a workbench's ``config.k``).
    retriever
        Workbench retriever key; the same one ranks the original and every suggestion.
    generator
        Answers the chosen suggestion from its own Top-k (default :func:`get_generator`, the
        configured default — extractive offline); citations are checked by the generator.
    """
    text = question.text(lang)
    piece_ids = tuple(f"C{i + 1}" for i in range(len(question.pieces)))
    before = workbench.rank(text, retriever)
    evidence = [workbench.by_id[cid] for cid in before.ids[:k]]
    suggestions = decomposer.suggest(text, evidence)  # called once; the result is frozen from here on
    runs = []
    for suggestion in suggestions.questions:
        ranking = workbench.rank(suggestion, retriever)
        runs.append(SuggestionRun(suggestion, tuple(piece_ranks(question.pieces, ranking)), ranking.ids[:k]))
    baseline = tuple(piece_ranks(question.pieces, before))
    chosen = choose_suggestion(baseline, runs, k)
    answer = None
    if chosen is not None:
        generator = generator or get_generator()
        answer = generator.generate(runs[chosen].question, [workbench.by_id[c] for c in runs[chosen].top_ids])
    return RecoveryResult(
        question_id=question.id, lang=lang, question=text, retriever=retriever, k=k, piece_ids=piece_ids,
        baseline_ranks=baseline, baseline_top_ids=before.ids[:k], suggestions=suggestions, runs=tuple(runs),
        chosen=chosen, answer=answer,
    )


__all__ = [
    "Decomposer", "FixedSuggestions", "LLMDecomposer", "RecoveryResult", "SuggestionRun",
    "Suggestions", "choose_suggestion", "run_recovery",
]
