"""``13_ann``'s report: HNSW's recall of the exact neighbours, its cost in gold coverage, and Q7's first ranks."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, markdown_table, prose
from rag_lib.results.ann import EXPERIMENT, AnnResult

__all__ = ["EXPERIMENT", "report_markdown"]

RECALL_COLUMNS = ["batch", "setting", "language", "recall@10 of exact", "lowest build", "highest build", "builds"]
COMPARISON_COLUMNS = ["batch", "setting", "language", "metric", "exact", "hnsw", "hnsw − exact", "95% CI", "p",
                      "adjusted (Holm)"]
Q7_COLUMNS = ["batch", "setting", "language", "C1", "C2", "C3", "C4"]


def report_markdown(result: AnnResult, findings: Sequence[str]) -> str:
    provenance = result.provenance
    return f"""# 13 · Approximate search (HNSW in Postgres + pgvector) against exact cosine

Dense retrieval, default embedder ({prose(provenance.embedder["model"])}); HNSW settings from `ann` in config.yaml.
HNSW returns at most `ef_search` rows; what it does not return counts as missed.

## Recall of the exact Top-{provenance.recall_k}

{markdown_table(result.rows, RECALL_COLUMNS)}

![HNSW recall@10 of the exact neighbours against ef_search](recall_by_ef.png)

## HNSW − exact

{markdown_table(result.comparison_rows, COMPARISON_COLUMNS)}

## Q7 first ranks

{markdown_table(result.q7_rows, Q7_COLUMNS)}

## Findings

{bullets(findings)}
"""
