"""The recovery loop (casebook section 06): narrower questions, each run as a new ordinary query.

When a compound question's Top-k misses pieces, the system proposes 2–3 narrower questions; the
user picks one; it is retrieved again with the *same* retriever, nothing changed, and answered
from its own Top-k with checked citations. A :class:`Decomposer` proposes the questions:

``LLMDecomposer``
    One recorded call to an LLM that sees only the question and its current Top-k
    (:meth:`LLMGenerator.suggest_questions`); frozen after that call, no retry.
``RuleDecomposer``
    No model: splits at clause punctuation and conjunctions and expands enumerations
    ("A、B 和 C", "A, B and C") into one question per item. A deterministic baseline.
``FixedSuggestions``
    Questions given in advance (e.g. the casebook's own S1–S3), replayed on our retriever.

Example
-------
>>> result = run_recovery(Workbench(), bench["q07"], "zh", RuleDecomposer())   # doctest: +SKIP
>>> result.rows()                                                              # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from rag_lib.benchmark import Question
from rag_lib.config import TOP_K
from rag_lib.documents import Chunk
from rag_lib.evaluation import piece_ranks
from rag_lib.generation import GenerationResult, Generator, LLMGenerator, get_generator
from rag_lib.generation.prompts import prompts
from rag_lib.retrieval import Ranking
from rag_lib.text import CJK_CHAR, question_sentences


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


# --------------------------------------------------------------------------- rule-based baseline
# A comma followed by a clause-level conjunction starts a new clause; a comma inside a list does not.
_CLAUSE_COMMA = re.compile(r"\s*[,，]\s*(?=(?:and|or|并且|并|而且|以及|又|还)\b|(?:并且|并|而且|以及|又|还))",
                           re.IGNORECASE)
_LEADING_CONJ = re.compile(r"^(?:and|or|并且|并|而且|以及|又|还)\s*", re.IGNORECASE)
_EN_STEM = re.compile(r"^(?:how|what|which|where|when|why)(?:\s+(?:do|does|should|can|is|are|i|we|you))*\b",
                      re.IGNORECASE)
_EN_QWORD = re.compile(r"^(?:how|what|which|where|when|why|who|can|do|does|is|are|should)\b", re.IGNORECASE)
_ZH_QWORD = ("怎么", "怎样", "如何", "为什么", "什么", "哪些", "哪", "多少", "是否")
_ZH_STEM = re.compile(r"^(怎么|怎样|如何)")
# Where an enumeration's first/last item stops: function words, question words, "each"/"分别".
_EN_BOUNDARY = frozenset({
    "how", "what", "which", "where", "when", "why", "do", "does", "should", "can", "is", "are", "be", "i",
    "we", "you", "the", "a", "an", "to", "for", "in", "on", "with", "of", "each", "both", "set", "work",
})
_ZH_BOUNDARY = re.compile(r"应该|分别|怎么|怎样|如何|是否|需要|可以|能|要|是|有|的|在|各")
_ZH_LAST_CONJ = re.compile(r"\s*(?:以及|和|与|及)\s*")


class RuleDecomposer:
    """A deterministic, model-free baseline: split clauses, then expand enumerations into aspects.

    1. Clauses: split after ``？ ? 。 ！ ! ； ;`` and at a comma followed by a conjunction
       (``, and`` / ``，并`` …); a clause left without a question word borrows the first clause's
       question stem ("How do I", "怎么").
    2. Aspects: a clause with an enumeration of three or more items (``A、B 和 C``, ``A, B and C``)
       becomes one question per item, with "each"/"分别" dropped.
    3. At most ``max_questions`` are kept, in order (the casebook's rule allows 2–3). A question that
       yields fewer than two is reported as ``status="no_split"`` with no suggestions.
    """

    name = "rule"

    def __init__(self, max_questions: int = 3) -> None:
        self.max_questions = max_questions

    def suggest(self, question: str, evidence: Sequence[Chunk]) -> Suggestions:
        out: list[str] = []
        for clause in self.clauses(question):
            for item in self.aspects(clause):
                if item not in out:
                    out.append(item)
        if len(out) < 2:
            return Suggestions(reason="no clause boundary or enumeration found", questions=(), source=self.name,
                               status="no_split")
        kept = tuple(out[: self.max_questions])
        dropped = len(out) - len(kept)
        reason = f"{len(out)} clause/aspect question(s)" + (f"; the last {dropped} dropped" if dropped else "")
        return Suggestions(reason=reason, questions=kept, source=self.name)

    @staticmethod
    def clauses(question: str) -> list[str]:
        """The question's clauses, each ending in a question mark and able to stand alone."""
        parts = [p for s in question_sentences(question) for p in _CLAUSE_COMMA.split(s)]
        parts = [_LEADING_CONJ.sub("", p.strip()).strip() for p in parts]
        parts = [p for p in parts if p.strip("？?。！!；;，, ")]
        if not parts:
            return []
        en_stem = _EN_STEM.match(parts[0])
        zh_stem = _ZH_STEM.match(parts[0])
        out = []
        for part in parts:
            cjk = bool(CJK_CHAR.search(part))
            if cjk and zh_stem and not any(w in part for w in _ZH_QWORD):
                part = zh_stem.group(0) + part
            elif not cjk and en_stem and not _EN_QWORD.match(part):
                part = f"{en_stem.group(0)} {part}"
            part = part.rstrip("。！!；;，, ")
            if not part.endswith(("？", "?")):
                part += "？" if cjk else "?"
            out.append(part if cjk else part[0].upper() + part[1:])
        return out

    @staticmethod
    def aspects(clause: str) -> list[str]:
        """One question per item of an enumeration of three or more items; else ``[clause]``."""
        if "、" in clause:
            return _zh_aspects(clause)
        if "," in clause and " and " in clause:
            return _en_aspects(clause)
        return [clause]


def _zh_aspects(clause: str) -> list[str]:
    head, *middle, tail = clause.split("、")
    conj = _ZH_LAST_CONJ.search(tail)
    if conj is None:
        return [clause]
    middle.append(tail[: conj.start()])
    rest = tail[conj.end():]
    stop = _ZH_BOUNDARY.search(rest)
    last, suffix = (rest[: stop.start()], rest[stop.start():]) if stop else (rest.rstrip("？?"), "？")
    cut = max((m.end() for m in _ZH_BOUNDARY.finditer(head)), default=0)
    prefix, first = head[:cut], head[cut:]
    items = [s.strip() for s in (first, *middle, last)]
    if any(not s for s in items):
        return [clause]
    suffix = suffix.replace("分别", "").replace("各", "")
    # Keep the corpus's spacing habit: a space between Latin and Chinese text ("secret 应该…").
    return [f"{prefix}{item}{' ' if item[-1].isascii() and not suffix[:1].isascii() else ''}{suffix}"
            for item in items]


def _en_aspects(clause: str) -> list[str]:
    words = clause.rstrip("?").split(" ")
    # Locate "w1, w2(, w3)* and w4": the first comma-bearing word starts the list.
    first_comma = next((i for i, w in enumerate(words) if w.endswith(",")), None)
    if first_comma is None:
        return [clause]
    start = first_comma
    while start > 0 and words[start - 1].lower() not in _EN_BOUNDARY:
        start -= 1
    if words[start].lower() in _EN_BOUNDARY:
        start += 1
    items: list[str] = []
    current: list[str] = []
    i = start
    while i < len(words):
        word = words[i]
        if word.lower() == "and" and items:
            items.append(" ".join(current))
            current = []
            i += 1
            while i < len(words) and words[i].lower() not in _EN_BOUNDARY:
                current.append(words[i])
                i += 1
            items.append(" ".join(current))
            break
        if word.endswith(","):
            current.append(word[:-1])
            items.append(" ".join(current))
            current = []
        else:
            current.append(word)
        i += 1
    else:
        return [clause]
    # Three or more non-empty items that do not start with a function word ("with Wrangler"), else no list.
    if len(items) < 3 or any(not it or it.split(" ")[0].lower() in _EN_BOUNDARY for it in items):
        return [clause]
    prefix = " ".join(words[:start])
    suffix = " ".join(w for w in words[i:] if w.lower() not in {"each", "both"})
    return [" ".join(p for p in (prefix, item, suffix) if p) + "?" for item in items]


# --------------------------------------------------------------------------- the loop
class RankingSource(Protocol):
    """What the loop needs from a :class:`~rag_lib.workbench.Workbench`: ranking and chunk lookup."""

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
    k: int = TOP_K,
    retriever: str = "dense",
    generator: Generator | None = None,
) -> RecoveryResult:
    """Run the loop: original Top-k → suggestions (one call, frozen) → each retrieved anew → answer one.

    Parameters
    ----------
    workbench
        A :class:`~rag_lib.workbench.Workbench` (or anything with ``rank`` and ``by_id``).
    question
        A benchmark question with resolved gold pieces.
    lang
        ``"zh"`` or ``"en"``.
    decomposer
        Proposes the narrower questions; it sees only the question text and its Top-k chunks.
    k
        Evidence size, for the decomposer, the choice and the answer.
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
    "Decomposer", "FixedSuggestions", "LLMDecomposer", "RecoveryResult", "RuleDecomposer", "SuggestionRun",
    "Suggestions", "choose_suggestion", "run_recovery",
]
