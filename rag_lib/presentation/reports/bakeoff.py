"""``01_embedding_bakeoff``'s report: each configuration's means per language and Q7's piece ranks."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.evaluation.metrics import default_measures
from rag_lib.presentation.report import bullets, markdown_table
from rag_lib.results.bakeoff import EXPERIMENT, BakeoffResult

__all__ = ["EXPERIMENT", "report_markdown"]

Q7_COLUMNS = ["configuration", "phrasing", "language", "C1", "C2", "C3", "C4"]


def summary_columns(result: BakeoffResult) -> list[str]:
    """The summary's columns in the order the measures were taken (results.json sorts a row's keys): the
    default measures at the run's k, then any other measure the rows hold."""
    stored = list(result.summary_rows[0]) if result.summary_rows else []
    measured = [m.name for m in default_measures(result.k) if m.name in stored]
    leading = ["configuration", "language", *measured]
    return leading + [column for column in stored if column not in leading]


def report_markdown(result: BakeoffResult, findings: Sequence[str]) -> str:
    return f"""# 01 · Embedding bake-off

Answerable benchmark questions: {result.n_answerable} (each asked in Chinese and English); k = {result.k}.
Configurations run: {result.configurations_text}. Not available on this machine: {result.unavailable_text}.

{markdown_table(result.summary_rows, summary_columns(result))}

Q7 piece ranks (first rank of C1, C2, C3, C4):

{markdown_table(result.q7_rows, Q7_COLUMNS)}

![Piece coverage@10 per configuration and language](coverage_at_10.png)

![Share of questions with every piece within the Top-x, per configuration](worst_rank_cdf.png)

## Findings

{bullets(findings)}
"""
