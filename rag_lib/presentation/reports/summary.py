"""``08_summary``'s report: what helps, Q7 side by side, the whole benchmark, the relabelling, the local LLM and
Halo's and the casebook's figures beside ours."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.evaluation import hit_name
from rag_lib.presentation.label_archive import POOLED_METRICS
from rag_lib.presentation.report import bullets, markdown_table, prose
from rag_lib.presentation.side_by_side import side_by_side_table
from rag_lib.results.local_llm import ANSWER_COLUMNS
from rag_lib.results.local_llm import EXPERIMENT as LOCAL_LLM
from rag_lib.results.mechanism import mechanism_metrics
from rag_lib.results.store import MissingResult
from rag_lib.results.summary import (
    EXPERIMENT,
    LocalLLMSummary,
    PooledRelabelled,
    PooledUnavailable,
    Relabel,
    Relabelled,
    SummaryResult,
)

__all__ = ["EXPERIMENT", "report_markdown"]

JUDGE_COLUMNS = ["lang", "gate", "judged", "failed", "tp", "fp", "fn", "tn", "n", "precision", "recall",
                 "refusal_correctness", "false_refusal_rate", "unanswerable", "unanswerable_declined", "complete",
                 "complete_declined"]
RELABEL_METRIC_COLUMNS = ["configuration", "language", "hit@5", "coverage@10"]
RELABEL_Q7_COLUMNS = ["configuration", "phrasing", "language", "C1", "C2", "C3", "C4"]
POOLED_COLUMNS = ["batch", "configuration", "language", "n", "gold changed", *POOLED_METRICS]
HALO_COLUMNS = ["change", "language", "Halo (theirs)", "ours"]
CASEBOOK_COLUMNS = ["figure", "casebook (theirs)"]


def what_helps_columns(result: SummaryResult) -> list[str]:
    """The ranked table's columns: its ranking, then the metrics (hit@k carries the run's k)."""
    return ["rank", "mechanism", "language", "questions", "verdict", "coverage@evidence", hit_name(result.k),
            "coverage@10", "mrr"]


def benchmark_columns(result: SummaryResult) -> list[str]:
    """The whole-benchmark table's columns; ``failed`` only where some row has failed calls."""
    failed = ["failed"] if any("failed" in row for row in result.benchmark_rows) else []
    return ["mechanism", "language", *mechanism_metrics(result.k), *failed]


def what_helps_table(result: SummaryResult) -> str:
    if not result.what_helps:
        return "_(no mechanism results)_"
    return markdown_table(result.what_helps, what_helps_columns(result))


def benchmark_table(result: SummaryResult) -> str:
    if not result.benchmark_rows:
        return "_(no mechanism results)_"
    return markdown_table(result.benchmark_rows, benchmark_columns(result))


def pooled_table(pooled: PooledRelabelled | PooledUnavailable) -> str:
    if isinstance(pooled, PooledUnavailable):
        return f"(not available: {pooled.why})"
    return markdown_table(pooled.rows, POOLED_COLUMNS)


def relabel_section(relabel: Relabelled | Relabel) -> str:
    """Labels v3 against v4: the default configuration's figures, 01's tables and every pooled configuration.

    Raises
    ------
    MissingResult
        Without 01's results or the archived labels (the section reads both).
    """
    if not isinstance(relabel, Relabelled):
        raise MissingResult(f"{EXPERIMENT.name}'s report shows the relabelling, which needs 01's results and "
                            f"results/archive/{relabel.archive}; neither may be missing")
    zh, en = relabel.closing["zh"], relabel.closing["en"]
    zh_q7, en_q7 = zh.q7["original"], en.q7["original"]
    return f"""## Before and after the relabelling

Labels v3 (results of commit {relabel.before_commit}, archived in `results/archive/{relabel.archive}`) against the
current labels v4 (a blind re-read of the pooled decisions: `data/benchmark/reread_v4/`): "before → after".

Baseline (dense, default embedder): hit@5 {zh.baseline["hit@5"]} and coverage@10
{zh.baseline["coverage@10"]} (zh); hit@5 {en.baseline["hit@5"]} and coverage@10
{en.baseline["coverage@10"]} (en). Q7 piece ranks, original question: zh C1 {zh_q7.C1},
C2 {zh_q7.C2}, C3 {zh_q7.C3}, C4 {zh_q7.C4};
en C1 {en_q7.C1}, C2 {en_q7.C2}, C3 {en_q7.C3},
C4 {en_q7.C4}.

{markdown_table(relabel.metrics, RELABEL_METRIC_COLUMNS)}

{markdown_table(relabel.q7, RELABEL_Q7_COLUMNS)}

Every pooled configuration, scored from its Top-10 in the pool under labels v3 and v4 (hit@5 and coverage@10;
`n`: questions it ranked; the reranker ranks a stated subset; `gold changed`: pairs of its Top-10 relabelled):

{pooled_table(relabel.pooled)}"""


def local_llm_section(local_llm: LocalLLMSummary | None) -> str:
    if local_llm is None:
        return f"_({LOCAL_LLM.name} has not run)_"
    return f"""Models per task: {prose(local_llm.tasks)}.

Answers (rates leave out calls without a record, counted as `missing`):

{markdown_table(local_llm.answer_rows, ANSWER_COLUMNS)}

The LLM judge beside floor+aspects:

{markdown_table(local_llm.judge_rows, JUDGE_COLUMNS)}"""


def report_markdown(result: SummaryResult, findings: Sequence[str]) -> str:
    m = result.multiplicity
    return f"""# 08 · Summary

Inputs missing: {result.missing_text}.

## What actually helps, and by how much

Ranked: clear gains (a Holm-adjusted interval that excludes 0, positive), mixed, no clear effect, no question
changed, clear losses, then variants whose LLM calls failed on some questions. Top-k rows follow unranked as
"more context": the same ranking with more chunks sent, whose evidence coverage cannot fall. Cells: difference \
against the
baseline [Holm-adjusted interval over questions (exact for hit@5, bootstrap otherwise), over the {m.comparisons} \
comparisons of the
family]; "no change (fixed)": the metric moved on no question, so it is left out of the family.

{what_helps_table(result)}

![Each mechanism variant against the baseline, coverage@evidence with Holm-adjusted intervals](forest.png)

## Findings

{bullets(findings)}

## Q7: first rank of C1–C4 (bold = inside the Top-10, or inside a top-k row's larger evidence; ≈ = a tie at the \
Top-10 cut), question in Chinese

{side_by_side_table(result.side_by_side["zh"], result.evidence_k)}

![Q7 (zh): first rank of each piece per configuration](q7_ranks_zh.png)

## Q7, question in English

{side_by_side_table(result.side_by_side["en"], result.evidence_k)}

![Q7 (en): first rank of each piece per configuration](q7_ranks_en.png)

## Whole benchmark: baseline → mechanism (difference [95% CI]; Holm-adjusted interval and p)

{m.comparisons} comparisons (mechanism variants × languages × metrics) form the Holm family;
{m.fixed} more, in which no question changed, are left out and marked fixed. Each 95% interval on its own
is a {m.ci_percent}% interval; read together, {m.chance} unadjusted intervals would exclude 0 by
chance even with no real change. p_Holm controls the family-wise error over all {m.comparisons}, and each
adjusted interval is its own test's interval at level α·p/p_Holm, so it excludes 0 exactly when p_Holm < α:
{m.significant_holm_05} comparisons survive the adjustment ({m.significant_unadjusted_05} have p < {m.alpha} \
unadjusted). `coverage@evidence` is the share of pieces inside the
evidence sent to generation (Top-5, or the Top-k of a top-k row).

{benchmark_table(result)}

{relabel_section(result.relabel)}

## The local LLM (notebook 10)

{local_llm_section(result.local_llm)}

## Halo's ranked changes (theirs) beside ours

{markdown_table(result.halo_rows, HALO_COLUMNS)}

## The casebook's published figures (theirs: bge-m3, their corpus)

{markdown_table(result.casebook_rows, CASEBOOK_COLUMNS)}
"""
