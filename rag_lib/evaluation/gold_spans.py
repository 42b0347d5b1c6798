"""Gold pieces that survive any chunking: each locator as a span of its normalized page.

A locator (page, heading-path suffix, phrase) is resolved once against the structural chunks, as
the benchmark always is; the phrase's place inside each matching chunk gives a character span of
the page. Any other chunk set is then scored by those spans:

**Coverage rule.** A chunk covers a span when it contains the whole span. Where no chunk of the set
contains it whole (a boundary cuts the phrase), the chunk(s) holding the largest part of it count.
A piece is covered by the union over its locators' spans, as with chunk ids.

On the structural chunks this gives exactly the benchmark's own chunk ids (a test checks it), so
strategies are compared under one rule.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rag_lib.benchmark import Benchmark, Locator
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError

# What inline Markdown may put between the characters of a phrase: whitespace, code ticks, emphasis,
# escapes, link brackets and a link's target "](/path/)".
_GAP = r"(?:\]\([^)\s]*\)|[\s`*_\[\]\\])*?"


@dataclass(frozen=True)
class Span:
    """``page.markdown[start:end]`` of one page."""

    page: str
    start: int
    end: int


def phrase_offsets(phrase: str, text: str) -> tuple[int, int] | None:
    """Where ``phrase`` sits in ``text``: verbatim first, then allowing whitespace and inline Markdown
    (code ticks, emphasis, escapes, links) between its characters; ``None`` when it is not there."""
    at = text.find(phrase)
    if at >= 0:
        return at, at + len(phrase)
    chars = [re.escape(ch) for ch in re.sub(r"[\s`*\\]+", "", phrase)]
    match = re.search(_GAP.join(chars), text)
    return (match.start(), match.end()) if match else None


def locator_spans(locator: Locator, chunks: Sequence[Chunk]) -> list[Span]:
    """One span per structural chunk the locator matches (the phrase's place inside it)."""
    spans = []
    for chunk in chunks:
        if not locator.matches(chunk):
            continue
        where = phrase_offsets(locator.phrase, chunk.text)
        if where is None:
            raise BenchmarkError(f"locator {locator.describe()} matches chunk {chunk.id} but its phrase cannot be "
                                 "placed in the text; make the phrase a verbatim quote of the page.")
        spans.append(Span(chunk.page, chunk.start + where[0], chunk.start + where[1]))
    return spans


def piece_spans(bench: Benchmark, structural: Sequence[Chunk]) -> dict[str, tuple[tuple[Span, ...], ...]]:
    """Question id → the spans of each gold piece (in piece order), from the structural chunks."""
    by_page: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in structural:
        by_page[chunk.page].append(chunk)
    return {q.id: tuple(tuple(span for loc in piece.locators for span in locator_spans(loc, by_page[loc.page]))
                        for piece in q.gold) for q in bench.items}


def covering(span: Span, chunks: Sequence[Chunk]) -> set[str]:
    """Ids of the chunks that cover ``span`` under the coverage rule (``chunks``: one page's)."""
    overlap = {c.id: min(c.end, span.end) - max(c.start, span.start) for c in chunks if c.embeddable}
    best = max([n for n in overlap.values() if n > 0], default=0)
    return {cid for cid, n in overlap.items() if n == best and best > 0}


def resolve_by_span(bench: Benchmark, spans: dict[str, tuple[tuple[Span, ...], ...]],
                    chunks: Sequence[Chunk]) -> Benchmark:
    """The benchmark with every gold piece resolved to the ids of ``chunks`` that cover its spans."""
    by_page: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        by_page[chunk.page].append(chunk)
    items = []
    for q in bench.items:
        resolved = tuple(frozenset(cid for span in piece for cid in covering(span, by_page[span.page]))
                         for piece in spans[q.id])
        items.append(replace(q, resolved=resolved))
    return Benchmark(tuple(items), bench.path, bench.snapshot)


__all__ = ["Span", "covering", "locator_spans", "phrase_offsets", "piece_spans", "resolve_by_span"]
