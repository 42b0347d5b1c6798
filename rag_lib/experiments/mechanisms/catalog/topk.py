"""More evidence from the same ranking: the top k chunks go to generation instead of the run's top k
(``retrieval.top_k``)."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.experiments.mechanisms.registry import BaselineDense, BuildContext, Variant, mechanism


def topk_variants(base: BaselineDense, ks: Sequence[int] = (10, 20)) -> list[Variant]:
    """Same ranking, more evidence: the top k chunks go to generation instead of the baseline's top k."""
    return [Variant(f"k={k}", f"dense baseline ranking, top {k} as evidence instead of top {base.config.k}", base,
                    evidence_k=k) for k in ks]


@mechanism("topk", "same dense ranking, more chunks sent to generation", ks=(10, 20))
def _topk(ctx: BuildContext, ks: Sequence[int]) -> tuple[list[Variant], dict[str, str]]:
    return topk_variants(ctx.base, ks), {}
