"""``14_test_set``'s report: the sealed test set's answers and refusals, and the sealed files' hashes."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, markdown_table
from rag_lib.results.test_set import EXPERIMENT, TestSetResult

__all__ = ["EXPERIMENT", "report_markdown"]

COLUMNS = ["generator", "lang", "gate", "n", "missing", "answered", "gold_in_top_k", "correct_gold_in_top_k",
           "correct_gold_in_top_k_ci", "shown_wrong", "refusal_correctness", "refusal_correctness_ci",
           "false_refusal", "false_refusal_ci"]


def report_markdown(result: TestSetResult, findings: Sequence[str]) -> str:
    return f"""# 14 · The sealed test set

{" and ".join(result.answerers.values())} on {result.n_questions} sealed questions per language ({result.n_answerable} \
answerable), retrieved from
`{result.batch}`; the gate's parameters were fitted on the development set only.

## Test set (out of sample)

{markdown_table(result.rows, COLUMNS)}

## Sealed files

{markdown_table(result.sealed, ["file", "sha256"])}

## Findings

{bullets(findings)}
"""
