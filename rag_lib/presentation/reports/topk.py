"""``04_q8_topk``'s report: Q8 over k, the benchmark's own Q8-like cases, and coverage@k against context cost."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, markdown_table, prose
from rag_lib.results.topk import EXPERIMENT, TopkResult
from rag_lib.results.typed_json import Scalar

__all__ = ["EXPERIMENT", "report_markdown"]

LATE_FIXED = ["question", "text", "first_full_k"]  # then one column per piece: C1, C2, …
CURVE_KS = [1, 3, 5, 6, 8, 10, 15, 20]  # the rows of the coverage@k table
CURVE_COLUMNS = ["language", "k", "coverage@k", "all pieces@k", "chars", "≈tokens"]


def q8_columns(result: TopkResult) -> list[str]:
    """The Q8 table's columns as measured: language, k=1, …, k=max_k (results.json sorts a row's keys)."""
    return ["language", *(f"k={k}" for k in range(1, result.max_k + 1))]


def q8_lines(result: TopkResult) -> str:
    """One bullet per language: Q8's piece ranks, its coverage at k = 5 and 6, and the verdict."""
    lines = []
    for lang in result.languages:
        case = result.q8_case(lang)
        ranks = ", ".join(f"{piece} {prose(rank)}" for piece, rank in case.piece_ranks.items())
        lines.append(f"""- {lang}: piece ranks {ranks};
  covered at k = 5: {case.covered_at_5}, at k = 6: {case.covered_at_6}; every piece from k = \
{prose(case.first_full_k)}.
  Can it test the casebook's "a larger k completes it"? {result.q8_verdict[lang]}.
""")
    return "".join(lines)


def late_table(rows: list[dict[str, Scalar]]) -> str:
    """One language's late-complete questions: the fixed columns, then each piece any of them has."""
    if not rows:
        return "_(none)_"
    pieces = [column for row in rows for column in row if column not in LATE_FIXED]
    return markdown_table(rows, LATE_FIXED + list(dict.fromkeys(pieces)))


def late_sections(result: TopkResult) -> str:
    return "".join(f"\n{lang}:\n\n{late_table(result.late_complete[lang])}\n" for lang in result.languages)


def curve_lines(result: TopkResult) -> str:
    """Coverage and ≈ tokens per language at k = 5, 10 and max_k (those the curve holds)."""
    shown = [k for k in ["5", "10", str(result.max_k)] if k in result.curve[result.languages[0]]]
    lines = []
    for k in shown:
        coverage = ", ".join(f"{format(result.curve[lang][k].coverage, '.3f')} ({lang})" for lang in result.languages)
        tokens = ", ".join(f"{format(result.curve[lang][k].tokens, '.0f')} ({lang})" for lang in result.languages)
        lines.append(f"\n- k = {k}: coverage {coverage};\n  ≈ tokens {tokens}")
    return "".join(lines)


def curve_table(result: TopkResult) -> str:
    rows = [row for row in result.curve_rows if row.k in CURVE_KS]
    return markdown_table(rows, CURVE_COLUMNS, decimals={"chars": 0, "≈tokens": 0})


def report_markdown(result: TopkResult, findings: Sequence[str]) -> str:
    late_counts = ", ".join(f"{result.late_complete_count[lang]} in {lang}" for lang in result.languages)
    return f"""# 04 · Top-k sensitivity

Configuration: {result.configuration}; answerable benchmark questions: {result.n_answerable}.

## Q8 (`{prose(result.q8["id"])}`, two pieces)

{q8_lines(result)}
The casebook (theirs, bge-m3 on their snapshot): {result.casebook_q8.k5} at k = 5, {result.casebook_q8.k6} at k = 6.

{markdown_table(result.q8_rows, q8_columns(result))}

## The benchmark's own Q8-like cases

Answerable compound questions whose last piece enters only between k = 6 and k = 10 under this
configuration, of {result.n_compound}: {late_counts}.
{late_sections(result)}
## Whole benchmark: coverage@k and context cost

Token estimate: {result.token_estimate}.
{curve_lines(result)}

{curve_table(result)}

![Mean piece coverage@k per language](coverage_at_k.png)

![Piece coverage against the estimated tokens of the top-k evidence, per language](coverage_vs_tokens.png)

## Findings

{bullets(findings)}
"""
