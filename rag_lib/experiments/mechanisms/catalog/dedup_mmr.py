"""Near-duplicate demotion and maximal marginal relevance over the dense top candidates."""

from __future__ import annotations

from typing import Any

from rag_lib.experiments.mechanisms.registry import BaselineDense, BuildContext, Variant, mechanism
from rag_lib.pipeline.workbench import Workbench
from rag_lib.retrieval import Ranking
from rag_lib.retrieval.diversity import demote_near_duplicates, mmr


def dedup_mmr_variants(wb: Workbench, base: BaselineDense, candidates: int = 50, threshold: float = 0.95,
                       text_threshold: float = 0.8, lambda_: float = 0.5) -> list[Variant]:
    """Near-duplicate demotion (by chunk vectors, or by chunk text) and MMR over the baseline's top ``candidates``."""
    index = wb.matrix()
    texts = {c.id: c.text for c in wb.embeddable}

    def dedup(text: str) -> Ranking:
        return demote_near_duplicates(base(text), index=index, threshold=threshold, depth=candidates)

    def dedup_text(text: str) -> Ranking:
        return demote_near_duplicates(base(text), texts=texts, threshold=text_threshold, depth=candidates)

    def with_mmr(text: str, ranking: Ranking | None = None) -> Ranking:
        return mmr(ranking or base(text), index, base.vector(text), lambda_=lambda_, candidates=candidates)

    return [
        Variant("dedup", f"near-duplicates (chunk-vector cosine > {threshold}) in the top {candidates} moved to "
                         "the end", dedup),
        Variant("dedup-text", f"near-duplicates (word-trigram Jaccard > {text_threshold}) in the top {candidates} "
                              "moved to the end", dedup_text),
        Variant("mmr", f"MMR (lambda={lambda_}) re-orders the top {candidates}", with_mmr),
        Variant("dedup+mmr", "near-duplicate demotion, then MMR, over the same candidates",
                lambda text: with_mmr(text, dedup(text))),
    ]


@mechanism("dedup_mmr", "near-duplicate demotion and MMR over the dense top candidates",
           candidates=50, threshold=0.95, text_threshold=0.8, lambda_=0.5)
def _dedup_mmr(ctx: BuildContext, **params: Any) -> tuple[list[Variant], dict[str, str]]:
    return dedup_mmr_variants(ctx.wb, ctx.base, **params), {}
