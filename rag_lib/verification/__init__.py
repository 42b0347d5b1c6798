"""Verification: the stage after generation that decides which claims of an answer may be shown.

Every generator (extractive, whole chunks, narrowed units, an OpenAI-compatible endpoint) ends in
:func:`rag_lib.generation.base.finish_answer`, which checks the citations and hands the answer and its
valid quotes here. :func:`verify`:

1. splits the answer into **claims** (its sentences, list items and table rows) and binds each to the
   units **its model cited**: the workbook never adds support the model did not give;
2. checks each claim with :mod:`rag_lib.verification.rules` (numbers with their unit, count noun and
   plan; names and commands verbatim; polarity and quantifiers; content-word coverage), and each of its
   numbers against the rest of the evidence (:mod:`rag_lib.verification.conflicts`: another unit giving
   another value for the same thing takes its support away); a name it takes from the question that no unit
   of the evidence names (:func:`absent_names`) fails it too;
3. checks the reply's language against the question's;
4. decides: every claim passes → shown as written; some pass → the passing claims are shown, the others
   listed with why, when what remains still adds something to the question; none pass, or what remains
   only restates the question → withheld (the verified quotes are shown instead);
5. checks that what would be shown is about what was asked (:class:`AskedCheck`): a question whose every
   clause asks for a quantity (a count, a size, a duration, an amount) needs a claim stating one of that kind,
   and the quotes it rests on, read with their page path, title and headings, must name at least half of the
   question's checkable terms; otherwise it is withheld as off the question.

A claim that passes is *stated by its quotes*, not proven true: prose beyond numbers and names is
compared by its words, and a true quote can still be misread in ways these rules do not see.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_lib.core.text import ENGLISH_STOPWORDS, LANGUAGE_NAMES, language_of, question_clauses, sentence_spans
from rag_lib.retrieval.terms import LATIN_WORD, stem, term_coverage, vocabulary
from rag_lib.verification.conflicts import conflict_problems
from rag_lib.verification.rules import NEGATION, CitedUnit, claim_problems
from rag_lib.verification.statements import Statement, check_support, checkable_statements, squash

MIN_CLAIM_CHARS = 2  # a claim shorter than this (a stray bullet, a lone digit) is no claim


@dataclass(frozen=True)
class ClaimCheck:
    """One claim of an answer and what the rules found wrong with it (nothing: it is shown)."""

    text: str
    problems: tuple[str, ...] = ()

    @property
    def supported(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"claim": self.text, "problems": list(self.problems)}


@dataclass(frozen=True)
class Verification:
    """What the stage decided about one answer.

    ``statements`` / ``unsupported`` / ``restates_question`` are the whole answer's checkable statements
    (numbers, names, URLs), those no valid quote states, and whether it adds nothing to the question;
    ``claims`` are its claims one by one; ``shown`` is the text a reader may see (``None``: withheld).
    """

    statements: tuple[Statement, ...]
    unsupported: tuple[Statement, ...]
    restates_question: bool
    claims: tuple[ClaimCheck, ...] = ()
    shown: str | None = None
    language_problem: str | None = None
    asked: AskedCheck | None = None  # whether what would be shown is about what was asked (None: nothing to show)
    reply_problem: str | None = None  # why a reply in the asker's language is not shown beside its claims
    rendering: str | None = None  # that reply, when it may stand beside the verified claims (not checked word for word)

    @property
    def supported(self) -> bool:
        """Something may be shown (every claim, or the claims that pass)."""
        return self.shown is not None

    @property
    def unasked(self) -> str | None:
        """Why what would be shown does not answer what was asked (then nothing is shown), or ``None``."""
        return self.asked.problem if self.asked else None

    @property
    def dropped(self) -> tuple[ClaimCheck, ...]:
        return tuple(c for c in self.claims if not c.supported)

    @property
    def problem(self) -> str | None:
        """One sentence for a reader about what was withheld or dropped, or ``None``."""
        parts = [self.unasked] if self.unasked else []
        if self.dropped:
            first = self.dropped[0]
            more = f" (and {len(self.dropped) - 1} more claim(s))" if len(self.dropped) > 1 else ""
            parts.append(f"the claim '{first.text}' is not stated by its own quotes: {'; '.join(first.problems)}{more}")
        elif self.restates_question and not parts:
            parts.append("it adds nothing from its quotes to the question (it restates the question)")
        return "; ".join(parts) or None

    def to_json(self) -> dict[str, Any]:
        return {"supported": self.supported, "statements": [s.text for s in self.statements],
                "unsupported": [s.text for s in self.unsupported], "restates_question": self.restates_question,
                "claims": [c.to_json() for c in self.claims], "shown": self.shown,
                "language_problem": self.language_problem, "unasked": self.unasked,
                "terms_named": list(self.asked.named) if self.asked else [],
                "terms_unnamed": list(self.asked.unnamed) if self.asked else [],
                **({"reply_problem": self.reply_problem} if self.reply_problem else {}),
                **({"rendering": self.rendering} if self.rendering else {})}


# "如下：1." ends with the next item's number, which is no part of the claim.
_ENUMERATOR = re.compile(r"(?:(?<=[:：;；])|(?<=[:：;；]\s))\d{1,2}[.)、]$")


def claims_of(answer: str) -> list[str]:
    """The claims of an answer: its sentences, list items and table rows, whitespace collapsed, each once
    (a small model repeats itself), without a list's enumerators ("1.")."""
    claims = (_ENUMERATOR.sub("", " ".join(answer[a:b].split())).strip() for a, b in sentence_spans(answer))
    return list(dict.fromkeys(c for c in claims if len(c) >= MIN_CLAIM_CHARS and any(ch.isalpha() for ch in c)))


# How a reply ends when its JSON string was closed early (the model's own `"` inside it: `from "cloudflare:workers"`
# leaves `from `) or stopped at the schema's length cap: an opener with nothing after it.
_CUT_END = re.compile(r"(?:[=(\[{<,，、:：]|(?<=\s)(?:from|import|as|the|a|an|to|of|in|with|and|or|such as|like)"
                      r"|例如|和|或)$", re.IGNORECASE)
CUT_NOTE = ("the reply was cut off (its JSON string ended early or reached its length cap); its last sentence is "
            "not shown")


def repair_cut(reply: str, max_chars: int | None = None) -> tuple[str, str | None]:
    """``reply`` without a last sentence that was cut, and a note saying so (``None``: it was whole).

    A reply is cut when it fills its length cap, leaves a code span open (an odd number of backticks),
    or ends on an opener (``from ``, ``KEY=``, ``(``). What remains is its complete sentences; nothing of
    a cut sentence is ever shown, and a reply with no complete sentence becomes empty.
    """
    full = max_chars is not None and len(reply) >= max_chars - 2
    if not (full or reply.count("`") % 2 == 1 or _CUT_END.search(reply.rstrip())):
        return reply, None
    spans = sentence_spans(reply)
    return (reply[:spans[-1][0]].rstrip() if spans else ""), CUT_NOTE


# A clause that asks for a quantity is answered only by a claim stating one of its kind: "D1 的单个查询最长可以执行
# 多久？" is not answered by "10 GB", "How many tables can a D1 database contain?" not by "up to 10 GB of data".
# A clause's kind is the first whose words it uses (most specific first); ``None`` accepts a number with any unit.
_ASKS: dict[str, tuple[re.Pattern[str], frozenset[str] | None]] = {
    "a duration": (re.compile(r"\bhow long\b|多久|多长时间", re.IGNORECASE),
                   frozenset({"ms", "s", "min", "h", "d", "week", "month", "year"})),
    "a size": (re.compile(r"\bhow (?:large|big)\b|\bmaximum size\b|多大", re.IGNORECASE),
               frozenset({"b", "kb", "kib", "mb", "mib", "gb", "gib", "tb", "tib", "pb"})),
    "a count": (re.compile(r"\bhow many\b|\bmaximum number\b|多少(?:个|条|张|次|行|项|种)|几(?:个|条|张|次|种)",
                           re.IGNORECASE), frozenset({""})),
    "a number": (re.compile(r"\bhow much\b|多少", re.IGNORECASE), None),
}
# What an answer rests on must name at least this share of the question's checkable terms (the aspect rule's terms,
# rag_lib.retrieval.terms): "By default, users have access to the Workers Free plan." does not answer whether
# Durable Objects run on the Free plan, however true its quote. Half is a round value, picked after reading how
# shares from a third to three quarters sort the hand-checked answers (in-sample: notebook 10 shows that sweep).
ANSWER_MIN_TERMS = 0.5


def off_question(kind_unmet: bool, named: int, checkable: int, min_share: float = ANSWER_MIN_TERMS) -> bool:
    """The off-question decision from its counts: no quantity of the asked kind, or fewer than ``min_share`` of
    the question's ``checkable`` terms named (none checkable: the terms cannot decide)."""
    return kind_unmet or (checkable > 0 and named < min_share * checkable)


def asked_kind_problem(question: str, shown: str) -> str | None:
    """Why ``shown`` answers none of the question's clauses that ask for a quantity, when every clause asks for
    one (``None``: some clause asks for none, or is answered by a number of its kind)."""
    units = {s.unit for s in checkable_statements(shown) if s.kind == "number"}
    unmet = []
    for clause in question_clauses(question) or [question]:
        kind = next(((name, fitting) for name, (asks, fitting) in _ASKS.items() if asks.search(clause)), None)
        if kind is None or (units if kind[1] is None else units & kind[1]):
            return None
        unmet.append(kind[0])
    return f"the question asks for {' and '.join(dict.fromkeys(unmet))} and no shown claim states one"


@dataclass(frozen=True)
class AskedCheck:
    """Whether what an answer shows is about what was asked: the quantity the question's clauses ask for
    (``kind_problem``), and which of its checkable terms the units the answer rests on name, each unit read with
    its page path, title and headings (a Chinese word against English quotes cannot be checked and is left out)."""

    kind_problem: str | None
    named: tuple[str, ...]
    unnamed: tuple[str, ...]

    @property
    def problem(self) -> str | None:
        """Why the answer is off the question (``None``: it may answer it)."""
        checkable = len(self.named) + len(self.unnamed)
        if self.kind_problem or not off_question(False, len(self.named), checkable):
            return self.kind_problem
        return (f"its quotes name {len(self.named)} of the question's {checkable} terms (not "
                f"{', '.join(self.unnamed)}): they are about something else")


def asked_check(question: str, shown: str, units: Sequence[CitedUnit]) -> AskedCheck:
    """How ``shown``, resting on ``units``, meets what ``question`` asks (:class:`AskedCheck`)."""
    named, unnamed, _ = term_coverage(question, (f"{u.context}\n{u.text}" for u in units))
    return AskedCheck(asked_kind_problem(question, shown), tuple(named), tuple(unnamed))


def language_problem(question: str, answer: str) -> str | None:
    """Whether the answer is in another language than the question (named, for a label), else ``None``."""
    asked, written = language_of(question), language_of(answer)
    if asked == written:
        return None
    return (f"the answer is in {LANGUAGE_NAMES[written]}, not in {LANGUAGE_NAMES[asked]}, the language of the "
            "question")


def _words(text: str) -> list[str]:
    """The Latin words of ``text`` that start with a letter, case kept (a name is told by its capital)."""
    return [w for w in LATIN_WORD.findall(text) if w[0].isascii() and w[0].isalpha()]


def absent_names(claim: str, question: str, sent: Sequence[CitedUnit]) -> list[str]:
    """Names the claim takes from the question that no unit of the evidence names, page context included: the
    evidence says nothing about them ("Terraform can manage secrets …" written from pages about Wrangler).

    A name is a word the question capitalizes (past an English question's first word) or an identifier (digits,
    dots, dashes, underscores), not a function word. Nothing is checked without the evidence (``sent`` empty)."""
    if not sent:
        return []
    words = _words(question)[1 if language_of(question) == "en" else 0:]
    names = {w.lower() for w in words if (not w.isalpha() or not w.islower()) and len(w) > 1
             and w.lower() not in ENGLISH_STOPWORDS}
    claimed = {stem(w.lower()) for w in _words(claim)}
    stems, lowered, _ = vocabulary(f"{u.context}\n{u.text}" for u in sent)
    return sorted(n for n in names if stem(n) in claimed and stem(n) not in stems and n not in lowered)


def _check(claim: str, units: Sequence[CitedUnit], question: str, sent: Sequence[CitedUnit]) -> ClaimCheck:
    """One claim against the units cited for it: the rules, then conflicts with the rest of the evidence, then
    the question's names it uses that the evidence never mentions."""
    absent = [f"it names {name}, which no unit of the evidence names" for name in absent_names(claim, question, sent)]
    return ClaimCheck(claim, (*claim_problems(claim, units, question), *conflict_problems(claim, units, sent),
                              *absent))


def _statement_keys(text: str, question: str) -> dict[str, str]:
    """The checkable statements of ``text`` the question does not already make, each as written under a
    key comparable across languages: a number by its digits and canonical unit ("512 字节" is "512 bytes"),
    anything else without case and whitespace."""
    def key(s: Statement) -> str:
        return f"{squash(s.text.split()[0])} {s.unit}".strip() if s.kind == "number" else squash(s.text)

    asked = {key(s) for s in checkable_statements(question)}
    return {key(s): s.text for s in checkable_statements(text) if key(s) not in asked}


def reply_problem(reply: str, claims: Sequence[str], question: str) -> str | None:
    """Why ``reply`` (the answer in the asker's language) does not say what its verified ``claims`` say:
    a number with its unit, a command, name or URL in one and not in the other (``None``: they agree).

    Only what can be compared across languages is compared; the reply's prose is not checked further,
    which is why a reader is offered the verified claims and their quotes beside it.
    """
    said, verified = _statement_keys(reply, question), _statement_keys(" ".join(claims), question)
    added = [text for key, text in said.items() if key not in verified]
    left_out = [text for key, text in verified.items() if key not in said]
    if added:
        return f"the reply states {', '.join(added)}, which no verified claim states"
    if left_out:
        return f"the reply leaves out {', '.join(left_out)}, which its verified claims state"
    return None


def verify_claims(question: str, reply: str, claims: Sequence[tuple[str, Sequence[CitedUnit]]],
                  sent: Sequence[CitedUnit] = ()) -> Verification:
    """Check an answer written as claims: each claim against **its own** cited units only.

    ``claims`` are the model's claims, each with the units it cited for that claim; ``reply`` is its text for
    the asker. What is shown is the claims that pass (all of them, or those left when some fail and the rest
    still adds to the question). A ``reply`` in another language than the claims (the asker's) is never the
    answer, since its prose cannot be checked against them word for word: it is kept as ``rendering`` beside
    the claims only when every claim passes, the claims state at least one number, name or command, the reply
    states exactly those (:func:`reply_problem`) and negates what they negate; otherwise ``reply_problem`` says
    why it is left out.
    """
    units = [u.text for _, own in claims for u in own]
    texts = [" ".join(text.split()) for text, _ in claims]
    whole = check_support(" ".join(texts), question, units)
    checks = tuple(_check(text, own, question, sent)
                   for text, (_, own) in zip(texts, claims, strict=True) if len(text) >= MIN_CLAIM_CHARS)
    kept = [c.text for c in checks if c.supported]
    remaining = whole if kept == texts else check_support(" ".join(kept), question, units)
    shown = None if not kept or remaining.restates_question else "\n".join(kept)
    resting = [u for text, (_, own) in zip(texts, claims, strict=True) if text in kept for u in own]
    asked = asked_check(question, shown, resting) if shown is not None else None
    if asked and asked.problem:
        shown = None
    across = language_of(reply) != language_of(" ".join(texts))  # a reply in the asker's language, not the claims
    problem = rendering = None
    if across and shown is not None:
        problem = _rendering_problem(reply, kept, question) if len(kept) == len(checks) else (
            "some claims were not stated by their own quotes")
        rendering = None if problem else reply
        if problem:
            problem = f"the reply in the asker's language is not shown: {problem}"
    language = None if across or shown is None else language_problem(question, shown)
    return Verification(whole.statements, whole.unsupported, whole.restates_question, checks, shown, language,
                        asked, problem, rendering)


def _rendering_problem(reply: str, claims: Sequence[str], question: str) -> str | None:
    """Why ``reply`` may not stand beside its verified ``claims`` as their rendering (``None``: it may)."""
    if not _statement_keys(" ".join(claims), question):
        return "its claims state no number, name or command to check it against"
    mismatch = reply_problem(reply, claims, question)
    if mismatch:
        return mismatch
    if bool(NEGATION.search(reply)) != any(NEGATION.search(c) for c in claims):
        return "it negates what its claims state" if NEGATION.search(reply) else "its claims negate what it states"
    return None


def verify(question: str, answer: str, units: Sequence[CitedUnit], sent: Sequence[CitedUnit] = ()) -> Verification:
    """Check each claim of ``answer`` against the ``units`` its model cited, and decide what may be shown.

    Parameters
    ----------
    question
        The question as asked (what it names is the asker's, not a claim).
    answer
        The answer text as the model wrote it.
    units
        The valid quotes the model itself cited, with their table header rows.
    sent
        Every unit of the evidence the answer was written from: read only for conflicts with ``units``,
        never as support.
    """
    whole = check_support(answer, question, [u.text for u in units])
    checks = tuple(_check(claim, units, question, sent) for claim in claims_of(answer))
    kept = [c.text for c in checks if c.supported]
    stated = [c for c in kept if not c.endswith((":", "："))]  # an introduction ("as follows:") states nothing
    shown: str | None
    if len(kept) == len(checks) and not whole.restates_question:  # every claim passes (or none to check)
        shown = answer
    elif stated and not check_support(" ".join(kept), question, [u.text for u in units]).restates_question:
        shown = "\n".join(kept)
    else:
        shown = None
    asked = asked_check(question, shown, units) if shown is not None else None
    return Verification(whole.statements, whole.unsupported, whole.restates_question, checks,
                        None if asked and asked.problem else shown, language_problem(question, answer), asked)


__all__ = ["ANSWER_MIN_TERMS", "AskedCheck", "CitedUnit", "ClaimCheck", "Verification", "absent_names", "asked_check",
           "asked_kind_problem", "claims_of", "language_problem", "off_question", "repair_cut", "reply_problem",
           "verify", "verify_claims"]
