"""Your questions on your corpus: a documented YAML or JSONL file, or BEIR's queries + qrels, checked on load.

The file (YAML; JSONL holds one question object per line, with ``corpus`` and ``languages`` on every line)::

    corpus: python-docs-3.11      # the batch the locators are written against (python -m rag_lib corpus import)
    languages: [en, zh]           # zh and/or en; every question gives its text in each
    questions:
      - id: p01                   # lower-case, unique
        type: answerable          # or unanswerable (then no pieces; near_miss: true when the topic is in the
                                  # corpus but the asked fact is not, and notes say where and why)
        en: How do I read a file line by line?
        zh: 怎么逐行读取文件？
        pieces:                   # what a complete answer needs; several pieces = a compound question
          - what: iterate over the file object
            locators:             # any of them covers the piece: page slug, heading-path suffix, verbatim phrase
              - {page: tutorial/inputoutput, heading: [Methods of File Objects], phrase: "loop over the file object"}
            key_facts: ["for line in f"]   # optional: strings a correct answer states (any one of them)

Every error names the file and the line of the question (or of the JSONL line) and the fix: an unknown field,
a duplicate id (with the line of the first), a locator whose phrase is on no page of the corpus (with the
closest candidates), a language the file declares but a question lacks.

BEIR's ``queries.jsonl`` + ``qrels/test.tsv`` are read by :func:`load_beir_questions`: a query with relevant
documents is answerable, one piece whose locators are its relevant documents (BEIR judges documents, and any
relevant one answers). A document that is one chunk is compiled to a locator with a phrase (its opening
words); a longer one stays document-level (every chunk of the document counts) and the question is marked
(:attr:`YourQuestions.document_level`), so a reader knows its gold is coarser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rag_lib.benchmark.parse import parse_benchmark
from rag_lib.benchmark.questions import LANGS, Benchmark, Locator, Piece, Question
from rag_lib.benchmark.resolve import resolve
from rag_lib.core.documents import Chunk, id_slug
from rag_lib.core.errors import BenchmarkError
from rag_lib.core.io import jsonl_objects, read_utf8
from rag_lib.evaluation.key_facts import KeyFact, KeyFacts

_TOP_KEYS = {"corpus", "languages", "questions"}
NOT_ASKED = "(not asked in this language)"  # the text of a language the file does not declare: never ranked
_QUESTION_KEYS = {"id", "type", "en", "zh", "pieces", "notes", "compound", "near_miss"}
_PIECE_KEYS = {"what", "locators", "key_facts"}


@dataclass(frozen=True)
class YourQuestions:
    """The questions resolved on the corpus, their key facts, and where each was written."""

    benchmark: Benchmark
    key_facts: KeyFacts
    corpus: str
    languages: tuple[str, ...]
    lines: Mapping[str, int] = field(default_factory=dict)  # question id → line in the file
    document_level: frozenset[str] = frozenset()  # questions whose gold is whole documents (BEIR qrels)

    def check_language(self, lang: str) -> str:
        if lang not in self.languages:
            raise BenchmarkError(f"the questions of {self.benchmark.path} are in {list(self.languages)}, not {lang!r}. "
                                 f"Fix: --lang {self.languages[0]}")
        return lang

    def summary(self) -> str:
        items = self.benchmark.items
        answerable = sum(q.answerable for q in items)
        coarse = f"; {len(self.document_level)} with document-level gold" if self.document_level else ""
        return (f"{len(items)} questions on {self.corpus} ({', '.join(self.languages)}): {answerable} answerable, "
                f"{len(items) - answerable} unanswerable, {len(self.key_facts.all_facts())} key facts{coarse}")


def _read(path: Path) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    """The file's header (corpus, languages) and its questions, each with the line it starts on."""
    text = read_utf8(path, "questions file", BenchmarkError)
    if path.suffix == ".jsonl":
        rows = list(jsonl_objects(text, str(path), BenchmarkError))
        header = {k: rows[0][1].get(k) for k in ("corpus", "languages")} if rows else {}
        return header, [(n, {k: v for k, v in r.items() if k not in ("corpus", "languages")}) for n, r in rows]
    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text)  # the same document as nodes: where each question starts
    except yaml.YAMLError as exc:
        raise BenchmarkError(f"{path} is not valid YAML ({exc}). Fix: correct the syntax at that line.") from exc
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise BenchmarkError(f"{path}: expected a mapping with corpus, languages and a questions list. Fix: see "
                             "the layout in rag_lib/evaluation/your_questions.py or the README")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise BenchmarkError(f"{path}: unknown top-level field(s) {unknown}. Fix: use only {sorted(_TOP_KEYS)}")
    items = next(value.value for key, value in root.value if key.value == "questions")
    return data, [(node.start_mark.line + 1, raw) for node, raw in zip(items, data["questions"], strict=True)]


def _languages(header: Mapping[str, Any], path: Path) -> tuple[str, ...]:
    langs = header.get("languages")
    if not isinstance(langs, list) or not langs or any(lang not in LANGS for lang in langs):
        raise BenchmarkError(f"{path}: languages {langs!r}. Fix: a list of one or both of {list(LANGS)} (the "
                             "workbook's questions are in Chinese and/or English; the corpus may be in either)")
    return tuple(langs)


def _as_benchmark_question(raw: Mapping[str, Any], langs: tuple[str, ...], where: str) -> tuple[dict[str, Any],
                                                                                                 list[tuple[str, ...]]]:
    """The question in questions.yaml's shape (which :func:`parse_benchmark` checks field by field), and its
    key facts per piece."""
    if not isinstance(raw, Mapping):
        raise BenchmarkError(f"{where}: a question must be a mapping of id/type/text/pieces")
    unknown = sorted(set(raw) - _QUESTION_KEYS)
    if unknown:
        raise BenchmarkError(f"{where}: unknown field(s) {unknown}. Fix: use only {sorted(_QUESTION_KEYS)}")
    missing = [lang for lang in langs if not str(raw.get(lang) or "").strip()]
    if missing:
        raise BenchmarkError(f"{where}: no {' or '.join(missing)} text, which the file's languages {list(langs)} "
                             "require. Fix: write the question in each declared language")
    pieces, facts = [], []
    for i, piece in enumerate(raw.get("pieces") or [], 1):
        if not isinstance(piece, Mapping) or set(piece) - _PIECE_KEYS:
            raise BenchmarkError(f"{where}, piece {i}: a piece holds only {sorted(_PIECE_KEYS)}")
        pieces.append({"id": f"C{i}", "what": piece.get("what"), "locators": piece.get("locators")})
        alternatives = piece.get("key_facts") or []
        if not isinstance(alternatives, list) or not all(isinstance(a, str) and a.strip() for a in alternatives):
            raise BenchmarkError(f"{where}, piece {i}: key_facts {alternatives!r}. Fix: a list of strings, any of "
                                 "which a correct answer states")
        facts.append(tuple(a.strip() for a in alternatives))
    converted = {"id": raw.get("id"), "type": raw.get("type"), "compound": raw.get("compound", len(pieces) > 1),
                 "pieces": pieces, **({"notes": raw["notes"]} if raw.get("notes") else {}),
                 **({"near_miss": raw["near_miss"]} if "near_miss" in raw else {})}
    for lang in LANGS:  # questions.yaml's shape has both; an undeclared language is left empty (never asked)
        converted[lang] = str(raw.get(lang) or "").strip() or NOT_ASKED
    return converted, facts


def load_questions(path: Path, chunks: Sequence[Chunk]) -> YourQuestions:
    """Read, check and resolve a questions file against ``chunks`` (the corpus batch's).

    Raises
    ------
    BenchmarkError
        Naming the file, the line and the fix (see the module docstring for what is checked).
    """
    header, raw_questions = _read(path)
    langs = _languages(header, path)
    questions: list[Question] = []
    facts: dict[str, tuple[KeyFact, ...]] = {}
    lines: dict[str, int] = {}
    for line, raw in raw_questions:
        where = f"{path}, line {line}"
        converted, piece_facts = _as_benchmark_question(raw, langs, where)
        try:
            [question] = parse_benchmark({"questions": [converted]}, path).items
        except BenchmarkError as exc:
            raise BenchmarkError(f"{where}: {exc}") from None
        if question.id in lines:
            raise BenchmarkError(f"{where}: question id {question.id!r} is already used on line {lines[question.id]}. "
                                 "Fix: give each question its own id")
        try:
            [question] = resolve(Benchmark((question,), path), chunks).items
        except BenchmarkError as exc:
            raise BenchmarkError(f"{where}: {exc}") from None
        lines[question.id] = line
        questions.append(question)
        facts[question.id] = tuple(KeyFact(question.id, f"C{i}", alternatives, "")
                                   for i, alternatives in enumerate(piece_facts, 1) if alternatives)
    if not questions:
        raise BenchmarkError(f"{path} holds no question. Fix: add questions (see the layout in the README)")
    corpus = str(header.get("corpus") or "")
    return YourQuestions(Benchmark(tuple(questions), path, corpus), KeyFacts(facts, path), corpus, langs, lines)


QRELS_HEADER = "query-id\tcorpus-id\tscore"


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A BEIR qrels TSV (header ``query-id corpus-id score``) as ``{query: {document: relevance}}``.

    Raises
    ------
    BenchmarkError
        Naming the file and line: a missing header, a line without three fields, a score that is not an integer.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].split("\t") != QRELS_HEADER.split("\t"):
        raise BenchmarkError(f"{path}, line 1: a BEIR qrels file starts with the header {QRELS_HEADER!r}")
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not fields[2].strip().lstrip("-").isdigit():
            raise BenchmarkError(f"{path}, line {number}: expected query-id, corpus-id and an integer score "
                                 f"separated by tabs: {line[:80]!r}")
        qrels.setdefault(fields[0], {})[fields[1]] = int(fields[2])
    return qrels


def load_beir_questions(queries: Path, qrels: Path, chunks: Sequence[Chunk], lang: str = "en",
                        corpus: str = "") -> YourQuestions:
    """BEIR's queries and qrels as questions on an imported ``corpus.jsonl`` (one page per document, its slug
    the document's ``_id``).

    Raises
    ------
    BenchmarkError
        Naming the file and line: a query without ``_id`` or text, a repeated ``_id``, a qrels line naming a
        query that is not in ``queries`` or a document that is not in the corpus.
    """
    if lang not in LANGS:
        raise BenchmarkError(f"language {lang!r}: use one of {list(LANGS)}")
    texts: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, row in jsonl_objects(read_utf8(queries, "queries file", BenchmarkError), str(queries), BenchmarkError):
        qid, text = str(row.get("_id") or ""), str(row.get("text") or "").strip()
        if not qid or not text:
            raise BenchmarkError(f"{queries}, line {number}: a query needs `_id` and `text`")
        if qid in texts:
            raise BenchmarkError(f"{queries}, line {number}: `_id` {qid!r} is already used on line {lines[qid]}")
        texts[qid], lines[qid] = text, number
    relevant = read_qrels(qrels)
    by_page: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_page.setdefault(c.page, []).append(c)
    unknown_queries = sorted(set(relevant) - set(texts))
    if unknown_queries:
        raise BenchmarkError(f"{qrels} judges queries {unknown_queries[:5]} that {queries} does not hold")
    questions, coarse = [], set()
    for qid, text in texts.items():
        docs = sorted(d for d, score in relevant.get(qid, {}).items() if score > 0)
        missing = [d for d in docs if id_slug(d) not in by_page]
        if missing:
            raise BenchmarkError(f"{qrels}: query {qid} judges documents {missing[:3]} relevant that are not pages of "
                                 "the corpus; import the same corpus.jsonl (python -m rag_lib corpus import)")
        locators = []
        for doc in docs:
            page = by_page[id_slug(doc)]
            if len(page) == 1:  # the document is one chunk: a phrase pins it
                locators.append(Locator(page[0].page, (), " ".join(page[0].text.split()[:8])))
            else:  # document-level: every chunk of it covers the piece (an empty phrase is in every chunk)
                locators.append(Locator(page[0].page, (), ""))
                coarse.add(qid)
        gold = (Piece("C1", f"a document the qrels judge relevant ({len(docs)})", tuple(locators)),) if docs else ()
        texts_by_lang = {other: text if other == lang else NOT_ASKED for other in LANGS}
        questions.append(Question(qid, "answerable" if docs else "unanswerable", False, texts_by_lang["zh"],
                                  texts_by_lang["en"], gold))
    bench = resolve(Benchmark(tuple(questions), queries, corpus), chunks)
    return YourQuestions(bench, KeyFacts({}, qrels), corpus, (lang,), lines, frozenset(coarse))
