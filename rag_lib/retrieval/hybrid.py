"""Hybrid retrieval: reciprocal rank fusion (RRF) of full rankings.

RRF score of a chunk = sum over rankings of ``1 / (k + rank)``; ``k`` is given by the caller
(``retrieval.rrf_k`` of the workbench's configuration, 60 in Cormack et al., 2009; also
``ranx.fuse(method="rrf")``). A ranking contributes only over its *matched*
prefix (``Ranking.n_matched``): BM25's zero-score tail is in chunk order only to keep the list
full, and fusing those placeholder ranks would reward chunks for their position in the file.
Ties keep the order of the first ranking (dense), which is itself deterministic.
``tests/test_retrieval.py`` checks this against ``ranx.fuse``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_lib.retrieval.base import Ranking, Retriever


def rrf(rankings: Sequence[Ranking], k: int) -> Ranking:
    """Fuse ``rankings`` (each over the same chunks) by reciprocal rank fusion.

    Parameters
    ----------
    rankings : sequence of Ranking
        The first one fixes the order of ties and must be full (hold every chunk).
    k : int
        The RRF constant; larger values flatten the head of each ranking.
    """
    if not rankings:
        raise ValueError("rrf needs at least one ranking")
    base = rankings[0].ids
    position = {cid: i for i, cid in enumerate(base)}
    fused = np.zeros(len(base), dtype=np.float64)
    for ranking in rankings:
        for rank, cid in enumerate(ranking.matched_ids, start=1):
            if cid not in position:
                raise ValueError(
                    f"chunk {cid!r} of the {ranking.source} ranking is not in the {rankings[0].source} ranking; "
                    "fuse rankings over the same chunks"
                )
            fused[position[cid]] += 1.0 / (k + rank)
    source = f"rrf({','.join(r.source for r in rankings)})"
    return Ranking.from_scores(base, fused, source=source)


class HybridRetriever:
    """Dense + BM25 fused by RRF.

    Parameters
    ----------
    retrievers : sequence of Retriever
        Fused in this order; the first breaks ties.
    k : int
        The RRF constant (``retrieval.rrf_k`` of the run configuration; ``Workbench.retriever`` passes it).
    """

    name = "hybrid"

    def __init__(self, retrievers: Sequence[Retriever], k: int) -> None:
        if len(retrievers) < 2:
            raise ValueError("HybridRetriever fuses at least two retrievers, e.g. dense and bm25")
        self.retrievers = tuple(retrievers)
        self.k = k

    @classmethod
    def from_parts(cls, *, chunks: Any, matrix: Any, embedder: Any, k: int, **bm25_kw: Any) -> HybridRetriever:
        """Build the dense and BM25 retrievers from chunks, a vector matrix and a query embedder."""
        from rag_lib.retrieval.bm25 import BM25Retriever
        from rag_lib.retrieval.dense import DenseRetriever

        return cls([DenseRetriever(matrix, embedder), BM25Retriever(chunks, **bm25_kw)], k=k)

    def rank(self, query: str) -> Ranking:
        """The RRF fusion of every retriever's full ranking."""
        return rrf([r.rank(query) for r in self.retrievers], k=self.k)
