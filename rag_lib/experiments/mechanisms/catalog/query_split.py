"""The question split into parts (rules or the LLM), each part ranked densely, the rankings fused."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rag_lib.experiments.mechanisms.registry import (
    BaselineDense,
    BuildContext,
    FromSettings,
    LLMQueries,
    Variant,
    mechanism,
    query_llm,
)
from rag_lib.generation.query_ops import LLM_MAX_TOKENS, QueryLLM, RuleSplitter, fuse
from rag_lib.results.mechanism import LLMVariant
from rag_lib.results.provenance import LLMDescription
from rag_lib.retrieval import Ranking


def _split_rank(base: BaselineDense, split: Callable[[str], list[str]], fusion: str,
                rrf_k: int) -> Callable[[str], Ranking]:
    return lambda text: fuse([base(part) for part in split(text)], fusion, k=rrf_k)


def query_split_variants(base: BaselineDense, qllm: QueryLLM | None, llm_languages: Sequence[str] = ("zh", "en"),
                         fusions: Sequence[str] = ("rrf", "round_robin"), rrf_k: int | None = None) -> list[Variant]:
    """Rule-based splitting (sentences; sentences + clauses), fused by each of ``fusions``; LLM splitting (RRF,
    constant ``rrf_k``; default: the configuration of ``base``'s workbench)."""
    rrf_k = base.config.rrf_k if rrf_k is None else rrf_k
    variants = []
    for splitter in (RuleSplitter(), RuleSplitter(clauses=True)):
        for fusion in fusions:
            variants.append(Variant(f"{splitter.name}+{fusion}",
                                    f"{splitter.name} parts, each ranked densely, merged by {fusion}",
                                    _split_rank(base, splitter.split, fusion, rrf_k)))
    if qllm is not None:
        queries = LLMQueries(qllm, "split")
        variants.append(Variant("llm-split+rrf", "the configured LLM splits the question; parts merged by RRF",
                                _split_rank(base, queries, "rrf", rrf_k), languages=tuple(llm_languages),
                                provenance=LLMVariant(LLMDescription(**qllm.describe())), llm=queries))
    return variants


@mechanism("query_split", "the question split into parts (rules, or the LLM), each ranked, the rankings fused",
           fusions=("rrf", "round_robin"), rrf_k=FromSettings("retrieval.rrf_k"), llm_max_tokens=LLM_MAX_TOKENS)
def _query_split(ctx: BuildContext, fusions: Sequence[str], rrf_k: int,
                 llm_max_tokens: int) -> tuple[list[Variant], dict[str, str]]:
    qllm = query_llm(ctx, "split", llm_max_tokens)
    return query_split_variants(ctx.base, qllm, ctx.llm_languages, fusions, rrf_k), {}
