"""Answer correctness: does an answer state the key facts of its question?

``data/benchmark/key_facts.yaml`` lists, for every answerable question of the benchmark and per
gold piece, the **key facts** a correct answer must state (numbers with units, commands, config
keys, API names), each as a few alternative strings. An answer is **correct** when it states every
checkable key fact of its question; a fact marked ``checkable: false`` (its content is only prose,
or every token of it is already in the question) is reported but left out, and a question with no
checkable fact has ``correct = None`` (counted as not checkable, never as right or wrong).
Phrasings of a question (``q07:terms``) share its facts.

Matching rule
-------------
Answer and fact are normalised the same way, in this order:

1. Unicode NFKC (full-width letters, digits and punctuation become half-width: ``１２８ＭＢ`` is
   ``128MB``, ``，`` is ``,``, the ideographic space is a space);
2. CJK punctuation without an NFKC form is mapped to its ASCII peer (``。`` → ``.``, ``、`` → ``,``,
   curly and corner quotes → ``"``/``'``, ``【】`` → ``[]``, ``《》`` → ``<>``);
3. case folding;
4. thousands separators dropped: a comma between a digit and exactly three digits
   (``10,000`` == ``10000``; so a list written without a space, ``64,128``, reads as ``64128``);
5. whitespace runs collapsed to one space, and whitespace next to a CJK character removed
   (``10 万`` == ``10万``, ``5 分钟`` == ``5分钟``).

A fact is found when one of its alternatives occurs in the answer as a substring, with a boundary
where the alternative starts or ends with an ASCII letter or digit: no ASCII letter or digit may
touch it there (``env`` is not found in ``environment``, ``50`` not in ``500``), and a number may
not continue as a decimal (``$5`` is not found in ``$5.50``, ``64`` not in ``1.64``). Nothing else
is fuzzy: a space between a number and its unit matters (list ``25 MiB`` and ``25MiB``).

Example
-------
>>> r = answer_correct("a39", "单个文件最大 25 MiB，最多 20,000 个文件。")  # doctest: +SKIP
>>> r.correct, [f.alternatives[0] for f in r.missing], r.pieces              # doctest: +SKIP
(False, ['100,000'], {'C1': False, 'C2': True})
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from rag_lib.benchmark import Benchmark, load_benchmark, plain_text, read_yaml
from rag_lib.config import BENCHMARK_DIR
from rag_lib.documents import Chunk
from rag_lib.errors import BenchmarkError
from rag_lib.text import CJK_WIDE_RANGES

DEFAULT_PATH = BENCHMARK_DIR / "key_facts.yaml"

_ENTRY_KEYS = {"id", "pieces", "note"}
_FACT_KEYS = {"any", "source", "checkable", "reason", "note"}
_PIECE_RE = re.compile(r"^C[1-9][0-9]*$")

# ------------------------------------------------------------------------------------ normalising
_CJK_PUNCT = str.maketrans(
    {
        "。": ".",
        "、": ",",
        "“": '"',
        "”": '"',
        "„": '"',
        "「": '"',
        "」": '"',
        "『": '"',
        "』": '"',
        "‘": "'",
        "’": "'",
        "【": "[",
        "】": "]",
        "〔": "[",
        "〕": "]",
        "《": "<",
        "》": ">",
        "〈": "<",
        "〉": ">",
    }
)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_WS = re.compile(r"\s+")
_WS_NEAR_CJK = re.compile(rf"(?<=[{CJK_WIDE_RANGES}]) | (?=[{CJK_WIDE_RANGES}])")
_ALNUM = re.compile(r"[0-9a-z]")


def normalize(text: str) -> str:
    """Text as answers and facts are compared (the module docstring states the five steps)."""
    text = unicodedata.normalize("NFKC", text).translate(_CJK_PUNCT).casefold()
    text = _THOUSANDS.sub("", text)
    text = _WS.sub(" ", text).strip()
    return _WS_NEAR_CJK.sub("", text)


@cache
def _pattern(alternative: str) -> re.Pattern[str]:
    """Regex for one normalised alternative, with the boundaries of the matching rule."""
    left = right = ""
    if _ALNUM.match(alternative[0]):
        left = r"(?<![0-9a-z])" + (r"(?<![0-9]\.)" if alternative[0].isdigit() else "")
    if _ALNUM.match(alternative[-1]):
        right = r"(?![0-9a-z])" + (r"(?!\.[0-9])" if alternative[-1].isdigit() else "")
    return re.compile(left + re.escape(alternative) + right)


def find_alternative(alternatives: Iterable[str], text: str) -> str | None:
    """The first of ``alternatives`` stated in ``text`` (both normalised here), else ``None``."""
    norm = normalize(text)
    for alt in alternatives:
        if _pattern(normalize(alt)).search(norm):
            return alt
    return None


# ------------------------------------------------------------------------------------ data types
@dataclass(frozen=True)
class KeyFact:
    """One fact a correct answer states: any one of ``alternatives`` counts.

    ``source`` is the id of the gold chunk stating it (checked against the corpus by the tests);
    a fact with ``checkable=False`` carries the ``reason`` and is left out of correctness.
    """

    question_id: str
    piece: str
    alternatives: tuple[str, ...]
    source: str
    checkable: bool = True
    reason: str = ""
    note: str = ""

    def describe(self) -> str:
        shown = " | ".join(self.alternatives) if self.alternatives else f"(not checkable: {self.reason})"
        return f"{self.question_id} {self.piece}: {shown}"


@dataclass(frozen=True)
class FactCheck:
    """One checkable fact and the alternative the answer stated (``None``: not stated)."""

    fact: KeyFact
    matched: str | None

    @property
    def found(self) -> bool:
        return self.matched is not None


@dataclass(frozen=True)
class CorrectnessResult:
    """Which key facts an answer states.

    ``correct`` is True when every checkable fact is stated, False when one is missing, and
    ``None`` when the question has no checkable fact (left out of correctness).
    """

    question_id: str
    checks: tuple[FactCheck, ...]
    not_checkable: tuple[KeyFact, ...] = ()

    @property
    def found(self) -> tuple[KeyFact, ...]:
        return tuple(c.fact for c in self.checks if c.found)

    @property
    def missing(self) -> tuple[KeyFact, ...]:
        return tuple(c.fact for c in self.checks if not c.found)

    @property
    def checkable(self) -> bool:
        return bool(self.checks)

    @property
    def correct(self) -> bool | None:
        return all(c.found for c in self.checks) if self.checks else None

    @property
    def pieces(self) -> dict[str, bool | None]:
        """Per gold piece: all its checkable facts stated (``None``: the piece has none)."""
        out: dict[str, bool | None] = {f.piece: None for f in self.not_checkable}
        for c in self.checks:
            out[c.fact.piece] = c.found and out.get(c.fact.piece) is not False
        return dict(sorted(out.items(), key=lambda kv: int(kv[0][1:])))


@dataclass(frozen=True)
class KeyFacts:
    """The key facts of the benchmark's answerable questions, by question id."""

    facts: Mapping[str, tuple[KeyFact, ...]]
    path: Path | None = None
    notes: Mapping[str, str] = field(default_factory=dict)

    def __contains__(self, question_id: str) -> bool:
        return _base_id(question_id) in self.facts

    def __getitem__(self, question_id: str) -> tuple[KeyFact, ...]:
        qid = _base_id(question_id)
        if qid not in self.facts:
            raise BenchmarkError(
                f"question {qid} has no key facts in {self.path or 'key_facts.yaml'}. Fix: add an entry for it "
                "(its facts per gold piece, or facts with checkable: false and a reason)."
            )
        return self.facts[qid]

    def all_facts(self) -> list[KeyFact]:
        return [f for facts in self.facts.values() for f in facts]

    def unlabelled(self, bench: Benchmark) -> list[str]:
        """Answerable questions of ``bench`` that have no entry here."""
        return [q.id for q in bench.questions(answerable=True) if q.id not in self.facts]

    def check(self, question_id: str, answer_text: str) -> CorrectnessResult:
        """Which of the question's key facts ``answer_text`` states (see the module's matching rule)."""
        facts = self[question_id]
        checks = tuple(FactCheck(f, find_alternative(f.alternatives, answer_text)) for f in facts if f.checkable)
        return CorrectnessResult(question_id, checks, tuple(f for f in facts if not f.checkable))


def _base_id(question_id: str) -> str:
    """``q07:terms`` (a phrasing's query id) → ``q07``: phrasings share their question's facts."""
    return question_id.split(":", 1)[0]


# ------------------------------------------------------------------------------------ loading
def _fail(where: str, problem: str, fix: str) -> BenchmarkError:
    return BenchmarkError(f"key facts, {where}: {problem}. Fix: {fix}")


def _parse_fact(raw: Any, qid: str, piece: str, index: int) -> KeyFact:
    where = f"question {qid} piece {piece} fact {index}"
    if not isinstance(raw, Mapping):
        raise _fail(where, f"expected a mapping, got {raw!r}", "write {any: [...], source: <chunk id>}")
    extra = sorted(set(raw) - _FACT_KEYS)
    if extra:
        raise _fail(where, f"unknown field {extra[0]!r}", f"use only {sorted(_FACT_KEYS)}")
    checkable = raw.get("checkable", True)
    if not isinstance(checkable, bool):
        raise _fail(where, f"checkable is {checkable!r}", "write true or false")
    alts = raw.get("any", [])
    if isinstance(alts, str):
        alts = [alts]
    if not isinstance(alts, list) or not all(isinstance(a, str) and normalize(a) for a in alts):
        raise _fail(where, f"'any' is {alts!r}", "write a list of non-empty strings, the corpus wording first")
    if checkable and not alts:
        raise _fail(where, "a checkable fact has no alternatives", "list them under 'any', or set checkable: false")
    reason = str(raw.get("reason", "") or "").strip()
    if not checkable and not reason:
        raise _fail(where, "checkable: false without a reason", "say why no string can check it under 'reason'")
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise _fail(where, f"source is {source!r}", "give the id of the gold chunk that states the fact")
    note = str(raw.get("note", "") or "").strip()
    return KeyFact(qid, piece, tuple(a.strip() for a in alts), source.strip(), checkable, reason, note)


def parse_key_facts(data: Any, bench: Benchmark, path: Path | None = None) -> KeyFacts:
    """Validate the parsed YAML document against the benchmark's questions and build :class:`KeyFacts`.

    Raises
    ------
    BenchmarkError
        Naming the question (and piece, fact) and the fix: an id not in the benchmark, an
        unanswerable question, a piece the question lacks or misses, a piece with no facts, a
        malformed fact.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("questions"), list):
        raise BenchmarkError(
            f"{path or 'key facts'}: expected a mapping with a 'questions' list. "
            "Fix: see the comment block at the top of data/benchmark/key_facts.yaml."
        )
    snapshot = data.get("snapshot")
    if snapshot and bench.snapshot and snapshot != bench.snapshot:
        raise BenchmarkError(
            f"{path or 'key facts'}: written for snapshot {snapshot!r}, the benchmark is on {bench.snapshot!r}. "
            "Fix: re-check every fact against the new snapshot's gold chunks, then update 'snapshot'."
        )
    known = {q.id: q for q in bench}
    facts: dict[str, tuple[KeyFact, ...]] = {}
    notes: dict[str, str] = {}
    ids = [e.get("id") if isinstance(e, Mapping) else None for e in data["questions"]]
    dup = [k for k, n in Counter(ids).items() if n > 1]
    if dup:
        raise _fail(f"question {dup[0]}", "listed more than once", "merge its entries into one")
    for i, entry in enumerate(data["questions"]):
        if not isinstance(entry, Mapping):
            raise _fail(f"questions[{i}]", f"expected a mapping, got {entry!r}", "write id/pieces")
        qid = entry.get("id")
        where = f"question {qid}"
        extra = sorted(set(entry) - _ENTRY_KEYS)
        if extra:
            raise _fail(where, f"unknown field {extra[0]!r}", f"use only {sorted(_ENTRY_KEYS)}")
        if qid not in known:
            raise _fail(where, "no such question in questions.yaml", "correct the id or remove the entry")
        question = known[qid]
        if not question.answerable:
            raise _fail(
                where,
                "the question is unanswerable, so it has no key facts (refusal correctness judges it)",
                "remove its entry",
            )
        pieces = entry.get("pieces")
        if not isinstance(pieces, Mapping) or not pieces:
            raise _fail(where, "no pieces", "list the facts per gold piece: pieces: {C1: [...], …}")
        expected = [p.id for p in question.gold]
        unknown = [p for p in pieces if p not in expected or not _PIECE_RE.match(str(p))]
        if unknown:
            raise _fail(where, f"piece {unknown[0]!r} is not a gold piece of it ({expected})", "use its piece ids")
        lacking = [p for p in expected if p not in pieces]
        if lacking:
            raise _fail(
                where,
                f"gold piece {lacking[0]} has no facts",
                "add its facts, or one fact with checkable: false and a reason",
            )
        out: list[KeyFact] = []
        for pid in expected:
            raw_facts = pieces[pid]
            if not isinstance(raw_facts, list) or not raw_facts:
                raise _fail(
                    f"{where} piece {pid}",
                    "empty facts",
                    "list at least one fact, or one fact with checkable: false and a reason",
                )
            out.extend(_parse_fact(raw, qid, pid, j + 1) for j, raw in enumerate(raw_facts))
        facts[qid] = tuple(out)
        if entry.get("note"):
            notes[qid] = str(entry["note"]).strip()
    return KeyFacts(facts, path, notes)


def load_key_facts(path: str | Path | None = None, bench: Benchmark | None = None) -> KeyFacts:
    """Load and validate the key facts (default ``data/benchmark/key_facts.yaml``) against ``bench``.

    ``bench`` defaults to ``load_benchmark()`` (labels only; no chunks needed).
    """
    path = Path(path) if path is not None else DEFAULT_PATH
    return parse_key_facts(read_yaml(path, "key facts file"), bench if bench is not None else load_benchmark(), path)


@cache
def _default_key_facts() -> KeyFacts:
    return load_key_facts()


def answer_correct(question_id: str, answer_text: str, key_facts: KeyFacts | None = None) -> CorrectnessResult:
    """Whether ``answer_text`` states every checkable key fact of ``question_id``.

    Parameters
    ----------
    question_id
        A benchmark id (``a39``) or a phrasing's query id (``q07:terms``, which shares q07's facts).
    answer_text
        The answer, in any language; citations and Markdown may stay in it.
    key_facts
        Defaults to ``data/benchmark/key_facts.yaml`` (loaded once).

    Returns
    -------
    CorrectnessResult
        Facts found and missing; ``correct`` is None when the question has no checkable fact.

    Raises
    ------
    BenchmarkError
        The question has no entry in the key facts (unanswerable, unknown, or not yet labelled).
    """
    return (key_facts or _default_key_facts()).check(question_id, answer_text)


def correctness_summary(results: Sequence[CorrectnessResult]) -> dict[str, Any]:
    """Counts over answers: ``answers``, ``checked`` (a checkable fact exists), ``correct``,
    ``not_checkable``, and ``rate`` = correct / checked (NaN when nothing was checked)."""
    checked = [r for r in results if r.checkable]
    correct = sum(bool(r.correct) for r in checked)
    return {
        "answers": len(results),
        "checked": len(checked),
        "correct": correct,
        "not_checkable": len(results) - len(checked),
        "rate": correct / len(checked) if checked else float("nan"),
    }


# ------------------------------------------------------------------------------------ corpus check
def source_problems(key_facts: KeyFacts, bench: Benchmark, chunks: Sequence[Chunk]) -> list[str]:
    """Facts the corpus does not back: each fact's ``source`` must be a gold chunk of its question
    (``bench`` resolved), and a checkable fact's first alternative must be stated in that chunk
    (matching rule above, on the chunk text or its plain rendering)."""
    by_id = {c.id: c for c in chunks}
    problems = []
    for fact in key_facts.all_facts():
        gold = bench[fact.question_id].gold_chunks
        if fact.source not in gold:
            problems.append(f"{fact.describe()}: source {fact.source!r} is not a gold chunk of the question")
            continue
        if not fact.checkable or not fact.alternatives:
            continue
        first = fact.alternatives[:1]
        if not _stated_in(first, by_id[fact.source]):
            stating = sorted(c for c in gold if _stated_in(first, by_id[c]))
            problems.append(
                f"{fact.describe()}: {first[0]!r} is not in source {fact.source}; gold chunks stating it: "
                f"{stating or 'none (reword the first alternative as the corpus has it)'}"
            )
    return problems


def _stated_in(alternatives: Sequence[str], chunk: Chunk) -> bool:
    """Whether the chunk states one of ``alternatives``, in its Markdown or its plain rendering."""
    return any(find_alternative(alternatives, text) is not None for text in (chunk.text, plain_text(chunk.text)))
