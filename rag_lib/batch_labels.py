"""The benchmark's labels checked against any batch, reported instead of raised.

``questions.yaml`` is labelled on one batch. On another batch (the wide snapshot) a locator may
match nothing, and an unanswerable question's ``absent`` string may now occur: a page of that
batch may answer it. :func:`check_labels` lists both, per question, so that a batch's scores are
read with its label gaps in view; relabelling stays a person's decision
(``data/benchmark/README.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_lib.benchmark import Benchmark, collapse_ws, load_benchmark, plain_text
from rag_lib.documents import Chunk


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
