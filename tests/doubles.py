"""Stand-ins for a model and its document matrix, shared by the retrieval tests (no model is loaded)."""

from __future__ import annotations

import numpy as np


class Matrix:
    """Document vectors, L2-normalised, with their chunk ids (the shape of an EmbeddingMatrix)."""

    def __init__(self, ids: list[str], vectors: np.ndarray) -> None:
        self.ids = tuple(ids)
        self.vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


class FixedEmbedder:
    """Returns a fixed vector per known query (a stand-in for a real model)."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.array([self.table[t] for t in texts], dtype=np.float32)
