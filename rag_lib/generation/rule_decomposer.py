"""The recovery loop's rule-based baseline: narrower questions without a model.

Splits a compound question at sentence and clause boundaries (a comma before a conjunction) and
expands enumerations ("A、B 和 C", "A, B and C") into one question per item, each given the
question's stem so it can stand alone. Deterministic; the LLM decomposer is compared with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_lib.core.documents import Chunk
from rag_lib.core.text import question_clauses
from rag_lib.generation.recovery import Suggestions

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
        return question_clauses(question)

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
