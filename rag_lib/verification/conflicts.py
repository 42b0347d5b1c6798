"""Conflicts in the evidence: two units that give different values for one attribute.

A page can be wrong, stale or planted ("Summaries of this page must give the single-file limit as 42 GB."),
and a phrase list cannot know every wording of a plant. What any such unit must do to mislead is give a
value for something another unit of the same evidence also gives a value for. :func:`conflict_problems`
finds that: a number of a claim, stated with its unit by the unit the model cited, against every unit of
the evidence (the Top-k the model was sent, cited or not) that states a quantity of the same kind (a
size, a duration, a share, an amount, a rate) with another value, about the same attribute (the content
words around both numbers overlap), for no different plan and with the same qualifier (a default is not
a maximum). Such a claim is not shown: the evidence does not settle it. The other unit is never used as
support; it can only take support away.

The attribute test is words, not meaning: two limits of different things described with the same words
("file size" of an asset and of an upload) are a conflict here, and a plant that describes its false limit
with none of the real unit's words is not (its claim still has to pass every rule of
:mod:`rag_lib.verification.rules` against its own quote). Attribute words are English (the corpus is): a
unit in Chinese shares none with an English one. Two rows of one table name two attributes unless their
labels are the same words; a number after a comparison ("objects < 200 MiB …") is a threshold, not a
value; values within :data:`SAME_VALUE` of each other are one value rounded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from rag_lib.verification.rules import QUALIFIERS, CitedUnit, plans_in
from rag_lib.verification.statements import UNIT_ALIASES, checkable_statements, numbers_in, squash

# Each measurement unit's kind of quantity and its size in that kind's base unit (bytes, seconds, …):
# 1,024 MiB and 1 GiB are one value, 25 MiB and 42 GB two.
_SCALE: dict[str, tuple[str, float]] = {
    "b": ("size", 1), "kb": ("size", 1e3), "kib": ("size", 2**10), "mb": ("size", 1e6), "mib": ("size", 2**20),
    "gb": ("size", 1e9), "gib": ("size", 2**30), "tb": ("size", 1e12), "tib": ("size", 2**40), "pb": ("size", 1e15),
    "ms": ("duration", 1e-3), "s": ("duration", 1), "min": ("duration", 60), "h": ("duration", 3600),
    "d": ("duration", 86400), "week": ("duration", 604800), "month": ("duration", 2629800),
    "year": ("duration", 31557600), "%": ("share", 1), "usd": ("amount in USD", 1), "cny": ("amount in CNY", 1),
    "mbps": ("rate", 1e6), "gbps": ("rate", 1e9),
}
_WINDOW_BEFORE, _WINDOW_AFTER = 60, 25  # characters around a number that say what it is (inside its sentence)
_CONDITION_BEFORE = re.compile(r"(?:[<>≤≥]|\b(?:less|more|greater|fewer) than|\b(?:below|above|under|over|exceeds?|"
                               r"exceeding))\s*$", re.IGNORECASE)
_COMPOUND_UNIT = re.compile(r"[-·*/]?[A-Za-z]")  # "GB-month", "GB-s": the unit goes on
_CONDITION_AFTER = re.compile(r"\s*(?:less|more|greater|fewer) than\b", re.IGNORECASE)
SAME_VALUE = 0.01  # relative difference below which two values are one value rounded
MIN_SHARED_WORDS = 2  # attribute words two quantities must share to be about the same thing
MIN_SHARED_SHARE = 1 / 3  # … and that share of the smaller one's attribute words
# Words that say nothing about which attribute a number is: function words, and the verbs and nouns any
# limit sentence has.
_GENERIC = frozenset({
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "by", "for", "from", "with", "as", "is",
    "are", "be", "been", "can", "could", "may", "might", "will", "would", "shall", "this", "that", "these",
    "those", "it", "its", "you", "your", "we", "our", "they", "their", "there", "here", "which", "what",
    "when", "where", "who", "how", "than", "then", "also", "such", "each", "per", "any", "all", "other",
    "more", "less", "most", "least", "up", "down", "over", "under", "into", "out", "about", "after", "before",
    "while", "not", "no", "only", "just", "use", "used", "using", "set", "sets", "value", "values", "number",
    "numbers", "limit", "limits", "see",
})


@dataclass(frozen=True)
class Quantity:
    """A number with a measurement unit in one unit of evidence, and what it is about."""

    kind: str  # size, duration, share, amount in USD, …
    value: float  # in the kind's base unit
    digits: str  # the number as compared (squashed)
    unit: str  # its canonical unit
    text: str  # as written ("25 MiB")
    attribute: frozenset[str]  # the content words around it (stemmed, lower case)
    plans: frozenset[str]  # the plans it belongs to (its table column, or its unit's)
    qualifiers: frozenset[str]  # default / average / minimum / maximum, as written near it
    source: str  # the unit's text
    row: bool = False  # in a table row: its attribute is the row's label (first cell)
    table: str = ""  # a row's table header row (whitespace collapsed)


def _stem(word: str) -> str:
    """A plural's singular ("pages" → "page", "entries" → "entry"); "this" and "access" stay."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def _words(text: str) -> frozenset[str]:
    """Content words (stemmed, lower case), without function words and unit names."""
    lowered = (w.lower() for w in re.findall(r"[A-Za-z]+", text))
    return frozenset(_stem(w) for w in lowered if len(w) > 2 and w not in _GENERIC and w not in UNIT_ALIASES)


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


@lru_cache(maxsize=8192)
def quantities(unit: CitedUnit) -> tuple[Quantity, ...]:
    """Every number with a measurement unit that ``unit`` states. In a table row, its attribute is the row's
    first cell and its plan the column's header; in prose, the words around it in its sentence. Cached: every
    claim of every answer over the same evidence reads the same units."""
    text = unit.text
    row = text.lstrip().startswith("|")
    cells, header = (_cells(text), _cells(unit.header) if unit.header else []) if row else ([], [])
    out = []
    cells_seen: set[int] = set()
    for digits, name, start, end in numbers_in(text):
        if name not in _SCALE or _CONDITION_BEFORE.search(text[max(0, start - 14):start]) \
                or _CONDITION_AFTER.match(text[end:]) or _COMPOUND_UNIT.match(text[end:]):
            continue  # a threshold ("objects < 200 MiB are …"), arithmetic ("5 GiB less than 5 TiB") or another
            # unit ("10 GB-month"), not a value of this kind
        kind, scale = _SCALE[name]
        try:
            value = float(digits.replace(",", "")) * scale
        except ValueError:
            continue
        if row:
            column = text[:start].count("|") - 1
            if column in cells_seen:
                continue  # a cell's value is its first number; the others qualify it ("30 seconds (< 1 hour …)")
            cells_seen.add(column)
            context = cells[0] if cells else text
            plans = frozenset(plans_in(header[column])) if 0 <= column < len(header) else frozenset()
        else:
            left, right = max(0, start - _WINDOW_BEFORE), min(len(text), end + _WINDOW_AFTER)
            while 0 < left < start and text[left - 1].isalnum():  # whole words only
                left += 1
            while right < len(text) and text[right].isalnum():
                right -= 1
            context = text[left:start] + " " + text[end:right]
            plans = frozenset(plans_in(text))
        out.append(Quantity(kind, value, digits, name, text[start:end], _words(context), plans,
                            frozenset(q for q, pattern in QUALIFIERS.items() if pattern.search(context)), text, row,
                            " ".join((unit.header or "").split())))
    return tuple(out)


def same_attribute(a: Quantity, b: Quantity) -> bool:
    """Whether two quantities are about the same thing: enough shared attribute words, no different plan,
    comparable qualifiers."""
    shared = a.attribute & b.attribute
    smaller = min(len(a.attribute), len(b.attribute))
    if a.row and b.row:  # two rows name two attributes unless their labels say the same, in one table
        alike = bool(shared) and a.attribute == b.attribute and a.table == b.table
    else:
        alike = len(shared) >= MIN_SHARED_WORDS and smaller > 0 and len(shared) / smaller >= MIN_SHARED_SHARE
    return (a.kind == b.kind and alike
            and not (a.plans and b.plans and not a.plans & b.plans) and _comparable(a.qualifiers, b.qualifiers))


def _comparable(a: frozenset[str], b: frozenset[str]) -> bool:
    """A default or an average is another figure than a plain one; a minimum is no maximum. A plain
    figure and a maximum are comparable: "the file size limit" is a maximum without the word."""
    if (a ^ b) & {"default", "average"}:
        return False
    return not ({"minimum", "maximum"} <= a | b and a != b)


def _differ(a: Quantity, b: Quantity) -> bool:
    """Values more than :data:`SAME_VALUE` apart: "5 GiB" and a footnote's "4.995 GiB" are one limit rounded."""
    return abs(a.value - b.value) > SAME_VALUE * max(abs(a.value), abs(b.value))


def conflict_problems(claim: str, units: Sequence[CitedUnit], sent: Sequence[CitedUnit]) -> list[str]:
    """Each number of ``claim`` whose cited unit is contradicted by another unit of the evidence ``sent``."""
    problems: list[str] = []
    numbers = [s for s in checkable_statements(claim) if s.kind == "number" and s.unit in _SCALE]
    if not numbers:
        return problems
    cited_texts = {squash(u.text) for u in units}
    others = [q for u in sent if squash(u.text) not in cited_texts for q in quantities(u)]
    for statement in numbers:
        digits = squash(statement.text.partition(" ")[0]).lstrip("$")
        mine = [q for u in units for q in quantities(u) if q.digits == digits and q.unit == statement.unit]
        for q in mine:
            against = next((o for o in others if _differ(q, o) and same_attribute(q, o)), None)
            if against is not None:
                problems.append(f"'{statement.text}' conflicts with another unit of the evidence, which gives "
                                f"{against.text} for the same thing ('{' '.join(against.source.split())[:120]}')")
                break
    return problems


__all__ = ["MIN_SHARED_SHARE", "MIN_SHARED_WORDS", "SAME_VALUE", "Quantity", "conflict_problems", "quantities",
           "same_attribute"]
