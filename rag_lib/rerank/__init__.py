"""Reranking: a registry of cross-encoders whose backends are imported only when used.

>>> reranker = get_reranker("bge-reranker-v2-m3")        # doctest: +SKIP
>>> reranked = reranker.rerank(query, ranking, texts, top_n=20)  # doctest: +SKIP

:func:`available_rerankers` says, without loading anything, which models can run here and
why the others cannot.
"""

from __future__ import annotations

import os
from typing import Any

from rag_lib.core.errors import ModelUnavailableError
from rag_lib.core.registry import LazyRegistry
from rag_lib.rerank.base import BaseReranker, RerankerSpec, get_spec, load_specs, resolve_files

# backend keyword -> "module:class"; a backend pulls in its runtime, so import on use only.
BACKENDS = LazyRegistry("reranker backend", {
    "onnx_cross_encoder": "rag_lib.rerank.onnx_cross_encoder:OnnxCrossEncoder",
    "llm_yes_no": "rag_lib.rerank.llm_yes_no:LLMYesNoReranker",
})
# Backends whose scores are recorded calls: they run wherever their records are (replay), and
# `make llm-runs` fills missing ones, so they need no model files to count as available.
RECORDED_BACKENDS = frozenset({"llm_yes_no"})


def _backend_class(backend: str) -> type[BaseReranker]:
    return BACKENDS.load(backend)


def get_reranker(name: str | RerankerSpec = "bge-reranker-v2-m3", **kwargs: Any) -> BaseReranker:
    """Build the reranker registered as ``name`` (or from a :class:`RerankerSpec`).

    Keyword arguments go to the backend (``models_dir``, ``threads``, ``batch_size``). Missing
    model files raise :class:`~rag_lib.core.errors.ModelUnavailableError`; nothing is substituted.
    """
    spec = name if isinstance(name, RerankerSpec) else get_spec(name)
    return _backend_class(spec.backend)(spec, **kwargs)


def available_rerankers(models_dir: str | os.PathLike[str] | None = None) -> dict[str, bool | str]:
    """Every registered name -> ``True`` if its files are here, else the reason it is not."""
    status: dict[str, bool | str] = {}
    for name, spec in load_specs().items():
        if spec.backend in RECORDED_BACKENDS:
            status[name] = True
            continue
        try:
            resolve_files(spec, models_dir)
        except ModelUnavailableError as exc:
            status[name] = str(exc)
        else:
            status[name] = True
    return status


__all__ = ["BaseReranker", "RerankerSpec", "available_rerankers", "get_reranker", "get_spec", "load_specs"]
