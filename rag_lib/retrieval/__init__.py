"""Retrieval: one protocol (:class:`Retriever` → full :class:`Ranking`) and a keyword registry.

>>> retriever = get_retriever("bm25", chunks=chunks)              # doctest: +SKIP
>>> retriever.rank("wrangler.toml 里怎么设置 vars").rank_of(chunk_id)  # doctest: +SKIP
52

Backends are imported only when asked for, so ``import rag_lib.retrieval`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from rag_lib.retrieval.base import Ranking, Retriever

# keyword -> (module, factory); the factory is a class or "Class.classmethod"
_REGISTRY: dict[str, tuple[str, str]] = {
    "dense": ("rag_lib.retrieval.dense", "DenseRetriever"),
    "bm25": ("rag_lib.retrieval.bm25", "BM25Retriever"),
    "hybrid": ("rag_lib.retrieval.hybrid", "HybridRetriever.from_parts"),
}


def available_retrievers() -> list[str]:
    """The keywords :func:`get_retriever` accepts."""
    return sorted(_REGISTRY)


def get_retriever(name: str, **kwargs: Any) -> Retriever:
    """Build a retriever by keyword.

    Parameters
    ----------
    name : {"dense", "bm25", "hybrid"}
        ``dense`` takes ``matrix=`` and ``embedder=``; ``bm25`` takes ``chunks=`` (and optional
        ``tokenizer=``, ``k1=``, ``b=``); ``hybrid`` takes all of ``chunks=``, ``matrix=``,
        ``embedder=`` and ``k=`` (the RRF constant, ``retrieval.rrf_k``).
    """
    try:
        module_name, factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown retriever {name!r}; choose one of {available_retrievers()}") from None
    target: Any = importlib.import_module(module_name)
    for attr in factory.split("."):
        target = getattr(target, attr)
    return target(**kwargs)


__all__ = ["Ranking", "Retriever", "available_retrievers", "get_retriever"]
