"""Exact flat cosine retrieval over an embedding matrix (the casebook's baseline)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Protocol

import numpy as np
from threadpoolctl import ThreadpoolController

from rag_lib.core.errors import IndexMismatchError
from rag_lib.retrieval.base import Ranking


class VectorIndex(Protocol):
    """Row ``i`` of ``vectors`` (float32, L2-normalised) belongs to chunk ``ids[i]``.

    :class:`rag_lib.embedding.store.EmbeddingMatrix` is one.
    """

    ids: Sequence[str]
    vectors: np.ndarray


class QueryEmbedder(Protocol):
    """Anything with ``embed_queries``; :class:`rag_lib.embedding.base.BaseEmbedder` is one."""

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32): cosine is only a dot product on unit vectors."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, np.float32(1e-12))


def unit_query(query: np.ndarray, dimension: int, *, stored: str = "stored vectors") -> np.ndarray:
    """The query as a float32 unit vector; a dimension mismatch names both sizes."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if q.shape[0] != dimension:
        raise IndexMismatchError(
            f"query vector has {q.shape[0]} dimensions but the {stored} have {dimension}; "
            "embed queries with the model that embedded the chunks"
        )
    return q / max(float(np.linalg.norm(q)), 1e-12)


@cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


def cosine_scores(vectors: np.ndarray, query: np.ndarray, *, stored: str = "stored vectors") -> np.ndarray:
    """Cosine of ``query`` with every row of the unit-length ``vectors``.

    The product runs on one BLAS thread. Why: OpenBLAS splits a product this size over both cores
    and its threads then busy-wait, taking the cores from the embedder's threads that embed the
    next query (measured by ``benchmarks/query_latency.py --pages``: dense p50 at 2,046 chunks
    107.7 ms with threaded BLAS, 28-40 ms on one thread). A matrix-vector product needs no threads.
    """
    q = unit_query(query, vectors.shape[1], stored=stored)
    with _blas().limit(limits=1, user_api="blas"):
        return vectors @ q


class DenseRetriever:
    """Cosine similarity of the query vector with every chunk vector, no approximation.

    Parameters
    ----------
    matrix : VectorIndex
        Chunk ids and their L2-normalised vectors, in chunk order (ties keep this order).
    embedder : QueryEmbedder
        Embeds the query. When ``matrix`` can check it (``check_embedder``), a query model that
        differs from the document model raises :class:`~rag_lib.core.errors.IndexMismatchError`.
    """

    name = "dense"

    def __init__(self, matrix: VectorIndex, embedder: QueryEmbedder) -> None:
        vectors = np.asarray(matrix.vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(matrix.ids):
            raise ValueError(
                f"the matrix has {len(matrix.ids)} ids but vectors of shape {vectors.shape}; "
                "rebuild it with EmbeddingStore.embed_chunks"
            )
        check = getattr(matrix, "check_embedder", None)
        if check is not None:
            check(embedder)
        self.ids: tuple[str, ...] = tuple(matrix.ids)
        self.vectors = unit_rows(vectors)
        self.embedder = embedder

    def scores(self, query: str) -> np.ndarray:
        """Cosine of ``query`` with every chunk, in chunk order."""
        return self.scores_of_vector(self.embedder.embed_queries([query]))

    def scores_of_vector(self, query_vector: np.ndarray) -> np.ndarray:
        """Cosine of an already embedded query with every chunk, in chunk order."""
        return cosine_scores(self.vectors, query_vector, stored="chunk vectors")

    def rank(self, query: str) -> Ranking:
        """Every chunk, by descending cosine; ties keep chunk order."""
        return Ranking.from_scores(self.ids, self.scores(query), source=self.name)
