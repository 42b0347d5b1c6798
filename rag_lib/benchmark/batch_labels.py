"""The benchmark's labels checked against any batch, reported instead of raised.

``questions.yaml`` is labelled on one batch. On another batch (the wide snapshot) a locator may
match nothing, and an unanswerable question's ``absent`` string may now occur: a page of that
batch may answer it. :func:`check_labels` lists both, per question, so that a batch's scores are
read with its label gaps in view; relabelling stays a person's decision
(``data/benchmark/README.md``). Those decisions live in ``data/benchmark/batches/<batch>.yaml``
(:func:`load_batch_labels`), and :func:`benchmark_for` gives the benchmark as it holds on a batch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_lib.benchmark import Benchmark, Locator, collapse_ws, load_benchmark, plain_text, read_yaml, resolve
from rag_lib.core.config import BENCHMARK_DIR
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import BenchmarkError


@dataclass(frozen=True)
class AbsentHit:
    """An unanswerable question's ``absent`` string found in a batch."""

    question: str
    term: str
    chunks: tuple[str, ...]
    pages: tuple[str, ...]


@dataclass(frozen=True)
class LabelCheck:
    """Locators that match nothing and ``absent`` strings that occur, in one batch."""

    batch: str
    n_questions: int
    n_locators: int
    unresolved: tuple[dict[str, Any], ...] = ()  # question, piece, locator number, locator
    absent_hits: tuple[AbsentHit, ...] = field(default=())

    @property
    def absent_failed(self) -> tuple[str, ...]:
        """Questions whose absent check fails in this batch, in benchmark order."""
        return tuple(dict.fromkeys(h.question for h in self.absent_hits))

    def to_json(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "questions": self.n_questions,
            "locators": self.n_locators,
            "n_unresolved": len(self.unresolved),
            "unresolved_locators": list(self.unresolved),
            "absent_failed": list(self.absent_failed),
            "absent_hits": [
                {"question": h.question, "term": h.term, "chunks": len(h.chunks), "pages": list(h.pages)}
                for h in self.absent_hits
            ],
        }


def check_labels(batch: str, chunks: Sequence[Chunk], bench: Benchmark | None = None) -> LabelCheck:
    """Check every locator and ``absent`` string of ``bench`` against ``chunks`` of ``batch``.

    Matching is :meth:`rag_lib.benchmark.Locator.matches` and the absent rule of
    :func:`rag_lib.benchmark.resolve` (case-insensitive, whitespace-collapsed, raw or plain text).
    """
    bench = bench or load_benchmark()
    unresolved, hits, n_locators = [], [], 0
    texts = [(c, collapse_ws(c.text).casefold(), plain_text(c.text).casefold()) for c in chunks]
    for q in bench.items:
        for piece in q.gold:
            for i, loc in enumerate(piece.locators, 1):
                n_locators += 1
                if not any(loc.matches(c) for c in chunks):
                    unresolved.append({"question": q.id, "piece": piece.id, "locator": i, "where": loc.describe()})
        for term in q.absent:
            key = collapse_ws(term).casefold()
            found = [c for c, t, p in texts if key in t or key in p]
            if found:
                pages = tuple(dict.fromkeys(c.page for c in found))
                hits.append(AbsentHit(q.id, term, tuple(c.id for c in found), pages))
    return LabelCheck(batch, len(bench.items), n_locators, tuple(unresolved), tuple(hits))


# --------------------------------------------------------------------------- labels that hold in one batch
BATCH_LABELS_DIR = BENCHMARK_DIR / "batches"


@dataclass(frozen=True)
class AbsentReview:
    """A person's call on an unanswerable question whose ``absent`` string occurs in a batch."""

    question: str
    answered: bool  # True: a page of this batch answers it, so it is not unanswerable there
    reason: str
    chunks: tuple[str, ...] = ()


@dataclass(frozen=True)
class BatchLabels:
    """Labels that hold in one batch only (``data/benchmark/batches/<batch>.yaml``).

    ``locators`` add gold chunks on pages the labelled batch lacks, as ``(question, piece,
    Locator, reason)``; ``absent_review`` settles each unanswerable question whose absent string
    occurs in the batch.
    """

    batch: str
    locators: tuple[tuple[str, str, Locator, str], ...] = ()
    absent_review: Mapping[str, AbsentReview] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"batch": self.batch, "extra_locators": len(self.locators),
                "absent_reviewed": {q: ("answered" if r.answered else "still unanswerable")
                                    for q, r in sorted(self.absent_review.items())}}


def load_batch_labels(batch: str, root: Path | None = None) -> BatchLabels:
    """The batch's extra labels; none when it has no file (the labelled batch needs none)."""
    path = (root or BATCH_LABELS_DIR) / f"{batch}.yaml"
    if not path.exists():
        return BatchLabels(batch)
    raw = read_yaml(path, "batch labels file") or {}
    where = str(path)
    if raw.get("batch") != batch:
        raise BenchmarkError(f"{where}: 'batch' is {raw.get('batch')!r}, expected {batch!r}. Fix: the file name "
                             "and its 'batch' key must agree.")
    locators = []
    for i, entry in enumerate(raw.get("locators") or [], 1):
        missing = {"question", "piece", "page", "phrase", "reason"} - set(entry)
        if missing:
            raise BenchmarkError(f"{where}: locator {i} lacks {sorted(missing)}. Fix: write question, piece, page, "
                                 "heading (list), phrase and reason.")
        loc = Locator(entry["page"], tuple(entry.get("heading") or ()), entry["phrase"])
        locators.append((entry["question"], entry["piece"], loc, entry["reason"]))
    reviews = {}
    for i, entry in enumerate(raw.get("absent_review") or [], 1):
        if not isinstance(entry.get("answered"), bool) or not entry.get("question") or not entry.get("reason"):
            raise BenchmarkError(f"{where}: absent_review {i} needs question, answered (true/false) and reason.")
        reviews[entry["question"]] = AbsentReview(entry["question"], entry["answered"], entry["reason"],
                                                  tuple(entry.get("chunks") or ()))
    return BatchLabels(batch, tuple(locators), reviews)


def label_status(batch: str, chunks: Sequence[Chunk], bench: Benchmark | None = None) -> dict[str, Any]:
    """:func:`check_labels` and the batch's own labels, as notebook 00 reports them: how many extra gold
    locators the batch has, and which absent-check failures a reviewer settled (answered here or not)."""
    check = check_labels(batch, chunks, bench).to_json()
    own = load_batch_labels(batch)
    failed = check["absent_failed"]
    reviewed = own.absent_review
    return {**check, "extra_locators": len(own.locators),
            "answered_here": [q for q in failed if q in reviewed and reviewed[q].answered],
            "still_unanswerable": [q for q in failed if q in reviewed and not reviewed[q].answered],
            "unreviewed": [q for q in failed if q not in reviewed]}


@dataclass(frozen=True)
class BatchBenchmark:
    """The benchmark as it holds on one batch, and the questions left out of it and why."""

    benchmark: Benchmark
    labels: BatchLabels
    left_out: Mapping[str, str]  # question id -> reason

    def to_json(self) -> dict[str, Any]:
        return {**self.labels.to_json(), "left_out": dict(self.left_out)}


def benchmark_for(batch: str, chunks: Sequence[Chunk], bench: Benchmark | None = None,
                  labels: BatchLabels | None = None) -> BatchBenchmark:
    """``bench`` resolved on ``batch``: the batch's extra locators added, absent strings settled.

    An unanswerable question whose absent string occurs in the batch stays in only when a
    reviewer found it still unanswerable there (its absent check then no longer applies); one the
    batch answers, or one nobody reviewed, is left out and named in ``left_out``.

    Raises
    ------
    BenchmarkError
        An extra locator names an unknown question or piece, or a locator resolves to nothing.
    """
    bench = bench or load_benchmark()
    labels = labels or load_batch_labels(batch)
    known = {(q.id, p.id) for q in bench for p in q.gold}
    for qid, pid, _, _ in labels.locators:
        if (qid, pid) not in known:
            raise BenchmarkError(f"batch labels of {batch}: no piece {pid} of an answerable question {qid}. "
                                 "Fix: name an existing question and piece.")
    hits = check_labels(batch, chunks, bench).absent_failed
    left_out: dict[str, str] = {}
    items = []
    for q in bench.items:
        if q.id in hits:
            review = labels.absent_review.get(q.id)
            if review is None:
                left_out[q.id] = f"its absent terms occur in {batch} and nobody has reviewed it there"
                continue
            if review.answered:
                left_out[q.id] = f"{batch} answers it: {review.reason}"
                continue
            q = dataclasses.replace(q, absent=())
        extra = [(pid, loc) for qid, pid, loc, _ in labels.locators if qid == q.id]
        if extra:
            gold = tuple(dataclasses.replace(p, locators=p.locators + tuple(loc for pid, loc in extra if pid == p.id))
                         for p in q.gold)
            q = dataclasses.replace(q, gold=gold)
        items.append(q)
    resolved = resolve(Benchmark(tuple(items), bench.path, bench.snapshot), chunks)
    return BatchBenchmark(resolved, labels, left_out)
