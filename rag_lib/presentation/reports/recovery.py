"""``07_recovery_loop``'s report: Q7's piece ranks per suggestion source, and the piece counts over every compound
question."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, markdown_table
from rag_lib.results.recovery import (
    EXPERIMENT,
    Q7Recovery,
    RecoveryExperimentResult,
    piece_count_rows,
    suggestion_count_rows,
)

__all__ = ["EXPERIMENT", "report_markdown"]


def ranks_table(entry: Q7Recovery) -> str:
    """Q7's rank table of one source: the original question's ranks, then each suggestion's (columns: its pieces)."""
    rows = [{"suggestion": "(original question)", **entry.baseline}, *entry.ranks]
    return markdown_table(rows, ["suggestion", *entry.baseline])


def q7_section(result: RecoveryExperimentResult, lang: str, llm_model: str, casebook_label: str) -> str:
    """Q7 in one language: the casebook's, the rule baseline's and the LLM's suggestions on our retriever."""
    by_source = result.q7[lang]
    return f"""Casebook suggestions{casebook_label} on our retriever:

{ranks_table(by_source["casebook"])}

Rule baseline:

{ranks_table(by_source["rule"])}

LLM suggestions ({llm_model}; status: {by_source["llm"].status}):

{ranks_table(by_source["llm"])}"""


def report_markdown(result: RecoveryExperimentResult, findings: Sequence[str]) -> str:
    llm = result.provenance.llm
    if llm is None:
        raise ValueError(f"{EXPERIMENT.name}'s report describes the llm source, which this run lacks: "
                         f"{result.unavailable}")
    zh, en = result.benchmark["zh"]["llm"], result.benchmark["en"]["llm"]
    theirs = result.casebook_published.recovery
    rule_zh = result.benchmark["zh"]["rule"]
    meaning = result.count_meaning
    return f"""# 07 · Recovery loop (casebook section 06)

Retriever: {result.retriever} (the same one for the original question and every suggestion); k = {result.k}.
Suggestion sources: `llm` = {llm.model} via {llm.backend} (offline;
{zh.n_echoing_prompt} of its {zh.n_suggestions} Chinese and
{en.n_echoing_prompt} of its {en.n_suggestions} English suggestions are copied from the
prompt's own example; calls without a record: {zh.missing} zh, {en.missing} en);
`rule` = deterministic clause/aspect splitter (no model, a baseline); `casebook` = the casebook's S1–S3
for Q7, replayed on our retriever.

Choice of the suggestion to answer: {result.choice_rule}. The casebook's user picked S2.

## Q7, Chinese

{q7_section(result, "zh", llm.model, "")}

## Q7, English

{q7_section(result, "en", llm.model, " (the casebook's translations)")}

THEIRS (casebook, bge-m3 on their snapshot): S2 takes C3 from rank {theirs.s2_c3_rank.before}
to rank {theirs.s2_c3_rank.after}; S1 leaves C1 at {theirs.s1["C1"]} and C2
at {theirs.s1["C2"]}.

## Every answerable compound question

{rule_zh.n_questions} questions, {rule_zh.pieces_total} pieces.

Counts: {result.count_rule}.

- "after first": {meaning.after_first}.
- "after random": {meaning.after_random}.
- "after best": {meaning.after_best}.
- "after union": {meaning.after_union}.

Only "after first" and "after random" are what a system without labels would get; "after best" and
"after union" bound it from above. "missing": questions whose LLM call has no record yet (the source's
"after" counts stay empty until it is 0); "failed": recorded calls that gave no usable suggestions
(those questions keep their "before" count).

{markdown_table(piece_count_rows(result.benchmark), decimals=2)}

{markdown_table(suggestion_count_rows(result.benchmark))}

## Findings

{bullets(findings)}
"""
