"""``12_corpus_size``'s report: retrieval, the gate and the Top-5 slots as the corpus grows."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, markdown_table, prose
from rag_lib.results.corpus_size import EXPERIMENT, CorpusSizeResult

__all__ = ["EXPERIMENT", "report_markdown"]

CHANGE_COLUMNS = ["pages", "language", "metric", "smallest", "this size", "change", "95% CI", "p", "adjusted (Holm)"]
REFUSAL_COLUMNS = ["language", "gate", "unanswerable", "smallest", "smallest_ci", "whole", "whole_ci",
                   "newly_declined", "no_longer_declined", "p_exact"]
Q7_COLUMNS = ["pages", "language", "C1", "C2", "C3", "C4"]
Q7_FIRST_COLUMNS = ["language", "piece", "rank", "chunk", "page", "added page"]
SLOT_COLUMNS = ["pages", "language", "non-gold slots per run", "same page as gold", "copy on another page",
                "same product, other page", "other product", "from added pages"]
DISTRACTOR_COLUMNS = ["language", "chunk", "page", "heading", "questions", "added page", "copies on other pages"]


def curve_columns(top: int) -> list[str]:
    """The curve table's columns; hit@k carries the k the run measured at."""
    hit = f"hit@{top}"
    return ["pages", "language", hit, f"{hit} lo", f"{hit} hi", "coverage@10", "coverage@10 lo", "coverage@10 hi",
            "declined (answerable)", "false refusal rate", "false refusal rate (held out)",
            "unanswerable declined", "unanswerable declined (held out)", "seeds"]


def report_markdown(result: CorpusSizeResult, findings: Sequence[str]) -> str:
    provenance = result.provenance
    return f"""# 12 · Corpus size

Dense retrieval, default embedder ({prose(provenance.embedder["model"])}); {result.n_answerable} answerable \
questions per
language; nested corpora of `{result.batch}` from the pages of `{result.base_batch}`, {len(result.seeds)} page orders.

## Corpora

{markdown_table(result.size_rows, ["pages", "chunks (mean over seeds)"], decimals={"chunks (mean over seeds)": 1})}

![hit@5 and coverage@10 against corpus size](size_curves.png)

{markdown_table(result.curve, curve_columns(provenance.top), decimals={"declined (answerable)": 1})}

## Change from the smallest corpus

{markdown_table(result.change_rows, CHANGE_COLUMNS)}

## Refusals of the unanswerable questions: smallest corpus against the whole batch (paired)

{markdown_table(result.refusal_changes, REFUSAL_COLUMNS)}

## Q7 first ranks

{markdown_table(result.q7_rows, Q7_COLUMNS)}

In the whole wide batch, the chunk holding each piece's first rank:

{markdown_table(result.q7_first, Q7_FIRST_COLUMNS)}

## Non-gold Top-5 slots

{markdown_table(result.slot_rows, SLOT_COLUMNS, decimals={"non-gold slots per run": 1})}

![What fills the Top-5 slots gold does not, per corpus size](top5_slots.png)

{markdown_table(result.top_distractors, DISTRACTOR_COLUMNS)}

## Findings

{bullets(findings)}
"""
