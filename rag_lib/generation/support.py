"""Which quotes can carry an answer: a quote must be a meaningful span of its chunk.

Applied by the citation check (:mod:`rag_lib.generation.citations`): a quote (:func:`span_problem`) starts
and ends at word boundaries (never inside a word), holds at least :data:`MIN_WORDS` words with a letter
(not markup such as ``| --- |`` or a table's header row), and is either a whole *unit* of the chunk (a
sentence, list item or table row, see :func:`unit_spans`) or a clause of at least
:data:`MIN_CLAUSE_CHARS` characters. A span of text that addresses a model (:mod:`rag_lib.core.injection`)
never counts. Whether the quotes carry the answer is the verification stage's
(:mod:`rag_lib.verification`).
"""

from __future__ import annotations

import re

from rag_lib.core.injection import overlaps_instruction
from rag_lib.core.text import sentence_spans

MIN_WORDS = 3
MIN_CLAUSE_CHARS = 30
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_MARKUP_EDGE = " \t\n|*`#>-:_~"

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


def chunk_units(text: str) -> list[tuple[int, str, str | None]]:
    """Each unit of a chunk's ``text`` (:func:`unit_spans`): its offset, its text (stripped) and, for a table
    row, its table's header row."""
    out = []
    for a, b in unit_spans(text):
        unit = text[a:b].strip()
        if unit:
            offset = text.index(unit, a)
            out.append((offset, unit, table_header(text, offset)))
    return out


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
