"""Resolving locators against a snapshot's chunks: which chunks hold each gold piece."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from rag_lib.benchmark.matching import collapse_ws, plain_text
from rag_lib.benchmark.questions import Benchmark, Locator, Question
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError


def _candidates(loc: Locator, chunks: Sequence[Chunk]) -> str:
    """Where the locator nearly matched, so the labeller can fix it."""
    page = [c for c in chunks if c.page == loc.page]
    if not page:
        slugs = sorted({c.page for c in chunks})
        close = difflib.get_close_matches(loc.page, slugs, n=3, cutoff=0.5)
        return f"no chunk has page {loc.page!r}; closest pages: {close or 'none'}"
    fmt = lambda cs: "; ".join(f"{c.id} {list(c.heading_path)}" for c in cs[:5]) or "none"  # noqa: E731
    with_phrase = [c for c in page if loc.in_text(c)]
    under = [c for c in page if loc.under_heading(c)]
    return f"chunks on that page containing the phrase: {fmt(with_phrase)}; chunks under that heading: {fmt(under)}"


def resolve(bench: Benchmark, chunks: Sequence[Chunk]) -> Benchmark:
    """Resolve every locator to chunk ids and check every ``absent`` string.

    Raises
    ------
    BenchmarkError
        Listing every locator that resolves to nothing (question, piece, locator, closest
        candidates) and every ``absent`` string that some chunk contains.
    """
    problems: list[str] = []
    out = []
    texts = [(c, collapse_ws(c.text).casefold(), plain_text(c.text).casefold()) for c in chunks]
    for q in bench.items:
        resolved = []
        for piece in q.gold:
            ids: set[str] = set()
            for i, loc in enumerate(piece.locators, 1):
                hits = [c.id for c in chunks if loc.matches(c)]
                if not hits:
                    problems.append(
                        f"question {q.id} piece {piece.id} locator {i} ({loc.describe()}) matches "
                        f"no chunk; {_candidates(loc, chunks)}"
                    )
                ids.update(hits)
            resolved.append(frozenset(ids))
        for term in q.absent:
            key = collapse_ws(term).casefold()
            found = [c.id for c, t, p in texts if key in t or key in p]
            if found:
                problems.append(
                    f"question {q.id} (unanswerable) lists absent string {term!r}, but chunks contain it: {found[:5]}"
                )
        out.append(Question(**{**q.__dict__, "resolved": tuple(resolved)}))
    if problems:
        raise BenchmarkError(
            f"{len(problems)} benchmark label(s) do not hold against {len(chunks)} chunks. Fix each locator "
            "(page slug exact; heading list = suffix of the chunk's heading path, case-insensitive; phrase "
            "case-sensitive, whitespace-collapsed) or relabel the question:\n- " + "\n- ".join(problems)
        )
    return Benchmark(tuple(out), bench.path, bench.snapshot)
