"""Narrow the Top-k chunks to the units most relevant to the question, within a token budget.

Each unit (sentence, list item, table row: :func:`rag_lib.generation.narrowed.split_units`) is
ranked twice: by the default embedder's cosine between the question (as a query) and the unit (as a
document), and by lexical coverage (the share of the question's content terms the unit contains,
jieba-tokenised, the extractive baseline's score, which catches identifiers and numbers). The two
ranks are fused by reciprocal rank (``rrf_k``), and units are kept best first until ``budget_tokens``
(:func:`rag_lib.core.text.approx_tokens`) or ``max_units``. The dense rank carries Chinese questions over
the English corpus, where lexical overlap is mostly identifiers.

Unit vectors are cached in their own embedding store (``.cache/unit_embeddings``), keyed by text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_lib.core.config import cache_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.text import approx_tokens
from rag_lib.embedding.base import BaseEmbedder
from rag_lib.embedding.store import EmbeddingStore
from rag_lib.generation.base import LLMGenerator
from rag_lib.generation.narrowed import EvidenceUnit, NarrowedGenerator, split_units


@dataclass
class UnitNarrower:
    """Selects evidence units for :class:`~rag_lib.generation.narrowed.NarrowedGenerator`.

    Parameters
    ----------
    embedder
        The default embedder (queries and units).
    budget_tokens, max_units
        What is kept at most (estimated tokens of unit text; number of units).
    rrf_k
        Reciprocal-rank fusion constant of the dense and lexical ranks.
    """

    embedder: BaseEmbedder
    budget_tokens: int = 450
    max_units: int = 12
    rrf_k: int = 60
    store: EmbeddingStore | None = None

    def __post_init__(self) -> None:
        if self.store is None:
            self.store = EmbeddingStore(cache_dir() / "unit_embeddings", progress=False)

    def describe(self) -> dict[str, Any]:
        return {"embedder": self.embedder.name, "budget_tokens": self.budget_tokens, "max_units": self.max_units,
                "rrf_k": self.rrf_k, "lexical": "coverage of the question's content terms (jieba)"}

    def scores(self, question: str, units: Sequence[EvidenceUnit]) -> np.ndarray:
        """The fused reciprocal-rank score of each unit (higher is better)."""
        from rag_lib.retrieval.tokenize import content_terms as terms

        if not units:
            return np.zeros(0)
        query = self.embedder.embed_queries([question])[0]
        vectors = self.store.embed_chunks(self.embedder, list(units)).vectors  # type: ignore[union-attr, arg-type]
        dense = vectors @ query
        wanted = terms(question)
        lexical = np.array([len(wanted & terms(u.text)) / len(wanted) if wanted else 0.0 for u in units])
        fused = np.zeros(len(units))
        for signal in (dense, lexical):
            # Ties keep reading order (rank, then position): a stable sort of the negated signal.
            order = np.argsort(-signal, kind="stable")
            fused[order] += 1.0 / (self.rrf_k + np.arange(1, len(units) + 1))
        return fused

    def ranked(self, question: str, evidence: Sequence[Chunk]) -> list[EvidenceUnit]:
        """Every distinct unit of ``evidence``, best first (no budget applied)."""
        units = split_units(evidence)
        unique = list({u.id: u for u in units}.values())
        fused = self.scores(question, unique)
        return [unique[i] for i in np.argsort(-fused, kind="stable")]

    def keep(self, ranked: Sequence[EvidenceUnit]) -> list[EvidenceUnit]:
        """Units from ``ranked`` (best first) while they fit ``budget_tokens`` and ``max_units``;
        a unit that does not fit is skipped and a shorter one after it may still be kept."""
        kept: list[EvidenceUnit] = []
        used = 0
        for unit in ranked:
            cost = approx_tokens(unit.text)
            if len(kept) >= self.max_units or (kept and used + cost > self.budget_tokens):
                continue
            kept.append(unit)
            used += cost
        return kept

    def __call__(self, question: str, evidence: Sequence[Chunk]) -> list[EvidenceUnit]:
        return self.keep(self.ranked(question, evidence))


def narrowing_settings() -> dict[str, int]:
    """``generation.narrowing`` in ``config.yaml``: the selector's budget and unit cap."""
    from rag_lib.core.config import settings

    return {name: int(value) for name, value in settings()["generation"]["narrowing"].items()}


def narrowed_generator(task: str, embedder: BaseEmbedder, claims: bool = False, **kwargs: Any) -> NarrowedGenerator:
    """The model of ``generation.llm_tasks.<task>`` behind the narrowed pipeline (``claims``: its answer
    written as claims, each citing its own units)."""
    from rag_lib.generation import get_task_generator

    return narrowed(get_task_generator(task, **kwargs), embedder, claims)  # type: ignore[arg-type]


def default_narrower(embedder: BaseEmbedder) -> UnitNarrower:
    """The selector with ``generation.narrowing``'s settings."""
    return UnitNarrower(embedder, **narrowing_settings())


def narrowed(llm: LLMGenerator, embedder: BaseEmbedder, claims: bool = False) -> NarrowedGenerator:
    """``llm`` behind the narrowed pipeline with the workbook's selector (``claims``: narrowed-claims-v4)."""
    narrower = default_narrower(embedder)
    return NarrowedGenerator(llm, narrower, narrower.describe(), claims=claims)
