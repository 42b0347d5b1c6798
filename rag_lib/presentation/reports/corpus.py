"""``00_corpus``'s report: the default batch's corpus figures beside the casebook's, and every batch side by side."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, prose
from rag_lib.results.corpus import EXPERIMENT, CorpusResult

__all__ = ["EXPERIMENT", "report_markdown"]

# The side-by-side table's rows: (label, field of a batch's BatchSummary), then (label, field of its BatchLabelStatus).
BATCH_ROWS = [
    ("pages", "pages"), ("partials", "partials"), ("chunks", "chunks"), ("embeddable chunks", "embeddable_chunks"),
    ("median length (chars)", "median_chars"), ("longest chunk (chars)", "max_chars"),
    ("over the limit", "oversized"), ("removals", "removals"), ("removed chars", "removed_chars"),
    ("warnings", "n_warnings"), ("unknown components", "unknown_components"),
]
LABEL_ROWS = [
    ("unresolved locators", "n_unresolved"), ("absent check fails", "absent_failed"),
    ("extra gold locators", "extra_locators"), ("answered in this batch", "answered_here"),
    ("unreviewed", "unreviewed"),
]


def batches_table(result: CorpusResult) -> str:
    """One row per figure, one column per batch (in the order the run measured them)."""
    order = list(result.batches)
    lines = [
        "| figure |" + "".join(f" `{b}` |" for b in order),
        "| --- |" + " --- |" * len(order),
    ]
    for label, key in BATCH_ROWS:
        lines.append(f"| {label} |" + "".join(f" {prose(getattr(result.batches[b], key))} |" for b in order))
    for label, key in LABEL_ROWS:
        lines.append(f"| {label} |" + "".join(f" {prose(getattr(result.labels[b], key))} |" for b in order))
    return "\n".join(lines)


def report_markdown(result: CorpusResult, findings: Sequence[str]) -> str:
    casebook = result.casebook
    return f"""# 00 · Corpus

Snapshot `{result.batch}`: {result.pages} pages ({result.partials} partials inlined), {result.chunks} chunks, of which
{result.embeddable_chunks} have embeddable body text and {result.heading_only_chunks} are headings only.
Median chunk length {result.median_chars} characters; longest {result.max_chars} (limit {result.max_chars_limit});
{result.n_oversized} chunk(s) over the limit, each a single block kept whole.
Normalisation removed {result.removed_chars} characters ({result.n_removals} removals, logged).

| figure | ours | casebook (published, theirs) |
| --- | --- | --- |
| pages | {result.pages} | {casebook.pages} |
| chunks | {result.chunks} | {casebook.chunks} |
| embeddable chunks | {result.embeddable_chunks} | {casebook.embeddable_chunks} |
| median length | {result.median_chars} | {casebook.median_chars} |
| longest chunk | {result.max_chars} | {casebook.max_chars} |
| over the limit | {result.n_oversized} | {casebook.oversized} |

![Chunk lengths in characters, with the size limit marked](chunk_lengths.png)

## Every batch

{batches_table(result)}

An unanswerable question whose absent check fails in a batch has a page there that may answer it;
`results.json` (`labels.<batch>.absent_hits`) names the strings and pages.

## Findings

{bullets(findings)}
"""
