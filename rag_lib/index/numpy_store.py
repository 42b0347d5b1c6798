"""The embedded default: vectors in a NumPy array, exact cosine by one matrix product."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_lib.core.documents import Chunk
from rag_lib.embedding.store import EmbeddingMatrix
from rag_lib.index.base import check_same_model
from rag_lib.retrieval.base import Ranking
from rag_lib.retrieval.dense import cosine_scores, unit_rows


class NumpyStore:
    """In-memory exact store; ranks exactly as :class:`~rag_lib.retrieval.dense.DenseRetriever`.

    Rows keep the order they were added in, which breaks ties (chunk order).
    """

    name = "numpy"

    def __init__(self) -> None:
        self.ids: tuple[str, ...] = ()
        self.vectors = np.zeros((0, 0), dtype=np.float32)
        self._provenance: dict[str, str] | None = None

    def add(self, chunks: Sequence[Chunk], matrix: EmbeddingMatrix) -> None:
        check_same_model(self._provenance, matrix.provenance, "this numpy store")
        known = set(self.ids)
        rows = [i for i, cid in enumerate(matrix.ids) if cid not in known]
        new = unit_rows(np.asarray(matrix.vectors, dtype=np.float32)[rows])
        self.vectors = new if not self.ids else np.concatenate([self.vectors, new])
        self.ids = self.ids + tuple(matrix.ids[i] for i in rows)
        self._provenance = dict(matrix.provenance)

    def provenance(self) -> dict[str, str] | None:
        return self._provenance

    def search(self, query: np.ndarray, *, method: str = "exact", k: int | None = None) -> Ranking:
        if method != "exact":
            raise ValueError(f"the numpy store searches exactly only (method 'exact'); got {method!r}. "
                             "Use open_store('pgvector') for HNSW.")
        scores = cosine_scores(self.vectors, query)
        return Ranking.from_scores(self.ids, scores, source="numpy:exact")

    def close(self) -> None:
        """Nothing to release."""
