"""A reranker over the dense top candidates: the paper's cross-encoder when its files are here,
and the offline LLM reranker."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from rag_lib.benchmark import Question
from rag_lib.config import run_config
from rag_lib.experiments.mechanisms.registry import (
    BaselineDense,
    BuildContext,
    FromSettings,
    RankFailed,
    Variant,
    mechanism,
)
from rag_lib.generation.llm_calls import LLMCallError, ReplayMissError
from rag_lib.rerank import available_rerankers, get_reranker
from rag_lib.retrieval import Ranking
from rag_lib.workbench import Workbench

RERANKER = "bge-reranker-v2-m3"  # the casebook's cross-encoder


def _recorded_rank(rerank: Callable[[str], Ranking]) -> Callable[[str], Ranking]:
    """A reranking whose scores are recorded LLM calls: a missing or failed call fails the question."""
    def rank(text: str) -> Ranking:
        try:
            return rerank(text)
        except ReplayMissError as exc:
            raise RankFailed("replay_miss", str(exc)) from exc
        except LLMCallError as exc:
            raise RankFailed(exc.kind, str(exc)) from exc
    return rank


def benchmark_subset(questions: Sequence[Question], size: int, seed: int = 0) -> frozenset[str]:
    """A seeded subset of ``size`` questions, stratified by compound / single-piece (sorted ids)."""
    rng = np.random.default_rng(seed)
    groups = [sorted(q.id for q in questions if q.compound == c) for c in (True, False)]
    total = sum(len(g) for g in groups)
    picked: list[str] = []
    for group in groups:
        share = round(size * len(group) / total) if total else 0
        picked += list(rng.choice(group, size=min(share, len(group)), replace=False)) if group else []
    return frozenset(picked)


def reranker_variants(wb: Workbench, base: BaselineDense, name: str = RERANKER,
                      candidates: int | None = None, subset: int | None = None) -> list[Variant]:
    """Reranker ``name`` over the baseline's top candidates (``retrieval.rerank_candidates``).

    ``subset`` limits the whole-benchmark comparison to a seeded, stratified subset of that many
    answerable questions (an LLM reranker costs minutes per question here); Q7 always runs.
    """
    n = int(candidates or run_config().rerank_candidates)
    reranker = get_reranker(name)
    texts = {c.id: c.embed_input for c in wb.embeddable}
    ids = benchmark_subset(wb.benchmark.questions(answerable=True), subset) if subset else None
    notes = [f"Whole-benchmark comparison on a seeded (seed 0), stratified subset of {len(ids)} answerable questions "
             "(runtime of the LLM reranker on 2 cores); Q7 on every phrasing."] if ids else []
    return [Variant(f"{name} top-{n}", f"{name} re-scores the dense top {n}",
                    _recorded_rank(lambda text: reranker.rerank(text, base(text), texts, top_n=n)),
                    provenance={"reranker": reranker.provenance, "subset": sorted(ids) if ids else None},
                    question_ids=ids, notes=notes)]


@mechanism("reranker", "a reranker re-scores the dense top candidates: the paper's cross-encoder when its files "
           "are here, and always the offline LLM reranker (replayed)", paper=RERANKER,
           offline=FromSettings("retrieval.offline_reranker"), candidates=FromSettings("retrieval.rerank_candidates"),
           offline_subset=FromSettings("retrieval.offline_reranker_subset"))
def _reranker(ctx: BuildContext, paper: str, offline: str, candidates: int,
              offline_subset: int) -> tuple[list[Variant], dict[str, str]]:
    status = available_rerankers()
    ctx.provenance["rerankers"] = {name: ok is True for name, ok in status.items()}
    missing = {name: str(ok) for name, ok in status.items() if ok is not True}
    variants = reranker_variants(ctx.wb, ctx.base, paper, candidates) if status.get(paper) is True else []
    if status.get(offline) is True:
        variants += reranker_variants(ctx.wb, ctx.base, offline, candidates, subset=int(offline_subset))
    return variants, missing
