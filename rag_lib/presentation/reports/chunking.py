"""``11_chunking``'s report: the chunking strategies against structural chunks, and context size against cost."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, markdown_table, prose
from rag_lib.results.chunking import EXPERIMENT, ChunkingResult

__all__ = ["EXPERIMENT", "report_markdown"]

STRATEGY_COLUMNS = ["strategy", "n_chunks", "median_tokens", "p90_tokens", "max_tokens", "overlong_inputs",
                    "cosine_threshold"]
COMPARISON_COLUMNS = ["strategy", "language", "metric", "structural", "strategy_value", "structural − strategy",
                      "95% CI", "p", "adjusted (Holm)"]
Q7_COLUMNS = ["strategy", "language", "C1", "C2", "C3", "C4"]
CONTEXT_COLUMNS = ["language", "evidence", "k", "tokens per question", "input cost per 1000 answers (USD)",
                   "coverage"]


def compared_metrics(result: ChunkingResult) -> list[str]:
    """The compared metrics (hit@k carries the run's k), in the order the comparison table compares them."""
    return list(dict.fromkeys(row.metric for row in result.comparison_rows))


def report_markdown(result: ChunkingResult, findings: Sequence[str]) -> str:
    metric_columns = ["strategy", "language", *compared_metrics(result), "tokens@5", "chunks@equal-tokens"]
    metric_table = markdown_table(result.metric_rows, metric_columns,
                                  decimals={"tokens@5": 0, "chunks@equal-tokens": 1})
    context_table = markdown_table(result.context_rows, CONTEXT_COLUMNS, decimals={"tokens per question": 0})
    return f"""# 11 · Chunking strategies, and context size against cost

Dense retrieval, default embedder ({prose(result.provenance.embedder["model"])}); {result.n_answerable} answerable
questions per language; gold pieces placed as spans ({result.gold_span_differences} differences from the
chunk-id labels on the structural chunks). Halo's figures are theirs.

## Strategies

{markdown_table(result.strategies, STRATEGY_COLUMNS)}

## Whole benchmark

{metric_table}

![hit@5 against the tokens the Top-5 sends, per chunking strategy](strategy_tradeoff.png)

## Structural − strategy (Halo: +{result.halo.chunking.structural_hit_rate_points} points of hit rate for \
structural chunking)

`95% CI`: each comparison on its own; `adjusted (Holm)`: difference [its interval at level α·p/p_Holm, which \
excludes 0 exactly when p_Holm < 0.05];
p_Holm over the {result.provenance.claims.comparisons} comparisons of this table.

{markdown_table(result.comparison_rows, COMPARISON_COLUMNS)}

## Q7 first ranks

{markdown_table(result.q7_rows, Q7_COLUMNS)}

## Context size against cost (Halo: "{result.halo.context.quote}")

Price: {result.priced_model} input {prose(result.price.input_per_mtok)} USD per million tokens \
({result.price.source}).

{context_table}

## Findings

{bullets(findings)}
"""
