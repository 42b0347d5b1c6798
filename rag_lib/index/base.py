"""The vector store protocol every backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from rag_lib.core.documents import Chunk
from rag_lib.core.errors import IndexMismatchError
from rag_lib.embedding.store import EmbeddingMatrix
from rag_lib.retrieval.base import Ranking

METHODS = ("exact", "hnsw")


@runtime_checkable
class VectorStore(Protocol):
    """Chunks and their vectors (one model per store), ranked against a query vector.

    ``search`` returns a full :class:`~rag_lib.retrieval.base.Ranking` over every stored chunk:
    an approximate method ranks what it finds first (``n_matched``) and appends the rest in
    chunk order, so a gold chunk an index misses is visible as "not matched", not as absent.
    """

    name: str

    def add(self, chunks: Sequence[Chunk], matrix: EmbeddingMatrix) -> None:
        """Store ``matrix``'s vectors with their chunks; a different model raises IndexMismatchError."""
        ...

    def provenance(self) -> dict[str, str] | None:
        """Model name, version and checksum of the stored vectors (None while empty)."""
        ...

    def search(self, query: np.ndarray, *, method: str = "exact", k: int | None = None) -> Ranking:
        """Rank the stored chunks by cosine with ``query`` (exact, or ``"hnsw"`` where supported)."""
        ...

    def close(self) -> None:
        """Release connections (and a server the store started)."""
        ...


def check_same_model(stored: dict[str, str] | None, incoming: dict[str, str], where: str) -> None:
    """Halo's rule: one store, one model. Raise :class:`IndexMismatchError` naming both."""
    incoming = {k: incoming[k] for k in ("model", "version", "checksum")}
    if stored is not None and stored != incoming:
        raise IndexMismatchError(
            f"{where} holds vectors of {stored}; refusing to add vectors of {incoming}. "
            "Never mix models in one index: use another store name, or drop the store and re-embed."
        )
