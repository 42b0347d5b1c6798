"""The labelled benchmark: bilingual questions with gold evidence pieces located in the corpus.

``data/benchmark/questions.yaml`` holds every question twice (``zh`` and ``en``). An answerable
question lists the **pieces** (C1…Cn) a complete answer needs; each piece lists one or more
**locators**, and a retrieved chunk that any locator of a piece resolves to covers that piece.
Locators never name chunk ids (those change whenever the chunker changes); they name

* ``page`` - the page slug (repository path under ``src/content/docs/`` without ``.mdx`` and
  without a trailing ``/index``), compared exactly with :attr:`Chunk.page`;
* ``heading`` - heading texts, outermost first, that must form a *suffix* of the chunk's
  heading path; compared case-insensitively after stripping Markdown (backticks, emphasis,
  links, MDX comments) and underscores. An empty list matches every chunk of the page, including the
  text before its first heading;
* ``phrase`` - text the chunk must contain, compared **case-sensitively** (labels are copied
  verbatim from the source) after collapsing whitespace, against the chunk text and against
  its plain rendering (inline code, emphasis, links and HTML tags removed), so Markdown
  formatting inside the phrase does not matter.

An unanswerable question has no pieces; it may list ``absent`` strings that no chunk may
contain (case-insensitive), so the claim "the corpus lacks the answer" is checked, not assumed.

Example
-------
>>> bench = load_benchmark(chunks=chunks)            # doctest: +SKIP
>>> q = bench["q07"]
>>> q.text("zh"), [len(p) for p in q.pieces]         # doctest: +SKIP
"""

from __future__ import annotations

from rag_lib.benchmark.matching import collapse_ws, heading_key, plain_text
from rag_lib.benchmark.parse import load_benchmark, parse_benchmark, read_yaml
from rag_lib.benchmark.questions import (
    CASEBOOK_REFS,
    DEFAULT_PATH,
    LANGS,
    MAX_PHRASE_CHARS,
    Q7_PHRASINGS,
    TYPES,
    Benchmark,
    Locator,
    Phrasing,
    Piece,
    Query,
    Question,
)
from rag_lib.benchmark.resolve import resolve

__all__ = [
    "CASEBOOK_REFS", "DEFAULT_PATH", "LANGS", "MAX_PHRASE_CHARS", "Q7_PHRASINGS", "TYPES", "Benchmark",
    "Locator", "Phrasing", "Piece", "Query", "Question", "collapse_ws", "heading_key", "load_benchmark",
    "parse_benchmark", "plain_text", "read_yaml", "resolve",
]
