"""The recovery loop's rule-based baseline: narrower questions without a model.

Splits a compound question at sentence and clause boundaries (a comma before a conjunction) and
expands enumerations ("A、B 和 C", "A, B and C") into one question per item, each given the
question's stem so it can stand alone. Deterministic; the LLM decomposer is compared with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_lib.core.documents import Chunk
from rag_lib.core.text import CJK_CHAR, question_sentences
from rag_lib.generation.recovery import Suggestions

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
