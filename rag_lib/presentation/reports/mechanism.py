"""``06_q7_mechanism``'s report (one per mechanism run): Q7's piece ranks and the benchmark differences per variant."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, markdown_table
from rag_lib.results.mechanism import EXPERIMENT, MechanismResult

__all__ = ["EXPERIMENT", "report_markdown"]

Q7_COLUMNS = ["variant", "phrasing", "language", "C1", "C2", "C3", "C4", "in top 10", "evidence k", "in evidence"]
BENCHMARK_COLUMNS = ["variant", "language", "metric", "baseline", "mechanism", "diff", "95% CI", "adjusted (Holm)"]


def report_markdown(result: MechanismResult, findings: Sequence[str]) -> str:
    provenance = result.provenance
    claims = provenance.claims
    return f"""# 06 · Q7 mechanism: {result.mechanism}

Status: **{result.status}**. {result.reason}

Variants: {result.variants_text}. Baseline: dense retrieval with the default embedder, top 5.
Benchmark: {provenance.n_answerable} answerable questions; differences are mechanism − baseline with
{provenance.ci_percent}% intervals: McNemar's exact test, inverted, for hit@5; a paired bootstrap
({provenance.n_boot} resamples, seed {provenance.seed}) for the other metrics.
`coverage@evidence` compares coverage at the variant's evidence size with the baseline's coverage@5.
`adjusted (Holm)`: difference [its interval at level α·p/p_Holm, which excludes 0 exactly when p_Holm < 0.05]; \
Holm-adjusted p over the
{claims.comparisons} comparisons of this run ({claims.fixed} in which no question changed are
left out and marked fixed). The Findings judge every metric by the adjusted figures.

## Q7: first rank of C1–C4

{markdown_table(result.q7_rows, Q7_COLUMNS)}

## The answerable questions each variant was compared on (all, or the sample its notes name)

{markdown_table(result.benchmark_rows, BENCHMARK_COLUMNS)}

## Findings

{bullets(findings)}
"""
