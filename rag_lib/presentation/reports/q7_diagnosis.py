"""``05_q7_diagnosis``'s report: Q7's piece ranks per phrasing and language, and the Top-10s behind them."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, markdown_table, prose
from rag_lib.results.q7_diagnosis import EXPERIMENT, Q7Case, Q7DiagnosisResult

__all__ = ["EXPERIMENT", "report_markdown"]

TOP10_COLUMNS = ["rank", "score", "heading", "page", "covers"]


def rank(case: Q7Case, piece: str) -> str:
    """Where ``piece`` first ranks for ``case`` (a dash when it never does)."""
    return prose(case.piece_ranks[piece])


def rank_columns(result: Q7DiagnosisResult) -> list[str]:
    return ["phrasing", "language", "source", "C1", "C2", "C3", "C4", f"in top {result.k}", "in top 10", "layer"]


def report_markdown(result: Q7DiagnosisResult, findings: Sequence[str]) -> str:
    zh = result.cases["original"]["zh"]
    en = result.cases["original"]["en"]
    casebook = result.casebook.piece_ranks
    return f"""# 05 · Q7 diagnosis

Configuration: {result.configuration}; layer judged at k = {result.k} by the worst piece.

Original question (zh): {zh.question}

Our Top-10 for it covers {zh.coverage_top10} pieces; the pieces first appear at
C1 {rank(zh, "C1")}, C2 {rank(zh, "C2")}, C3 {rank(zh, "C3")},
C4 {rank(zh, "C4")}; layer: {zh.layer}.
In English: C1 {rank(en, "C1")}, C2 {rank(en, "C2")},
C3 {rank(en, "C3")}, C4 {rank(en, "C4")}; layer: {en.layer}.
The casebook (theirs, bge-m3 on their snapshot): C1 {casebook["C1"]}, C2 {casebook["C2"]},
C3 {casebook["C3"]}; {result.casebook.coverage_top10} in the Top-10.

## Piece ranks, every phrasing and language

{markdown_table(result.rank_rows, rank_columns(result))}

## Top-10, original question (zh)

{markdown_table(zh.top10, TOP10_COLUMNS)}

## Top-10, original question (en)

{markdown_table(en.top10, TOP10_COLUMNS)}

## Top-10, terms phrasing (zh)

{markdown_table(result.cases["terms"]["zh"].top10, TOP10_COLUMNS)}

## Top-10, aligned phrasing (en)

{markdown_table(result.cases["aligned"]["en"].top10, TOP10_COLUMNS)}

## Findings

{bullets(findings)}
"""
