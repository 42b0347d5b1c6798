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

import argparse
import difflib
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rag_lib.config import BENCHMARK_DIR, batch_dir
from rag_lib.documents import Chunk
from rag_lib.errors import BenchmarkError, cli_errors

DEFAULT_PATH = BENCHMARK_DIR / "questions.yaml"
LANGS = ("zh", "en")
TYPES = ("answerable", "unanswerable")
CASEBOOK_REFS = ("Q5", "Q7", "Q8", "Q9a")
# The casebook's three wordings of Q7: as asked, its key terms, and the document-aligned rewrite.
Q7_PHRASINGS: tuple[str | None, ...] = (None, "terms", "aligned")
MAX_PHRASE_CHARS = 160

_ID_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_PIECE_RE = re.compile(r"^C[1-9][0-9]*$")
_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$")
_QUESTION_KEYS = {"id", "type", "compound", "zh", "en", "pieces", "phrasings", "casebook_ref", "notes", "absent",
                  "near_miss"}
_PIECE_KEYS = {"id", "what", "locators"}
_LOCATOR_KEYS = {"page", "heading", "phrase"}
_PHRASING_KEYS = {"id", "zh", "en", "source"}


# --------------------------------------------------------------------------- text matching
_MDX_COMMENT = re.compile(r"\{/\*.*?\*/\}", re.S)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_STRONG = re.compile(r"(\*\*|__)(.+?)\1")
_EM_STAR = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_EM_UNDERSCORE = re.compile(r"(?<![\w])_(?!\s)(.+?)(?<!\s)_(?!\w)")
_WS = re.compile(r"\s+")


def collapse_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return _WS.sub(" ", text).strip()


def plain_text(markdown: str) -> str:
    """Inline Markdown rendered as plain text: link targets, tags, emphasis and backticks removed.

    Block structure is kept (only inline markup goes), so table rows and list items still read
    as they do on the page. Whitespace is collapsed.
    """
    text = _MDX_COMMENT.sub("", markdown)
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub("", text)
    text = _STRONG.sub(r"\2", text)
    text = _EM_STAR.sub(r"\1", text)
    text = _EM_UNDERSCORE.sub(r"\1", text)
    text = text.replace("`", "").replace("\\", "")
    return collapse_ws(text)


def heading_key(heading: str) -> str:
    """How headings are compared: plain text, whitespace collapsed, case-folded, '#' and '_' dropped.

    Underscores are ignored so that ``_routes.json`` and ``routes.json`` compare equal whichever
    way a normaliser renders inline code in a heading.
    """
    return plain_text(heading.lstrip("#")).replace("_", "").casefold()


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


# --------------------------------------------------------------------------- loading
def _check_lang(lang: str) -> str:
    if lang not in LANGS:
        raise BenchmarkError(f"unknown language {lang!r}; use one of {', '.join(LANGS)}.")
    return lang


def _fail(where: str, field_name: str, problem: str, fix: str) -> BenchmarkError:
    return BenchmarkError(f"{where}, field {field_name!r}: {problem}. Fix: {fix}")


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, key, f"expected non-empty text, got {value!r}", f"write the {key} text")
    return value.strip()


def _no_extra(raw: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(raw) - allowed)
    if extra:
        raise _fail(where, extra[0], "unknown field", f"use only {sorted(allowed)} (check the spelling)")


def _parse_locator(raw: Any, where: str) -> Locator:
    if not isinstance(raw, Mapping):
        raise _fail(where, "locators", f"a locator must be a mapping, got {raw!r}", "write page/heading/phrase")
    _no_extra(raw, _LOCATOR_KEYS, where)
    page = _text(raw, "page", where)
    if page.endswith((".mdx", "/index")) or page.startswith("/") or not _SLUG_RE.match(page):
        raise _fail(
            where,
            "page",
            f"{page!r} is not a page slug",
            "use the path under src/content/docs/ without '.mdx', '/index' or a leading slash, "
            "e.g. 'workers/configuration/secrets'",
        )
    heading = raw.get("heading", [])
    if isinstance(heading, str):
        heading = [heading]
    if not isinstance(heading, list) or not all(isinstance(h, str) and h.strip() for h in heading):
        raise _fail(
            where,
            "heading",
            f"expected a list of heading texts, got {heading!r}",
            "write the heading path outermost first, e.g. ['Secrets', 'Local development']",
        )
    phrase = _text(raw, "phrase", where)
    if len(phrase) > MAX_PHRASE_CHARS:
        raise _fail(
            where,
            "phrase",
            f"{len(phrase)} characters long",
            f"use a short distinctive phrase (at most {MAX_PHRASE_CHARS} characters)",
        )
    return Locator(page, tuple(h.strip() for h in heading), phrase)


def _parse_piece(raw: Any, where: str, expected_id: str) -> Piece:
    if not isinstance(raw, Mapping):
        raise _fail(where, "pieces", f"a piece must be a mapping, got {raw!r}", "write id/what/locators")
    _no_extra(raw, _PIECE_KEYS, where)
    pid = raw.get("id")
    if pid != expected_id or not _PIECE_RE.match(str(pid)):
        raise _fail(where, "pieces.id", f"got {pid!r}, expected {expected_id!r}", "number pieces C1, C2, … in order")
    here = f"{where} piece {pid}"
    what = _text(raw, "what", here)
    locs = raw.get("locators")
    if not isinstance(locs, list) or not locs:
        raise _fail(here, "locators", "no locators", "give at least one page/heading/phrase locator")
    return Piece(pid, what, tuple(_parse_locator(loc, f"{here} locator {i + 1}") for i, loc in enumerate(locs)))


def _parse_question(raw: Any, index: int) -> Question:
    if not isinstance(raw, Mapping):
        raise BenchmarkError(
            f"questions[{index}] is {type(raw).__name__}, not a mapping. Fix: write it as id/type/zh/en/…"
        )
    qid = raw.get("id")
    if not isinstance(qid, str) or not _ID_RE.match(qid):
        raise _fail(f"questions[{index}]", "id", f"got {qid!r}", "use a lower-case id such as 'q07' or 'u01'")
    where = f"question {qid}"
    _no_extra(raw, _QUESTION_KEYS, where)
    qtype = raw.get("type")
    if qtype not in TYPES:
        raise _fail(where, "type", f"got {qtype!r}", f"use one of {list(TYPES)}")
    compound = raw.get("compound")
    if not isinstance(compound, bool):
        raise _fail(where, "compound", f"got {compound!r}", "write true or false")
    zh, en = _text(raw, "zh", where), _text(raw, "en", where)
    ref = raw.get("casebook_ref")
    if ref is not None and ref not in CASEBOOK_REFS:
        raise _fail(where, "casebook_ref", f"got {ref!r}", f"use one of {list(CASEBOOK_REFS)} or leave it out")
    notes = raw.get("notes", "") or ""
    if not isinstance(notes, str):
        raise _fail(where, "notes", f"got {type(notes).__name__}", "write notes as one text block")

    raw_pieces = raw.get("pieces", []) or []
    if not isinstance(raw_pieces, list):
        raise _fail(where, "pieces", f"got {type(raw_pieces).__name__}", "write a list of pieces")
    pieces = tuple(_parse_piece(p, where, f"C{i + 1}") for i, p in enumerate(raw_pieces))
    if qtype == "answerable" and not pieces:
        raise _fail(
            where,
            "pieces",
            "an answerable question has no gold pieces",
            "add the pieces, or mark it type: unanswerable",
        )
    if qtype == "unanswerable" and pieces:
        raise _fail(
            where,
            "pieces",
            "an unanswerable question has gold pieces",
            "remove the pieces, or mark it type: answerable",
        )
    if qtype == "answerable" and compound and len(pieces) < 2:
        raise _fail(where, "compound", "compound but only one piece", "add the other pieces or set compound: false")
    if qtype == "answerable" and not compound and len(pieces) > 1:
        raise _fail(
            where,
            "compound",
            f"{len(pieces)} pieces but compound: false",
            "set compound: true, or merge alternatives into one piece's locators",
        )

    near_miss = raw.get("near_miss", False)
    if not isinstance(near_miss, bool):
        raise _fail(where, "near_miss", f"got {near_miss!r}", "write true or false")
    if near_miss and (qtype != "unanswerable" or not notes.strip()):
        raise _fail(where, "near_miss", "a near miss must be unanswerable and say why in 'notes'",
                    "set type: unanswerable and write in notes where the topic is and why the fact is not")

    absent = raw.get("absent", []) or []
    if not isinstance(absent, list) or not all(isinstance(a, str) and a.strip() for a in absent):
        raise _fail(where, "absent", f"got {absent!r}", "write a list of strings no chunk may contain")
    if absent and qtype == "answerable":
        raise _fail(where, "absent", "only unanswerable questions list absent strings", "remove 'absent'")

    phrasings = []
    for i, ph in enumerate(raw.get("phrasings", []) or []):
        here = f"{where} phrasing {i + 1}"
        if not isinstance(ph, Mapping):
            raise _fail(here, "phrasings", f"got {ph!r}", "write id/zh/en")
        _no_extra(ph, _PHRASING_KEYS, here)
        pid = ph.get("id")
        if not isinstance(pid, str) or not _ID_RE.match(pid):
            raise _fail(here, "id", f"got {pid!r}", "use a lower-case id such as 'terms'")
        phrasings.append(Phrasing(pid, _text(ph, "zh", here), _text(ph, "en", here), str(ph.get("source", ""))))
    dup = [k for k, n in Counter(p.id for p in phrasings).items() if n > 1]
    if dup:
        raise _fail(where, "phrasings", f"phrasing id {dup[0]!r} repeats", "give each phrasing its own id")

    return Question(
        qid, qtype, compound, zh, en, pieces, tuple(phrasings), ref, notes.strip(), tuple(a.strip() for a in absent),
        near_miss,
    )


def parse_benchmark(data: Any, path: Path | None = None) -> Benchmark:
    """Validate the parsed YAML document and build a :class:`Benchmark` (labels only, unresolved)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("questions"), list):
        raise BenchmarkError(
            f"{path or 'benchmark'}: expected a mapping with a 'questions' list. "
            "Fix: see data/benchmark/README.md for the file layout."
        )
    questions = tuple(_parse_question(raw, i) for i, raw in enumerate(data["questions"]))
    dup = [k for k, n in Counter(q.id for q in questions).items() if n > 1]
    if dup:
        raise BenchmarkError(f"question {dup[0]}, field 'id': used more than once. Fix: give each question its own id.")
    refs = [q.casebook_ref for q in questions if q.casebook_ref]
    dup_refs = [k for k, n in Counter(refs).items() if n > 1]
    if dup_refs:
        raise BenchmarkError(f"casebook_ref {dup_refs[0]} is on more than one question. Fix: keep it on one.")
    return Benchmark(questions, path, str(data.get("snapshot", "")))


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


def read_yaml(path: Path, what: str) -> Any:
    """The parsed YAML file at ``path``; a missing file or bad syntax raises :class:`BenchmarkError`
    naming ``what`` (e.g. "benchmark file") and the fix."""
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError as exc:
        raise BenchmarkError(f"{what} {path} does not exist. Fix: pass the right path.") from exc
    except yaml.YAMLError as exc:
        raise BenchmarkError(f"{path} is not valid YAML ({exc}). Fix: correct the syntax at that line.") from exc


def load_benchmark(path: str | Path | None = None, chunks: Sequence[Chunk] | None = None) -> Benchmark:
    """Load and validate the benchmark; with ``chunks``, also resolve its gold pieces to chunk ids.

    Parameters
    ----------
    path
        The YAML file; defaults to ``data/benchmark/questions.yaml``.
    chunks
        The chunk set the benchmark is scored against. Without it, ``Question.pieces`` is unavailable.

    Raises
    ------
    BenchmarkError
        The file is missing or malformed (the message names the question and field), or a
        locator resolves to nothing.
    """
    path = Path(path) if path is not None else DEFAULT_PATH
    bench = parse_benchmark(read_yaml(path, "benchmark file"), path)
    return resolve(bench, chunks) if chunks is not None else bench


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rag_lib.benchmark``: validate, resolve against the snapshot's chunks if present, print counts."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--path", default=str(DEFAULT_PATH))
    parser.add_argument("--chunks", default=None, help="chunks.jsonl (default: the snapshot batch's)")
    parser.add_argument("--batch", default=None,
                        help="a snapshot batch: its chunks, with its own labels (data/benchmark/batches/)")
    parser.add_argument("--audit", action="store_true",
                        help="list candidate gold chunks per piece (copies, phrase hits, better-ranked chunks)")
    parser.add_argument("--question", action="append", default=None, help="with --audit: only this id (repeatable)")
    parser.add_argument("--no-rank", action="store_true", help="with --audit: skip the rankings (no embedder)")
    args = parser.parse_args(argv)
    from rag_lib.io import read_jsonl

    if args.batch and args.chunks:
        raise SystemExit("--batch and --chunks both name the chunks; pass one.")
    chunks_path = Path(args.chunks) if args.chunks else batch_dir(args.batch) / "chunks.jsonl"
    with cli_errors():
        chunks = [Chunk.from_json(r) for r in read_jsonl(chunks_path)] if chunks_path.exists() else None
        if args.batch and chunks is not None:
            from rag_lib.batch_labels import benchmark_for

            on_batch = benchmark_for(args.batch, chunks, load_benchmark(args.path))
            bench = on_batch.benchmark
            for qid, why in on_batch.left_out.items():
                print(f"left out on {args.batch}: {qid}: {why}")
        else:
            bench = load_benchmark(args.path, chunks)
        if args.audit:
            if chunks is None:
                raise SystemExit(f"--audit needs the chunks: {chunks_path} does not exist. "
                                 "Fix: python -m rag_lib.corpus build")
            from rag_lib import label_audit

            ids = args.question or [q.id for q in bench.questions(answerable=True)]
            rankings = None if args.no_rank else label_audit.rankings_for(bench, ids, batch=args.batch)
            print(label_audit.render(label_audit.audit(bench, chunks, rankings, args.question), bench))
            return
    print(f"ok: {bench.summary()}")
    print(f"resolved against {chunks_path}" if chunks is not None else f"not resolved: {chunks_path} does not exist")


if __name__ == "__main__":
    main()
