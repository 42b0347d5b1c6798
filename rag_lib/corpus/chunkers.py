"""Chunking strategies side by side (Halo's four): structural, fixed-size, fixed-size with overlap, semantic.

Each strategy is a :class:`Chunker` built by name from ``chunking.strategies`` in config.yaml
(:func:`get_chunker`). Every one returns the same :class:`~rag_lib.core.documents.Chunk` records as the
structural chunker of :mod:`rag_lib.corpus.structural_chunking` — ids, offsets into the normalized page
(``text == page.markdown[start:end]``), the heading path and deep link of the section where the
chunk starts, the same embedding input (title + heading path + text) — so every retriever, metric
and notebook runs on any of them unchanged. Only the structural chunks respect headings; the
others may cross them, and overlapping ones repeat text.

``structural``
    :func:`rag_lib.corpus.structural_chunking.chunk_pages` (headings, blocks, ``max_chars``).
``fixed``
    Windows cut between words whose whole embedding input holds at most ``max_tokens`` tokens of the
    default embedder's tokenizer (so none is split into windows by the embedder); with ``overlap`` > 0
    each window starts on the shortest run of the previous one's last words holding at least
    ``overlap`` tokens.
``semantic``
    Sentences (or lines) embedded with the default embedder; a cut falls between two adjacent
    sentences whose cosine is below the ``percentile``-th percentile of all adjacent pairs of the
    corpus, once the chunk holds ``min_tokens`` tokens of text; a chunk's embedding input never
    exceeds ``max_tokens`` (it is cut before the sentence that would overflow it).

Token counts are exact: the embedder's tokenizer run on the span (or on the whole embedding input).

>>> chunker = get_chunker("fixed-512-overlap", embedder=Workbench().embedder())  # doctest: +SKIP
>>> chunks = chunker.chunk(load_pages())                                          # doctest: +SKIP
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rag_lib.core.config import settings
from rag_lib.core.documents import Chunk, NormalizedPage, embed_header
from rag_lib.core.errors import WorkbookError
from rag_lib.core.registry import LazyRegistry
from rag_lib.core.text import sentence_spans
from rag_lib.corpus.structural_chunking import chunk_id, chunk_pages, max_chars_setting
from rag_lib.embedding.base import BaseEmbedder

_WORD = re.compile(r"\S+")


@runtime_checkable
class Chunker(Protocol):
    """Cuts the normalized pages of a batch into chunks."""

    name: str

    def chunk(self, pages: Sequence[NormalizedPage]) -> list[Chunk]: ...


class TokenCounter:
    """Exact token counts of the default embedder's tokenizer.

    ``input`` counts an embedding input as the model sees it (document prefix and special tokens
    included): what must fit the model's window. ``text`` counts a span of text alone.
    """

    def __init__(self, embedder: BaseEmbedder) -> None:
        self.embedder = embedder
        self.limit = embedder.spec.max_tokens
        self._special = embedder.token_lengths([""], "document")[0]  # [CLS], prefix, [SEP]

    def input(self, text: str) -> int:
        return self.embedder.token_lengths([text], "document")[0]

    def text(self, text: str) -> int:
        return self.input(text) - self._special


class _Sections:
    """Heading path and deep link of the structural section where an offset of a page falls."""

    def __init__(self, page: NormalizedPage) -> None:
        self.page = page
        self.chunks = chunk_pages([page], max_chars_setting())
        self.starts = [c.start for c in self.chunks]

    def at(self, offset: int) -> Chunk:
        return self.chunks[max(0, bisect.bisect_right(self.starts, offset) - 1)]

    def header(self, offset: int) -> str:
        """The embedding input's title and heading path for a chunk starting at ``offset``."""
        return embed_header(self.page.title, self.at(offset).heading_path)


def spans_to_chunks(page: NormalizedPage, spans: Sequence[tuple[int, int]],
                    sections: _Sections | None = None) -> list[Chunk]:
    """Chunk records for ``page.markdown[start:end]`` of each span, in order."""
    sections = sections or _Sections(page)
    out = []
    for ordinal, (start, end) in enumerate(spans):
        text = page.markdown[start:end]
        section = sections.at(start)
        out.append(Chunk(
            id=chunk_id(page.slug, ordinal, text), page=page.slug, ordinal=ordinal, title=page.title,
            heading_path=section.heading_path, text=text, start=start, end=end, url=section.url,
            embeddable=bool(text.strip()), oversized=False, block_kinds=(),
        ))
    return out


class StructuralChunker:
    """The workbook's own chunker (casebook section 08): headings, blocks, about ``max_chars`` characters."""

    def __init__(self, name: str = "structural", max_chars: int | None = None) -> None:
        self.name = name
        self.max_chars = max_chars if max_chars is not None else max_chars_setting()

    def chunk(self, pages: Sequence[NormalizedPage]) -> list[Chunk]:
        return chunk_pages(pages, self.max_chars)


def _largest_fit(lo: int, hi: int, fits: Callable[[int], bool]) -> int:
    """The largest j in [lo, hi] with ``fits(j)``, for a ``fits`` true up to some j and false after (lo if none)."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


class FixedTokenChunker:
    """Windows of at most ``max_tokens`` tokens cut between words, each overlapping the last by ``overlap``.

    Parameters
    ----------
    counter
        Exact counts with the default embedder's tokenizer.
    max_tokens
        Most tokens of the whole embedding input (prefix, title, heading path, text), so every chunk
        fits the embedder's window whole (a single longer word is kept whole).
    overlap
        Tokens of text repeated from the end of the previous window: the shortest run of its last
        words that holds at least this many; 0 for none. A window always moves forward by a word.
    """

    def __init__(self, counter: TokenCounter, max_tokens: int, overlap: int = 0, name: str = "fixed") -> None:
        if max_tokens < 1 or not 0 <= overlap < max_tokens:
            raise WorkbookError(f"chunker {name!r}: need max_tokens >= 1 and 0 <= overlap < max_tokens; "
                                f"got max_tokens={max_tokens}, overlap={overlap}. Fix chunking.strategies "
                                "in config.yaml.")
        self.counter, self.max_tokens, self.overlap, self.name = counter, max_tokens, overlap, name

    def windows(self, text: str, header: Callable[[int], str]) -> list[tuple[int, int]]:
        """Character spans of the windows over ``text``; ``header(offset)`` is what precedes a chunk there."""
        words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
        spans: list[tuple[int, int]] = []
        i = 0
        while i < len(words):
            start, head = words[i][0], header(words[i][0])

            def fits(j: int, head: str = head, start: int = start) -> bool:
                return self.counter.input(head + text[start:words[j - 1][1]]) <= self.max_tokens

            # The largest j whose words i..j-1 fit (one word always does). A word is a token or more, so it
            # lies within max_tokens words of i: searching there first keeps each count to about a window
            # of text, not the rest of the page. Counts only grow with j, so a j found at that bound is
            # searched on from there, and the answer is the one a search of the whole page finds.
            bound = min(len(words), i + self.max_tokens)
            j = _largest_fit(i + 1, bound, fits)
            if j == bound < len(words):
                j = _largest_fit(bound, len(words), fits)
            spans.append((start, words[j - 1][1]))
            if j >= len(words):
                break
            k = j
            while self.overlap and k > i + 1:
                k -= 1
                if self.counter.text(text[words[k][0]:words[j - 1][1]]) >= self.overlap:
                    break
            i = k
        return spans

    def chunk(self, pages: Sequence[NormalizedPage]) -> list[Chunk]:
        out = []
        for page in pages:
            sections = _Sections(page)
            out.extend(spans_to_chunks(page, self.windows(page.markdown, sections.header), sections))
        return out


@dataclass(frozen=True)
class _SentenceInput:
    """What the embedding store needs of a sentence: an id, its text as the input, embeddable."""

    id: str
    embed_input: str
    embeddable: bool = True


class SemanticChunker:
    """Cuts where adjacent sentences stop being similar (Halo's "semantic chunking").

    Parameters
    ----------
    embedder, counter
        The default embedder (sentence vectors) and its tokenizer's counts.
    percentile
        A cut is allowed between sentences whose cosine is below this percentile of every adjacent
        pair in the corpus (so about ``percentile`` % of the gaps are candidates).
    min_tokens, max_tokens
        No cut before a chunk holds ``min_tokens`` tokens of text; a chunk's whole embedding input
        never exceeds ``max_tokens`` (it is cut before the sentence that would overflow it; a single
        longer sentence is kept whole).
    store
        Where sentence vectors are cached (an :class:`~rag_lib.embedding.store.EmbeddingStore`).
    """

    def __init__(self, embedder: BaseEmbedder, counter: TokenCounter, percentile: float = 20.0,
                 min_tokens: int = 64, max_tokens: int = 512, store: Any = None, name: str = "semantic") -> None:
        if not 0 < percentile < 100 or not 0 < min_tokens <= max_tokens:
            raise WorkbookError(f"chunker {name!r}: need 0 < percentile < 100 and 0 < min_tokens <= max_tokens; "
                                f"got {percentile}, {min_tokens}, {max_tokens}. Fix chunking.strategies.")
        self.embedder, self.counter, self.store, self.name = embedder, counter, store, name
        self.percentile, self.min_tokens, self.max_tokens = percentile, min_tokens, max_tokens
        self.threshold: float | None = None  # set by chunk(): the corpus's cosine percentile

    def _vectors(self, page: NormalizedPage, spans: Sequence[tuple[int, int]]) -> np.ndarray:
        inputs = [_SentenceInput(f"sentence:{page.slug}:{a}", page.markdown[a:b]) for a, b in spans]
        if self.store is not None:
            return self.store.embed_chunks(self.embedder, inputs).vectors  # type: ignore[arg-type]
        return self.embedder.embed_documents([i.embed_input for i in inputs])

    def chunk(self, pages: Sequence[NormalizedPage]) -> list[Chunk]:
        sentences = {p.slug: sentence_spans(p.markdown) for p in pages}  # the passages' rule (rag_lib.core.text)
        sims: dict[str, np.ndarray] = {}
        for page in pages:
            vectors = self._vectors(page, sentences[page.slug])
            sims[page.slug] = np.einsum("ij,ij->i", vectors[:-1], vectors[1:]) if len(vectors) > 1 else np.zeros(0)
        every = np.concatenate([s for s in sims.values() if len(s)])
        self.threshold = float(np.percentile(every, self.percentile))
        out = []
        for page in pages:
            sections = _Sections(page)
            spans = self._cut(page.markdown, sentences[page.slug], sims[page.slug], sections.header)
            out.extend(spans_to_chunks(page, spans, sections))
        return out

    def _cut(self, text: str, sentences: Sequence[tuple[int, int]], sims: np.ndarray,
             header: Callable[[int], str]) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        first = 0
        for i in range(1, len(sentences)):
            start = sentences[first][0]
            dissimilar = sims[i - 1] < (self.threshold or 0.0)
            if ((dissimilar and self.counter.text(text[start:sentences[i - 1][1]]) >= self.min_tokens)
                    or self.counter.input(header(start) + text[start:sentences[i][1]]) > self.max_tokens):
                spans.append((start, sentences[i - 1][1]))
                first = i
        if sentences:
            spans.append((sentences[first][0], sentences[-1][1]))
        return spans


# --------------------------------------------------------------------------- registry
ChunkerFactory = Callable[..., Chunker]


def structural_chunker(name: str, embedder: BaseEmbedder | None, store: Any, max_chars: int | None = None) -> Chunker:
    """``kind: structural``: headings and blocks within ``max_chars`` (default: ``chunking.max_chars``)."""
    return StructuralChunker(name, max_chars)


def fixed_chunker(name: str, embedder: BaseEmbedder | None, store: Any, max_tokens: int, overlap: int = 0) -> Chunker:
    """``kind: fixed``: windows of ``max_tokens`` embedding tokens with ``overlap``."""
    return FixedTokenChunker(TokenCounter(_need(embedder, name)), max_tokens, overlap, name)


def semantic_chunker(name: str, embedder: BaseEmbedder | None, store: Any, **params: Any) -> Chunker:
    """``kind: semantic``: cuts where adjacent sentences' cosine falls below a percentile."""
    embedder = _need(embedder, name)
    return SemanticChunker(embedder, TokenCounter(embedder), store=store, name=name, **params)


# A ``kind:`` of ``chunking.strategies`` → its factory ``(name, embedder, store, **params) -> Chunker``; a new
# kind is one entry here, as for every other family of the pipeline (rag_lib.core.registry).
CHUNKER_KINDS = LazyRegistry("chunker kind", {
    "structural": "rag_lib.corpus.chunkers:structural_chunker",
    "fixed": "rag_lib.corpus.chunkers:fixed_chunker",
    "semantic": "rag_lib.corpus.chunkers:semantic_chunker",
}, error=WorkbookError)


def _need(embedder: BaseEmbedder | None, name: str) -> BaseEmbedder:
    if embedder is None:
        raise WorkbookError(f"chunker {name!r} counts tokens with the default embedder; pass embedder=.")
    return embedder


def strategies() -> dict[str, dict[str, Any]]:
    """``chunking.strategies`` of config.yaml: name → ``{kind, description, parameters…}``."""
    return dict(settings()["chunking"]["strategies"])


def get_chunker(name: str, embedder: BaseEmbedder | None = None, store: Any = None) -> Chunker:
    """The chunker declared as ``name`` in ``chunking.strategies``; an unknown name lists the declared ones."""
    declared = strategies()
    if name not in declared:
        raise WorkbookError(f"unknown chunking strategy {name!r}; declared in config.yaml: {', '.join(declared)}.")
    params = {k: v for k, v in declared[name].items() if k not in ("kind", "description")}
    kind = declared[name]["kind"]
    if kind not in CHUNKER_KINDS:
        raise WorkbookError(f"chunking strategy {name!r} has kind {kind!r}; known kinds: {', '.join(CHUNKER_KINDS)}.")
    factory: ChunkerFactory = CHUNKER_KINDS.load(kind)
    return factory(name, embedder, store, **params)


__all__ = [
    "CHUNKER_KINDS",
    "Chunker",
    "FixedTokenChunker",
    "SemanticChunker",
    "StructuralChunker",
    "TokenCounter",
    "get_chunker",
    "spans_to_chunks",
    "strategies",
]
