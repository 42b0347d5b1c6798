"""The key facts file (``data/benchmark/key_facts.yaml``): its types, its validation against the
benchmark, and the check that each fact's source chunk states it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from rag_lib.benchmark import Benchmark, load_benchmark, plain_text, read_yaml
from rag_lib.core.config import BENCHMARK_DIR, batch_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError
from rag_lib.core.io import read_jsonl
from rag_lib.evaluation.fact_matching import find_alternative, normalize, states_any

DEFAULT_PATH = BENCHMARK_DIR / "key_facts.yaml"
# A key fact stated by more than this share of a batch's chunks is stated by almost any answer about the docs
# ("Wrangler", "binding", "env"): it says nothing about whether an answer is right, so the loader refuses it.
MAX_CHUNK_SHARE = 0.10

_ENTRY_KEYS = {"id", "pieces", "note"}
_FACT_KEYS = {"any", "source", "checkable", "reason", "note"}
_PIECE_RE = re.compile(r"^C[1-9][0-9]*$")


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


def load_key_facts(path: str | Path | None = None, bench: Benchmark | None = None,
                   chunks: Sequence[Chunk] | None = None) -> KeyFacts:
    """Load and validate the key facts (default ``data/benchmark/key_facts.yaml``) against ``bench``.

    ``bench`` defaults to ``load_benchmark()`` (labels only; no chunks needed). With ``chunks`` (the batch the
    facts are checked on), a checkable fact stated by more than :data:`MAX_CHUNK_SHARE` of them is refused.
    """
    path = Path(path) if path is not None else DEFAULT_PATH
    facts = parse_key_facts(read_yaml(path, "key facts file"), bench if bench is not None else load_benchmark(), path)
    common = common_facts(facts, chunks) if chunks is not None else []
    if common:
        listed = "; ".join(f"{f.describe()} ({share:.0%})" for f, share in common)
        raise BenchmarkError(
            f"{path}: {len(common)} checkable key fact(s) are stated by more than {MAX_CHUNK_SHARE:.0%} of the "
            f"batch's chunks, so almost any answer states them: {listed}. Fix: give each a wording only a right "
            "answer has (a config key, a call, a path), or set checkable: false with the reason.")
    return facts


def common_facts(key_facts: KeyFacts, chunks: Sequence[Chunk],
                 max_share: float = MAX_CHUNK_SHARE) -> list[tuple[KeyFact, float]]:
    """Each checkable fact stated by more than ``max_share`` of the embeddable ``chunks``, with its share."""
    texts = [normalize(c.text) for c in chunks if c.embeddable]
    out = []
    for facts in key_facts.facts.values():
        for fact in facts:
            if fact.checkable and texts:
                share = sum(states_any(fact.alternatives, t) for t in texts) / len(texts)
                if share > max_share:
                    out.append((fact, share))
    return out


@cache
def default_key_facts() -> KeyFacts:
    """The development set's key facts, checked on the labelled batch (none stated by too many chunks)."""
    chunks = [Chunk.from_json(row) for row in read_jsonl(batch_dir() / "chunks.jsonl")]  # the committed chunks
    return load_key_facts(chunks=chunks)


# ------------------------------------------------------------------------------------ corpus check
def partly_checkable(key_facts: KeyFacts) -> list[dict[str, Any]]:
    """The questions with both checkable key facts and ones that cannot be checked as strings: correctness
    judges only part of what they ask."""
    rows = []
    for qid, facts in sorted(key_facts.facts.items()):
        unchecked = [f for f in facts if not f.checkable]
        if unchecked and len(unchecked) < len(facts):
            rows.append({"question": qid, "checkable facts": len(facts) - len(unchecked),
                         "uncheckable facts": len(unchecked), "why": unchecked[0].reason})
    return rows


def source_problems(key_facts: KeyFacts, bench: Benchmark, chunks: Sequence[Chunk]) -> list[str]:
    """Facts the corpus does not back: each fact's ``source`` must be a gold chunk of its question
    (``bench`` resolved), and a checkable fact's first alternative must be stated in that chunk
    (the rule of :mod:`~rag_lib.evaluation.fact_matching`, on the chunk text or its plain rendering)."""
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
        if not stated_in(first, by_id[fact.source]):
            stating = sorted(c for c in gold if stated_in(first, by_id[c]))
            problems.append(
                f"{fact.describe()}: {first[0]!r} is not in source {fact.source}; gold chunks stating it: "
                f"{stating or 'none (reword the first alternative as the corpus has it)'}"
            )
    return problems


def stated_in(alternatives: Sequence[str], chunk: Chunk) -> bool:
    """Whether the chunk states one of ``alternatives``, in its Markdown or its plain rendering."""
    return any(find_alternative(alternatives, text) is not None for text in (chunk.text, plain_text(chunk.text)))
