"""Support, not substrings: which quotes can carry an answer, and whether they carry it.

Two checks, applied after the citation check (:mod:`rag_lib.generation.citations`):

**A quote must be a meaningful span** of its chunk (:func:`span_problem`): it starts and ends at
word boundaries (never inside a word), holds at least :data:`MIN_WORDS` words with a letter (not
markup such as ``| --- |`` or a table's header row), and is either a whole *unit* of the chunk (a
sentence, list item or table row, see :func:`unit_spans`) or a clause of at least
:data:`MIN_CLAUSE_CHARS` characters. A span of text that addresses a model (:mod:`rag_lib.injection`)
never counts.

**An answer must be supported by its verified quotes** (:func:`check_support`): every checkable
statement it makes (:func:`checkable_statements`: each number with its unit, command, config key,
API name, file name and URL) occurs in one of the quotes, compared without case and whitespace.
A statement the question itself contains is the asker's, not a claim. An answer that adds nothing
from its quotes to the question (every content term it has beyond the question's is absent from the
quotes, and the quotes do not hold every term of the question) *restates the question*: it is
counted as no answer. Prose cannot be checked this way, so a
supported answer is one whose checkable statements are all quoted, not one proven true.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rag_lib.injection import overlaps_instruction
from rag_lib.text import identifiers, sentence_spans

MIN_WORDS = 3
MIN_CLAUSE_CHARS = 30
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_MARKUP_EDGE = " \t\n|*`#>-:_~"

# Measurement units only: a count noun ("requests", "个", "次") is not checked, so a translated count
# ("1000 次" for "1,000 requests") is still the same number; "42 GB" against "42 MB" is not.
_UNIT_NAMES = {
    "b": ("b", "byte", "bytes", "字节"), "kb": ("kb",), "kib": ("kib",), "mb": ("mb",), "mib": ("mib",),
    "gb": ("gb",), "gib": ("gib",), "tb": ("tb",), "tib": ("tib",), "pb": ("pb",),
    "ms": ("ms", "millisecond", "milliseconds", "毫秒"), "s": ("s", "sec", "secs", "second", "seconds", "秒"),
    "min": ("min", "mins", "minute", "minutes", "分钟"), "h": ("h", "hr", "hrs", "hour", "hours", "小时"),
    "d": ("day", "days", "天"), "week": ("week", "weeks", "周"), "month": ("month", "months", "个月", "月"),
    "year": ("year", "years", "年"), "%": ("%", "percent", "per cent"), "usd": ("usd", "美元"),
    "mbps": ("mbps",), "gbps": ("gbps",),
}
_CANONICAL_UNIT = {alias: unit for unit, aliases in _UNIT_NAMES.items() for alias in aliases}
_UNITS = "|".join(sorted((re.escape(a) for a in _CANONICAL_UNIT), key=len, reverse=True))
# A number as the answer states it, with the unit that follows, if any; digits inside a word (R2, v4,
# HTTP/2) are names, not numbers.
_NUMBER = re.compile(rf"(?<![\w.$])(\$?\d+(?:[.,]\d+)*)(?:\s*({_UNITS})(?![A-Za-z]))?", re.IGNORECASE)
# Not statements: ranks and unit ids ("[2]", "[S3]") and a list's enumerators ("1. ", "；2、"), at a line's
# start or right after punctuation (so the "2." that ends "the limit is 2." stays a number).
_MARKERS = re.compile(r"\[(?:S?\d+(?:\.\d+)?)\]|(?:^|(?<=[:;,。：；，、\n]))\s*\d{1,2}[.)、](?!\d)\s*",
                      re.MULTILINE)
_URL = re.compile(r"https?://[^\s)\]>\"'，。]+")


def _squash(text: str) -> str:
    """Lower-cased, without whitespace or thousands separators: how statements are compared."""
    return re.sub(r"(?<=\d),(?=\d{3})", "", "".join(text.lower().split()))


def unit_spans(text: str) -> list[tuple[int, int]]:
    """The units of a chunk: its sentences, list items and table rows (text.sentence_spans), without
    headings, table separator rows, table header rows and spans with no letter or digit."""
    units = []
    spans = sentence_spans(text)
    for i, (a, b) in enumerate(spans):
        piece = text[a:b]
        if _TABLE_SEPARATOR.match(piece) or not any(ch.isalnum() for ch in piece) or piece.lstrip().startswith("#"):
            continue  # a separator, bare markup, or a heading (it names a section, it states nothing)
        following = text[b:spans[i + 1][1]] if i + 1 < len(spans) else ""
        if piece.lstrip().startswith("|") and _TABLE_SEPARATOR.match(following.strip() or "x"):
            continue  # a header row names columns; it states nothing
        units.append((a, b))
    return units


def table_header(text: str, start: int) -> str | None:
    """The header row of the Markdown table whose row starts at ``start`` in ``text`` (whitespace
    collapsed), or ``None`` when that row is not in a table with a header. A row alone ("| After
    compression | 3 MB | 10 MB |") does not say which column is which plan; its header does."""
    line_start = text.rfind("\n", 0, start) + 1
    if not text[line_start:].lstrip().startswith("|"):
        return None
    above = text[:line_start].splitlines()
    while above and above[-1].lstrip().startswith("|"):
        if _TABLE_SEPARATOR.match(above[-1]) and len(above) > 1 and above[-2].lstrip().startswith("|"):
            return " ".join(above[-2].split())
        above.pop()
    return None


def _trimmed(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a] in _MARKUP_EDGE:
        a += 1
    while b > a and text[b - 1] in _MARKUP_EDGE + ".;,":
        b -= 1
    return a, b


def span_problem(text: str, start: int, end: int) -> str | None:
    """Why ``text[start:end]`` cannot support an answer (``None``: it can).

    Reasons: ``fragment`` (starts or ends inside a word), ``markup`` (fewer than :data:`MIN_WORDS`
    words with a letter), ``partial`` (neither a whole unit nor a clause of :data:`MIN_CLAUSE_CHARS`
    characters), ``flagged`` (it touches text addressed to a model).
    """
    if (start > 0 and text[start - 1].isalnum() and text[start].isalnum()) or (
            end < len(text) and text[end - 1].isalnum() and text[end].isalnum()):
        return "fragment"
    quote = text[start:end]
    words = _WORD.findall(quote)
    if len(words) < MIN_WORDS or not any(ch.isalpha() for ch in quote):
        return "markup"
    if overlaps_instruction(text, start, end):
        return "flagged"
    a, b = _trimmed(text, start, end)
    whole_unit = any(start <= ua and ub <= end for ua, ub in (_trimmed(text, *u) for u in unit_spans(text)) if ua < ub)
    if not whole_unit and b - a < MIN_CLAUSE_CHARS:
        return "partial"
    return None


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
        found.append(Statement("number", f"{number} {unit}" if unit else number,
                               _CANONICAL_UNIT.get((unit or "").lower(), "")))
    return list({(s.kind, _squash(s.text)): s for s in found if s.text.strip()}.values())


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

    @property
    def problem(self) -> str | None:
        """One sentence for a reader, or ``None`` when supported."""
        if self.unsupported:
            listed = ", ".join(f"'{s.text}'" for s in self.unsupported[:5])
            return f"it states {listed}, which no verified quote contains"
        if self.restates_question:
            return "it adds nothing from its quotes to the question (it restates the question)"
        return None

    def to_json(self) -> dict[str, Any]:
        return {"supported": self.supported, "statements": [s.text for s in self.statements],
                "unsupported": [s.text for s in self.unsupported], "restates_question": self.restates_question}


def states(statement: Statement, quotes: str) -> bool:
    """Whether ``quotes`` state ``statement``: a number with the same digits (and the same unit when the
    statement has one), anything else verbatim, compared without case and whitespace."""
    if statement.kind == "number":
        return _number_supported(statement, quotes)
    return _squash(statement.text) in _squash(quotes)


def _number_supported(statement: Statement, quotes: str) -> bool:
    digits = _squash(statement.text.partition(" ")[0])
    for match in _NUMBER.finditer(_MARKERS.sub(" ", quotes)):
        unit = _CANONICAL_UNIT.get((match.group(2) or "").lower(), "")
        if _squash(match.group(1)) == digits and (not statement.unit or unit == statement.unit):
            return True
    return False


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
    asked = _squash(question)
    statements = checkable_statements(answer)
    unsupported, quoted = [], []
    for s in statements:
        in_quotes = states(s, joined)
        in_question = _squash(s.text) in asked  # the asker named it: not the answer's claim
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


def quotes_of(citations: Sequence[Any]) -> list[str]:
    """The quotes of verified citations (objects with ``quote``)."""
    return [c.quote for c in citations]
