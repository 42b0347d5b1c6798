"""Someone else's ranking diagnosed against the workbook's gold: which layer fails, per question.

The run ranks the exported corpus (its document ids are chunk ids of the chunking the gold was compiled
for). A question's layer is judged by its worst piece, as :func:`rag_lib.evaluation.metrics.diagnose`
judges the workbook's own rankings: every piece within the Top-k (``in_top_k``), the worst within the
Top-2k (``just_outside``), deeper (``ranked_deep``). A run is cut at its depth; a piece it does not list
ranks below that depth, which is ``ranked_deep`` when the depth reaches past 2k, and ``beyond_depth``
(not known) otherwise. ``not_in_corpus`` is a piece whose locators resolve to no chunk.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from rag_lib.benchmark.questions import Question
from rag_lib.core.errors import WorkbookError
from rag_lib.evaluation.metrics import Layer, layer_of
from rag_lib.evaluation.stats import wilson
from rag_lib.exchange.trec import RunFile

BEYOND_DEPTH = "beyond_depth"
LAYERS = (Layer.IN_TOP_K.value, Layer.JUST_OUTSIDE.value, Layer.RANKED_DEEP.value, BEYOND_DEPTH,
          Layer.NOT_IN_CORPUS.value)


@dataclass(frozen=True)
class QuestionLayer:
    """One answerable question's layer in the run, with the first rank of each piece (None: not in the run)."""

    question: str
    layer: str
    piece_ranks: tuple[int | None, ...]


@dataclass(frozen=True)
class LayerShare:
    layer: str
    count: int
    n: int

    @property
    def wilson95(self) -> tuple[float, float] | None:
        return wilson(self.count, self.n)


def check_run(run: RunFile, questions: Sequence[Question], documents: Collection[str]) -> None:
    """Refuse a run that ranks another corpus or other questions, naming what is off and the fix."""
    known = {q.id for q in questions}
    unknown_queries = sorted(set(run.ranked) - known)
    if unknown_queries:
        raise WorkbookError(f"{run.path} ranks queries {unknown_queries[:5]} that are not questions of the "
                            f"benchmark ({len(unknown_queries)} in all); rank the exported queries.jsonl, whose ids "
                            "are the benchmark's")
    unknown = sorted({doc for ids in run.ranked.values() for doc in ids} - set(documents))
    if unknown:
        raise WorkbookError(f"{run.path} ranks {len(unknown)} documents that are not chunks of this corpus (e.g. "
                            f"{unknown[:3]}); rank the exported corpus.jsonl of the same batch and chunking")


def diagnose_run(run: RunFile, questions: Sequence[Question], k: int,
                 documents: Collection[str]) -> list[QuestionLayer]:
    """The layer of every answerable question the run ranks (in question order)."""
    if k < 1:
        raise ValueError(f"k must be 1 or more, got {k}")
    check_run(run, questions, documents)
    out = []
    for q in questions:
        if not q.answerable or q.id not in run.ranked:
            continue
        position = {doc: i for i, doc in enumerate(run.ranked[q.id], 1)}
        ranks = tuple(min((position[c] for c in piece if c in position), default=None) for piece in q.pieces)
        depth = len(run.ranked[q.id])
        if not q.pieces or any(not piece for piece in q.pieces):
            layer = Layer.NOT_IN_CORPUS.value
        elif any(r is None for r in ranks):  # ranked below the run's depth: deep when that reaches past 2k
            layer = Layer.RANKED_DEEP.value if depth > 2 * k else BEYOND_DEPTH
        else:
            layer = layer_of(max(r for r in ranks if r is not None), k).value
        out.append(QuestionLayer(q.id, layer, ranks))
    return out


def layer_shares(rows: Sequence[QuestionLayer]) -> list[LayerShare]:
    """How many of the diagnosed questions fall in each layer (every layer listed, zeros included)."""
    counts = Counter(r.layer for r in rows)
    return [LayerShare(layer, counts[layer], len(rows)) for layer in LAYERS]


def unranked(run: RunFile, questions: Sequence[Question]) -> list[str]:
    """The answerable questions the run does not rank at all (not diagnosed; said, never dropped silently)."""
    return [q.id for q in questions if q.answerable and q.id not in run.ranked]
