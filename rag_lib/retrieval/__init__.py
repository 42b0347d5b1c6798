"""Retrieval: one protocol (:class:`Retriever` → full :class:`Ranking`) and a keyword registry.

>>> retriever = get_retriever("bm25", chunks=chunks)              # doctest: +SKIP
>>> retriever.rank("wrangler.toml 里怎么设置 vars").rank_of(chunk_id)  # doctest: +SKIP
52

Backends are imported only when asked for, so ``import rag_lib.retrieval`` stays light.
"""

from __future__ import annotations

from typing import Any

from rag_lib.core.registry import LazyRegistry
from rag_lib.retrieval.base import Ranking, Retriever

# keyword -> "module:factory"; the factory is a class or "Class.classmethod"
RETRIEVERS = LazyRegistry("retriever", {
    "dense": "rag_lib.retrieval.dense:DenseRetriever",
    "bm25": "rag_lib.retrieval.bm25:BM25Retriever",
    "hybrid": "rag_lib.retrieval.hybrid:HybridRetriever.from_parts",
})


def available_retrievers() -> list[str]:
    """The keywords :func:`get_retriever` accepts."""
    return RETRIEVERS.names()


def get_retriever(name: str, **kwargs: Any) -> Retriever:
    """Build a retriever by keyword.

    Parameters
    ----------
    name : {"dense", "bm25", "hybrid"}
        ``dense`` takes ``matrix=`` and ``embedder=``; ``bm25`` takes ``chunks=`` (and optional
        ``tokenizer=``, ``k1=``, ``b=``); ``hybrid`` takes all of ``chunks=``, ``matrix=``,
        ``embedder=`` and ``k=`` (the RRF constant, ``retrieval.rrf_k``).
    """
    return RETRIEVERS.load(name)(**kwargs)


__all__ = ["Ranking", "Retriever", "available_retrievers", "get_retriever"]
