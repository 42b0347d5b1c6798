"""Checkable statements of an answer (numbers with their units, names, URLs) and whether quotes state them.

:func:`checkable_statements` finds each number with its unit, command, config key, API name, file name and
URL an answer states; :func:`states` says whether a text states one: a number with the same digits and the
same unit (a number written without a measurement unit matches only a number written without one),
anything else verbatim, compared without case and whitespace. :func:`check_support` applies them to a
whole answer: a statement the question itself contains is the asker's, not a claim; an answer that adds
nothing from its quotes to the question *restates the question*.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rag_lib.core.text import identifiers

# Measurement units only: a count noun ("requests", "个", "次") is not checked, so a translated count
# ("1000 次" for "1,000 requests") is still the same number; "42 GB" against "42 MB" is not.
_UNIT_NAMES = {
    "b": ("b", "byte", "bytes", "字节"), "kb": ("kb",), "kib": ("kib",), "mb": ("mb",), "mib": ("mib",),
    "gb": ("gb",), "gib": ("gib",), "tb": ("tb",), "tib": ("tib",), "pb": ("pb",),
    "ms": ("ms", "millisecond", "milliseconds", "毫秒"), "s": ("s", "sec", "secs", "second", "seconds", "秒"),
    "min": ("min", "mins", "minute", "minutes", "分钟"), "h": ("h", "hr", "hrs", "hour", "hours", "小时"),
    "d": ("day", "days", "天"), "week": ("week", "weeks", "周"), "month": ("month", "months", "个月", "月"),
    "year": ("year", "years", "年"), "%": ("%", "percent", "per cent"), "usd": ("usd", "美元", "美金"),
    "cny": ("元", "人民币", "rmb", "cny"),
    "mbps": ("mbps",), "gbps": ("gbps",),
}
_CANONICAL_UNIT = {alias: unit for unit, aliases in _UNIT_NAMES.items() for alias in aliases}
UNIT_ALIASES = frozenset(_CANONICAL_UNIT)
_UNITS = "|".join(sorted((re.escape(a) for a in _CANONICAL_UNIT), key=len, reverse=True))
# A number as the answer states it, with the unit that follows, if any; digits inside a word (R2, v4,
# HTTP/2) are names, not numbers.
_NUMBER = re.compile(rf"(?<![\w.$])(\$?\d+(?:[.,]\d+)*)(?:\s*({_UNITS})(?![A-Za-z]))?", re.IGNORECASE)
# Not statements: ranks and unit ids ("[2]", "[S3]") and a list's enumerators ("1. ", "；2、"), at a line's
# start or right after punctuation (so the "2." that ends "the limit is 2." stays a number).
_MARKERS = re.compile(r"\[(?:S?\d+(?:\.\d+)?)\]|(?:^|(?<=[:;,。：；，、\n]))\s*\d{1,2}[.)、](?!\d)\s*",
                      re.MULTILINE)
_URL = re.compile(r"https?://[^\s)\]>\"'，。]+")


def squash(text: str) -> str:
    """Lower-cased, without whitespace or thousands separators: how statements are compared."""
    return re.sub(r"(?<=\d),(?=\d{3})", "", "".join(text.lower().split()))



@dataclass(frozen=True)
class Statement:
    """One checkable statement of an answer: its kind and the text as the answer wrote it."""

    kind: str  # number, identifier, url
    text: str
    unit: str = ""  # a number's unit, canonical ("s" for "seconds" and "秒")


def checkable_statements(answer: str) -> list[Statement]:
    """Numbers with their units, identifiers (commands, config keys, API and file names) and URLs
    that ``answer`` states, in order, without repeats."""
    text = _MARKERS.sub(" ", answer)
    found: list[Statement] = []
    for url in _URL.findall(text):
        found.append(Statement("url", url.rstrip(".,;")))
    text = _URL.sub(" ", text)
    for ident in identifiers(text):
        found.append(Statement("identifier", ident.strip("`")))
    for match in _NUMBER.finditer(re.sub(r"`[^`]*`", " ", text)):
        number, unit = match.group(1), match.group(2)
        found.append(Statement("number", f"{number} {unit}" if unit else number, _unit_of(match)))
    return list({(s.kind, squash(s.text)): s for s in found if s.text.strip()}.values())


def _terms(text: str) -> set[str]:
    from rag_lib.retrieval.tokenize import content_terms  # jieba: loaded on use

    return set(content_terms(text))


@dataclass(frozen=True)
class SupportReport:
    """Whether an answer is carried by its verified quotes."""

    statements: tuple[Statement, ...]
    unsupported: tuple[Statement, ...]
    restates_question: bool

    @property
    def supported(self) -> bool:
        return not self.unsupported and not self.restates_question


def states(statement: Statement, quotes: str) -> bool:
    """Whether ``quotes`` state ``statement``: a number with the same digits and the same unit (none
    when the statement has none), anything else verbatim, compared without case and whitespace."""
    if statement.kind == "number":
        return number_matches(statement, quotes)
    return squash(statement.text) in squash(quotes)


def number_matches(statement: Statement, text: str) -> bool:
    """Whether ``text`` states the number of ``statement`` with the same unit. A number written without
    a measurement unit matches only a number written without one: "20 files" is not "20 minutes"."""
    digits = squash(statement.text.partition(" ")[0]).lstrip("$")
    return any(squash(m.group(1)).lstrip("$") == digits and _unit_of(m) == statement.unit
               for m in _NUMBER.finditer(_MARKERS.sub(" ", text)))


def numbers_in(text: str) -> list[tuple[str, str, int, int]]:
    """Each number ``text`` states: its digits (squashed, without ``$``), its canonical unit (``""``: none)
    and its span in ``text``."""
    cleaned = _MARKERS.sub(lambda m: " " * len(m.group()), text)  # same offsets as ``text``
    return [(squash(m.group(1)).lstrip("$"), _unit_of(m), *m.span()) for m in _NUMBER.finditer(cleaned)]


def number_spans(statement: Statement, text: str) -> list[tuple[int, int]]:
    """Where ``text`` states the number of ``statement`` with its unit (``(start, end)`` of each)."""
    digits = squash(statement.text.partition(" ")[0]).lstrip("$")
    return [(start, end) for value, unit, start, end in numbers_in(text) if value == digits and unit == statement.unit]


def _unit_of(match: re.Match[str]) -> str:
    """The canonical unit of a number match: its unit word, or ``usd`` for a ``$`` amount."""
    unit = _CANONICAL_UNIT.get((match.group(2) or "").lower(), "")
    return unit or ("usd" if match.group(1).startswith("$") else "")


def check_support(answer: str, question: str, quotes: Iterable[str]) -> SupportReport:
    """Check an answer's checkable statements against its verified ``quotes``.

    Parameters
    ----------
    answer
        The answer text as it would be shown.
    question
        The question it answers (identifiers named there are not the answer's claims).
    quotes
        The verified quotes only (a dropped citation supports nothing).
    """
    joined = "\n".join(quotes)
    asked = squash(question)
    statements = checkable_statements(answer)
    unsupported, quoted = [], []
    for s in statements:
        in_quotes = states(s, joined)
        in_question = squash(s.text) in asked  # the asker named it: not the answer's claim
        if in_quotes and not in_question:
            quoted.append(s)
        elif not in_quotes and not in_question:
            unsupported.append(s)
    # Restating: nothing quoted beyond what the question already says, neither a statement nor a term,
    # and the quotes do not contain the question's own terms either (a yes/no answer can add nothing
    # but "yes" while its quote states exactly what was asked).
    asked_terms, quoted_terms = _terms(question), _terms(joined)
    adds = bool(quoted) or bool((_terms(answer) - asked_terms) & quoted_terms)
    restates = not joined.strip() or not (adds or (asked_terms and asked_terms <= quoted_terms))
    return SupportReport(tuple(statements), tuple(unsupported), restates)
