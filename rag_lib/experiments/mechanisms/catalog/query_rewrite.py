"""The question rewritten into one search query by the LLM, and the casebook's aligned phrasing of Q7."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.experiments.mechanisms.registry import (
    BaselineDense,
    BuildContext,
    LLMQueries,
    Variant,
    mechanism,
    query_llm,
)
from rag_lib.generation.query_ops import LLM_MAX_TOKENS, QueryLLM
from rag_lib.results.mechanism import LLMVariant
from rag_lib.results.provenance import LLMDescription


def query_rewrite_variants(base: BaselineDense, qllm: QueryLLM | None, llm_languages: Sequence[str]) -> list[Variant]:
    """LLM rewriting of the question, and the casebook's hand-written document-aligned phrasing of Q7."""
    variants = []
    if qllm is not None:
        queries = LLMQueries(qllm, "rewrite")
        variants.append(Variant("llm-rewrite", "the configured LLM rewrites the question into one search query",
                                lambda text: base(queries(text)[0]), languages=tuple(llm_languages),
                                provenance=LLMVariant(LLMDescription(**qllm.describe())), llm=queries))
    variants.append(Variant(
        "casebook-aligned", "the casebook's hand-written document-aligned phrasing (Q7 only)", base,
        languages=(), q7_phrasings=("aligned",),
        notes=["Only Q7 has a hand-written document-aligned phrasing, so this variant has no whole-benchmark "
               "comparison; its Q7 ranks are the baseline's ranks for the `aligned` phrasing."]))
    return variants


@mechanism("query_rewrite", "the question rewritten into one search query by the LLM; the casebook's aligned "
           "phrasing of Q7", llm_max_tokens=LLM_MAX_TOKENS)
def _query_rewrite(ctx: BuildContext, llm_max_tokens: int) -> tuple[list[Variant], dict[str, str]]:
    qllm = query_llm(ctx, "rewrite", llm_max_tokens)
    return query_rewrite_variants(ctx.base, qllm, ctx.llm_languages), {}
