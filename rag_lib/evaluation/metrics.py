"""Retrieval metrics over *pieces* of gold evidence, ir_measures style: one small class per metric.

Data model
----------
A question's gold is a list of **pieces** (the facts an answer needs, e.g. Q7's C1–C4); each
piece is a set of acceptable chunk ids, and a piece is *found* at the rank of its best chunk.

* Standard measures (hit@k, recall@k, MRR, nDCG@k) come from :mod:`ranx`, with qrels built from
  the union of the pieces' chunk ids (relevance 1). They are therefore *chunk*-level: recall@k is
  the fraction of gold chunks in the top k. ranx sees rank-derived scores (``n − rank + 1``) so
  its order is exactly the :class:`~rag_lib.retrieval.Ranking`'s, ties included.
* Ours: :class:`PieceCoverage` (piece-level: fraction of pieces with a chunk in the top k; the
  casebook's Q7 covers 1/4 at k=10), :func:`piece_ranks` and :func:`diagnose`.

A question without gold chunks (nothing in the corpus answers it, e.g. Q9a) scores NaN on every
measure here; :func:`diagnose` labels it ``not_in_corpus``.
"""

from __future__ import annotations

import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import pandas as pd

from rag_lib.retrieval.base import Ranking

Pieces = Sequence[Collection[str]]  # one question's gold: a set of acceptable chunk ids per piece


def piece_ranks(pieces: Pieces, ranking: Ranking) -> list[int | None]:
    """1-based rank of each piece's best chunk; ``None`` when none of its chunks is ranked."""
    ranks = []
    for piece in pieces:
        found = [ranking.rank_of(cid) for cid in piece if cid in ranking]
        ranks.append(min(found) if found else None)
    return ranks


class Layer(StrEnum):
    """Where a question's retrieval fails (casebook section 05), judged by its worst piece."""

    NOT_IN_CORPUS = "not_in_corpus"  # no gold pieces, or a piece resolves to no ranked chunk
    IN_TOP_K = "in_top_k"  # every piece has a chunk within rank k
    JUST_OUTSIDE = "just_outside"  # worst piece rank in (k, 2k]
    RANKED_DEEP = "ranked_deep"  # worst piece rank > 2k


@dataclass(frozen=True)
class Diagnosis:
    """The layer of one question plus the ranks it was judged on."""

    layer: Layer
    piece_ranks: tuple[int | None, ...]
    worst_rank: int | None  # None for not_in_corpus
    k: int


def layer_of(worst: int | None, k: int) -> Layer:
    """The layer of a question whose worst piece first ranks at ``worst`` (``None``: a piece no ranked chunk
    holds). Boundaries: rank k is ``in_top_k``; k+1 and 2k are ``just_outside``; 2k+1 is ``ranked_deep``."""
    if worst is None:
        return Layer.NOT_IN_CORPUS
    return Layer.IN_TOP_K if worst <= k else Layer.JUST_OUTSIDE if worst <= 2 * k else Layer.RANKED_DEEP


def diagnose(pieces: Pieces, ranking: Ranking, k: int) -> Diagnosis:
    """Classify one question by the rank of its *worst* piece.

    A multi-piece answer is only as complete as its least-found piece, so Q7 (pieces at ranks
    52, 36, 36 and ≤ 10, k = 5) is ``ranked_deep`` even though one piece is in the top 10.
    Boundaries: rank k is ``in_top_k``; k+1 and 2k are ``just_outside``; 2k+1 is ``ranked_deep``.
    """
    if k < 1:
        raise ValueError(f"diagnose needs k >= 1, got {k}")
    ranks = tuple(piece_ranks(pieces, ranking))
    worst = None if not ranks or any(r is None for r in ranks) else max(r for r in ranks if r is not None)
    return Diagnosis(layer_of(worst, k), ranks, worst, k)


class Measure(ABC):
    """One metric; ``name`` is its column in :func:`evaluate`."""

    @property
    @abstractmethod
    def name(self) -> str: ...

    def __str__(self) -> str:
        return self.name


class RanxMeasure(Measure):
    """A standard measure computed by ranx; subclasses name it and say how deep it reads."""

    @property
    @abstractmethod
    def ranx_metric(self) -> str: ...

    def depth(self, first_gold: int | None) -> int | None:
        """How many of a ranking's first entries the measure reads, given the rank of its first gold chunk
        (None: none ranked); None for all of them. Runs are cut there before ranx sorts them (the same
        values, much less work on a ranking of the whole corpus)."""
        return None


class QuestionMeasure(Measure):
    """A measure of ours, computed per question from pieces and ranking."""

    @abstractmethod
    def question(self, pieces: Pieces, ranking: Ranking) -> float: ...


@dataclass(frozen=True)
class HitAt(RanxMeasure):
    """1 if any gold chunk is in the top k, else 0."""

    k: int
    name = property(lambda self: f"hit@{self.k}")
    ranx_metric = property(lambda self: f"hit_rate@{self.k}")

    def depth(self, first_gold: int | None) -> int:
        return self.k


@dataclass(frozen=True)
class RecallAt(RanxMeasure):
    """Fraction of gold chunks in the top k (chunk-level)."""

    k: int
    name = property(lambda self: f"recall@{self.k}")
    ranx_metric = property(lambda self: f"recall@{self.k}")

    def depth(self, first_gold: int | None) -> int:
        return self.k


@dataclass(frozen=True)
class MRR(RanxMeasure):
    """1 / rank of the first gold chunk (full depth)."""

    name = property(lambda self: "mrr")
    ranx_metric = property(lambda self: "mrr")

    def depth(self, first_gold: int | None) -> int | None:
        return first_gold


@dataclass(frozen=True)
class NDCGAt(RanxMeasure):
    """nDCG@k with binary gains (ranx: gain = rel, discount = log2(rank + 1))."""

    k: int = 10
    name = property(lambda self: f"ndcg@{self.k}")
    ranx_metric = property(lambda self: f"ndcg@{self.k}")

    def depth(self, first_gold: int | None) -> int:
        return self.k


@dataclass(frozen=True)
class PieceCoverage(QuestionMeasure):
    """Fraction of a question's pieces with at least one chunk in the top k."""

    k: int
    name = property(lambda self: f"coverage@{self.k}")

    def question(self, pieces: Pieces, ranking: Ranking) -> float:
        if not pieces:
            return math.nan
        return sum(r is not None and r <= self.k for r in piece_ranks(pieces, ranking)) / len(pieces)


def hit_name(k: int) -> str:
    """The column of the hit rate at ``k`` (``"hit@5"`` at the workbook's k = 5): every experiment reports
    it under this name, so a different k renames the figure instead of mislabelling it."""
    return HitAt(k).name


def default_measures(k: int) -> tuple[Measure, ...]:
    """The measures a workbench scores by default at top-``k`` (``retrieval.top_k``), plus the fixed
    coverage@10 and nDCG@10 every table reports."""
    return (HitAt(k), PieceCoverage(k), PieceCoverage(10), RecallAt(k), MRR(), NDCGAt(10))


def evaluate(
    gold: Mapping[str, Pieces], runs: Mapping[str, Ranking], measures: Sequence[Measure]
) -> pd.DataFrame:
    """Score every question: one row per question id (sorted), one column per measure.

    Questions without a gold chunk get NaN (see the module docstring). Every question of
    ``gold`` needs a ranking in ``runs``.
    """
    missing = sorted(set(gold) - set(runs))
    if missing:
        raise KeyError(f"no ranking for questions {missing}; run retrieval for every benchmark question")
    qids = sorted(gold)
    table: dict[str, dict[str, float]] = {m.name: dict.fromkeys(qids, math.nan) for m in measures}
    for m in measures:
        if isinstance(m, QuestionMeasure):
            table[m.name].update({q: m.question(gold[q], runs[q]) for q in qids})
    ranx_measures = [m for m in measures if isinstance(m, RanxMeasure)]
    judged = [q for q in qids if any(len(p) for p in gold[q])]
    if ranx_measures and judged:
        for m, values in zip(ranx_measures, _ranx_scores(gold, runs, judged, ranx_measures), strict=True):
            table[m.name].update(values)
    return pd.DataFrame(table, index=pd.Index(qids, name="question"))


def _read_part(pieces: Pieces, ranking: Ranking, measures: list[RanxMeasure]) -> tuple[str, ...]:
    """The first entries of ``ranking`` that any of ``measures`` reads (see :meth:`RanxMeasure.depth`)."""
    ranked = [ranking.rank_of(cid) for piece in pieces for cid in piece if cid in ranking]
    depths = [m.depth(min(ranked) if ranked else None) for m in measures]
    return ranking.ids if None in depths else ranking.ids[: max(depths)]


def _ranx_scores(
    gold: Mapping[str, Pieces], runs: Mapping[str, Ranking], qids: list[str], measures: list[RanxMeasure]
) -> list[dict[str, float]]:
    import ranx

    qrels = ranx.Qrels({q: {cid: 1 for piece in gold[q] for cid in piece} for q in qids})
    run = ranx.Run({q: {cid: float(len(runs[q]) - i) for i, cid in enumerate(_read_part(gold[q], runs[q], measures))}
                    for q in qids})
    names = [m.ranx_metric for m in measures]
    with warnings.catch_warnings():  # numba's uint64 cast notice inside ranx, harmless here
        warnings.simplefilter("ignore")
        result = ranx.evaluate(qrels, run, names, return_mean=False)
    if len(names) == 1:
        result = {names[0]: result}
    order = list(qrels.keys())  # ranx returns per-query arrays in its own (sorted) query order
    return [dict(zip(order, (float(v) for v in result[name]), strict=True)) for name in names]
