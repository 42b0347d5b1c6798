"""BM25 over ``Chunk.embed_input`` with :mod:`bm25s` and the mixed Chinese/English tokenizer."""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np

from rag_lib.core.documents import Chunk
from rag_lib.retrieval.base import Ranking
from rag_lib.retrieval.tokenize import Tokenizer


class BM25Retriever:
    """Lexical retrieval; scores every embeddable chunk, so the ranking is full.

    Chunks with score 0 (no query token in common) follow the matched ones in chunk order;
    ``Ranking.n_matched`` says where they start.

    Parameters
    ----------
    chunks : sequence of Chunk
        The corpus; heading-only chunks (``embeddable=False``) are left out, as in dense retrieval.
    tokenizer : Tokenizer, optional
        Default: :class:`~rag_lib.retrieval.tokenize.Tokenizer` with English stopwords.
    k1, b, method : BM25 parameters passed to :class:`bm25s.BM25` (Lucene variant by default).
    """

    name = "bm25"

    def __init__(
        self,
        chunks: Sequence[Chunk],
        tokenizer: Tokenizer | None = None,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
    ) -> None:
        kept = [c for c in chunks if c.embeddable]
        if not kept:
            raise ValueError("BM25Retriever needs at least one embeddable chunk; check the chunks file")
        self.ids: tuple[str, ...] = tuple(c.id for c in kept)
        self.tokenizer = tokenizer or Tokenizer()
        self.corpus_tokens = self.tokenizer.tokenize_many(c.embed_input for c in kept)
        self.model = bm25s.BM25(k1=k1, b=b, method=method)
        self.model.index(self.corpus_tokens, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk, in chunk order (zeros when no token is in the vocabulary)."""
        token_ids = self.model.get_tokens_ids(self.tokenizer.tokenize(query))
        if not token_ids:  # bm25s cannot score an empty query
            return np.zeros(len(self.ids), dtype=np.float64)
        return np.asarray(self.model.get_scores_from_ids(token_ids), dtype=np.float64)

    def rank(self, query: str) -> Ranking:
        """Every chunk by descending BM25 score; ties (including all zeros) keep chunk order."""
        scores = self.scores(query)
        return Ranking.from_scores(self.ids, scores, source=self.name, n_matched=int((scores > 0).sum()))
