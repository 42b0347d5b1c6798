"""The benchmark as data: questions, their gold pieces and the locators that find them in the corpus."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_lib.benchmark.matching import collapse_ws, heading_key, plain_text
from rag_lib.core.config import BENCHMARK_DIR
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError

DEFAULT_PATH = BENCHMARK_DIR / "questions.yaml"
LANGS = ("zh", "en")
TYPES = ("answerable", "unanswerable")
CASEBOOK_REFS = ("Q5", "Q7", "Q8", "Q9a")
# The casebook's three wordings of Q7: as asked, its key terms, and the document-aligned rewrite.
Q7_PHRASINGS: tuple[str | None, ...] = (None, "terms", "aligned")
# Q7, the casebook's incomplete-answer question, and its four gold pieces (questions.yaml; a test checks them).
Q7_ID = "q07"
Q7_PIECES = ("C1", "C2", "C3", "C4")
MAX_PHRASE_CHARS = 160


def _check_lang(lang: str) -> str:
    if lang not in LANGS:
        raise BenchmarkError(f"unknown language {lang!r}; use one of {', '.join(LANGS)}.")
    return lang


# --------------------------------------------------------------------------- data types
@dataclass(frozen=True)
class Locator:
    """Where one gold piece sits: a page, a heading-path suffix and a verbatim phrase."""

    page: str
    heading: tuple[str, ...]
    phrase: str

    def describe(self) -> str:
        return f"page={self.page!r} heading={list(self.heading)!r} phrase={self.phrase!r}"

    def on_page(self, chunk: Chunk) -> bool:
        return chunk.page == self.page

    def under_heading(self, chunk: Chunk) -> bool:
        """True when the locator's heading list is a suffix of the chunk's heading path."""
        if not self.heading:
            return True
        if len(self.heading) > len(chunk.heading_path):
            return False
        tail = chunk.heading_path[len(chunk.heading_path) - len(self.heading) :]
        return [heading_key(h) for h in tail] == [heading_key(h) for h in self.heading]

    def in_text(self, chunk: Chunk) -> bool:
        phrase = collapse_ws(self.phrase)
        return phrase in collapse_ws(chunk.text) or plain_text(phrase) in plain_text(chunk.text)

    def matches(self, chunk: Chunk) -> bool:
        return self.on_page(chunk) and self.under_heading(chunk) and self.in_text(chunk)


@dataclass(frozen=True)
class Piece:
    """One thing a complete answer needs (C1…Cn); any of its locators' chunks covers it."""

    id: str
    what: str
    locators: tuple[Locator, ...]


@dataclass(frozen=True)
class Phrasing:
    """Another wording of the same question, with the same gold pieces (e.g. the casebook's Q7 variants)."""

    id: str
    zh: str
    en: str
    source: str = ""

    def text(self, lang: str) -> str:
        return getattr(self, _check_lang(lang))


@dataclass(frozen=True)
class Query:
    """One retrieval query: a question (or one of its phrasings) in one language."""

    id: str  # "q07" or "q07:terms"
    question_id: str
    phrasing: str | None
    lang: str
    text: str


@dataclass(frozen=True)
class Question:
    """One labelled question.

    ``gold`` holds the labels as written; ``pieces`` holds them resolved to chunk ids, which
    exists only when the benchmark was loaded with chunks.
    """

    id: str
    type: str
    compound: bool
    zh: str
    en: str
    gold: tuple[Piece, ...] = ()
    phrasings: tuple[Phrasing, ...] = ()
    casebook_ref: str | None = None
    notes: str = ""
    absent: tuple[str, ...] = ()
    near_miss: bool = False
    resolved: tuple[frozenset[str], ...] | None = field(default=None, compare=False)

    @property
    def answerable(self) -> bool:
        return self.type == "answerable"

    @property
    def pieces(self) -> list[frozenset[str]]:
        """Chunk ids per gold piece, in piece order (empty for an unanswerable question)."""
        if self.resolved is None:
            raise BenchmarkError(
                f"question {self.id}: gold pieces are not resolved to chunk ids. "
                "Load the benchmark with chunks: load_benchmark(chunks=[...])."
            )
        return list(self.resolved)

    @property
    def gold_chunks(self) -> frozenset[str]:
        """Every chunk id that covers some piece."""
        return frozenset().union(*self.pieces) if self.pieces else frozenset()

    @property
    def pages(self) -> tuple[str, ...]:
        """Pages the gold pieces sit on, in first-mention order."""
        return tuple(dict.fromkeys(loc.page for p in self.gold for loc in p.locators))

    def text(self, lang: str = "en", phrasing: str | None = None) -> str:
        """The question in ``lang``; with ``phrasing``, that alternative wording instead."""
        lang = _check_lang(lang)
        if phrasing is None:
            return getattr(self, lang)
        for ph in self.phrasings:
            if ph.id == phrasing:
                return ph.text(lang)
        known = ", ".join(ph.id for ph in self.phrasings) or "none"
        raise BenchmarkError(f"question {self.id}: no phrasing {phrasing!r} (it has: {known}).")

    def covered(self, chunk_ids: Iterable[str]) -> list[bool]:
        """For each piece, whether any of ``chunk_ids`` covers it."""
        got = set(chunk_ids)
        return [bool(p & got) for p in self.pieces]


@dataclass(frozen=True)
class Benchmark:
    """All questions of one benchmark file, in file order."""

    items: tuple[Question, ...]
    path: Path | None = None
    snapshot: str = ""

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.items)

    def __getitem__(self, qid: str) -> Question:
        for q in self.items:
            if q.id == qid:
                return q
        raise KeyError(qid)

    @property
    def resolved(self) -> bool:
        return all(q.resolved is not None for q in self.items)

    def questions(
        self,
        lang: str | None = None,
        *,
        answerable: bool | None = None,
        compound: bool | None = None,
        casebook: bool | None = None,
        page: str | None = None,
        near_miss: bool | None = None,
    ) -> list[Question]:
        """Questions matching every given filter.

        ``lang`` only checks the language name (every question has both languages); ``page``
        keeps questions with a gold piece on that page; ``casebook`` keeps questions with (True)
        or without (False) a casebook reference; ``near_miss`` keeps the near-miss unanswerable
        questions (True) or every other question (False).
        """
        if lang is not None:
            _check_lang(lang)
        out = []
        for q in self.items:
            if answerable is not None and q.answerable != answerable:
                continue
            if compound is not None and q.compound != compound:
                continue
            if casebook is not None and (q.casebook_ref is not None) != casebook:
                continue
            if page is not None and page not in q.pages:
                continue
            if near_miss is not None and q.near_miss != near_miss:
                continue
            out.append(q)
        return out

    def queries(self, lang: str = "en", *, phrasings: bool = False, **filters: Any) -> list[Query]:
        """Retrieval queries in ``lang``; with ``phrasings=True`` each alternative wording is one more query."""
        lang = _check_lang(lang)
        out = []
        for q in self.questions(lang, **filters):
            out.append(Query(q.id, q.id, None, lang, q.text(lang)))
            if phrasings:
                out.extend(Query(f"{q.id}:{ph.id}", q.id, ph.id, lang, ph.text(lang)) for ph in q.phrasings)
        return out

    def by_casebook(self, ref: str) -> Question:
        for q in self.items:
            if q.casebook_ref == ref:
                return q
        raise KeyError(ref)

    def summary(self) -> dict[str, Any]:
        """Counts: total, answerable, unanswerable, compound, and questions per gold page."""
        per_page: Counter[str] = Counter(p for q in self.items for p in q.pages)
        return {
            "total": len(self.items),
            "answerable": sum(q.answerable for q in self.items),
            "unanswerable": sum(not q.answerable for q in self.items),
            "compound": sum(q.compound for q in self.items),
            "near_miss": sum(q.near_miss for q in self.items),
            "phrasings": sum(len(q.phrasings) for q in self.items),
            "per_page": dict(sorted(per_page.items())),
        }
