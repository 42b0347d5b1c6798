"""``03_q9a_no_evidence``'s report: Q9a against the corpus, the gates on the whole benchmark in and out of sample,
and the default generator behind the gate."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.report import bullets, markdown_table, prose
from rag_lib.results.q9a import EXPERIMENT, Q9aResult
from rag_lib.results.typed_json import encode

__all__ = ["EXPERIMENT", "report_markdown"]

GATE_COLUMNS = ["precision", "recall", "refusal_correctness", "false_refusal_rate", "tp", "fp", "fn", "tn"]
VALIDATION_COLUMNS = ["gate", "figure", "in_sample", "leave_one_out", "grouped_by_page", "near_miss_held_out"]
JUDGE_COLUMNS = ["lang", "gate", "judged", "failed", "tp", "fp", "fn", "tn", "n", "precision", "recall",
                 "refusal_correctness", "false_refusal_rate", "unanswerable", "unanswerable_declined", "complete",
                 "complete_declined"]


def retrieval_line(result: Q9aResult) -> str:
    """The retriever's embedder and the Top-k."""
    embedder = result.provenance.embedder
    if embedder is None:
        raise ValueError(f"{EXPERIMENT.name}'s report names the dense retriever's embedder, which is not stored")
    return (f"Retrieval: dense, {prose(embedder['model'])} ({prose(embedder['backend'])}, "
            f"{prose(embedder['version'])}); k = {result.k}.")


def score_lines(result: Q9aResult) -> str:
    """Per language: Q9a's Top-k scores against Q5's rank-k score."""
    lines = []
    for lang in result.languages:
        s = result.scores[lang]
        lines.append(f"- {lang}: {s.q9a_min:.3f}–{s.q9a_max:.3f} vs {s.q5_rank_k:.3f} (Q5's rank-{result.k} above "
                     f"Q9a's best:\n  {prose(s.q5_above_q9a)}, by a margin of {s.gap:.3f})")
    return "\n".join(lines)


def overlap_lines(result: Q9aResult) -> str:
    """Per language: how far the best scores of answerable and unanswerable questions overlap."""
    lines = []
    for lang in result.languages:
        o = result.overlap[lang]
        lines.append(f"- {lang}: the highest unanswerable best score ({o.max_unanswerable_best:.3f}) is above\n"
                     f"  {o.answerable_below_max_unanswerable} of {o.n_answerable} answerable best scores; "
                     f"{o.unanswerable_above_min_answerable}\n"
                     f"  of {o.n_unanswerable} unanswerable questions score at or above the lowest answerable one.")
    return "\n".join(lines)


def calibration_lines(result: Q9aResult) -> str:
    """Per language: the parameters chosen on all benchmark questions."""
    lines = []
    for lang in result.languages:
        c = result.calibration[lang]
        lines.append(f"- {lang}: floor alone {prose(c.floor.floor)}; floor+aspects: floor "
                     f"{prose(c.floor_aspects.floor)},\n  coverage ≥ {prose(c.floor_aspects.min_coverage)}")
    return "\n".join(lines)


def gate_tables(result: Q9aResult) -> str:
    """Per language: every gate on the whole benchmark, in-sample."""
    return "".join(f"""
Gates on the whole benchmark, in-sample, {lang}:

{markdown_table(result.gates[lang], GATE_COLUMNS, label="gate", order=result.gate_order)}
""" for lang in result.languages)


def validation_tables(result: Q9aResult) -> str:
    """Per language: floor+aspects' fitted parameters, and every tuned gate in and out of sample."""
    sections = []
    for lang in result.languages:
        fitted = result.validation[lang]["floor_aspects"].parameters
        sections.append(f"""
{lang} (floor+aspects fitted in-sample: floor {prose(fitted.in_sample.floor)}, coverage \
{prose(fitted.in_sample.min_coverage)};
leave-one-out floors range over {prose(encode(fitted.leave_one_out.floor_range))}):

{markdown_table(result.validation_rows[lang], VALIDATION_COLUMNS)}
""")
    return "".join(sections)


def decline_lines(result: Q9aResult) -> str:
    """Per language: Q9a on the normal path, declined (or not) before the LLM is asked."""
    lines = []
    for lang in result.languages:
        d = result.gated_decline[lang]
        lines.append(f"- {lang}: status {d.status}; generator called: {prose(d.generator_called)}; recorded LLM "
                     f"calls: {d.recorded_calls}\n  ({prose(d.reason)}).")
    return "\n".join(lines)


def bypass_lines(result: Q9aResult) -> str:
    """Per generator: Q9a with the gate bypassed, judged automatically."""
    return "\n".join(f"- {name} ({row.model}): passed {prose(row.passed)} (status {row.status}, citations "
                     f"{row.citations}, calls {row.calls})"
                     for name, row in result.bypass.generators.items())


def generation_text(result: Q9aResult) -> str:
    """The default generator behind the gate on every benchmark question."""
    g = result.generation
    return f"""{g.generator.model} ({g.generator.backend}) behind the `{g.gate}` gate, {g.lang},
{g.n} questions: answered {g.answered}, declined by the gate {g.declined_by_gate},
declined by the generator {g.declined_by_generator}, errors {g.errors}; citations valid
{g.citations_valid} / {g.citations_total}; refusal correctness {prose(g.refusal_correctness)}
({g.unanswerable_declined} / {g.unanswerable} unanswerable declined)."""


def report_markdown(result: Q9aResult, findings: Sequence[str]) -> str:
    k = result.k
    check = result.corpus_check
    casebook = result.casebook
    return f"""# 03 · Q9a: no evidence, and the gate on the whole benchmark

{retrieval_line(result)}

Corpus check: {check.chunks} chunks on {check.pages} pages mention KV; the allowance strings
occur {check.absent_found} times (casebook: {casebook.kv_mentions.chunks} chunks on {casebook.kv_mentions.pages} \
pages).

Q9a Top-{k} scores vs Q5's rank-{k} score (casebook, bge-m3: {casebook.q9a_top5[0]}–{casebook.q9a_top5[1]} vs \
{casebook.q5_rank5}):

{score_lines(result)}

That orders one pair of questions only. Over the whole benchmark the best scores overlap:

{overlap_lines(result)}

Chosen parameters (rule: maximise refusal correctness − false-refusal rate over every candidate,
fitted on all benchmark questions; these are the parameters `python -m rag_lib ask` uses):

{calibration_lines(result)}

![Score-floor sweep: share of unanswerable questions declined and of answerable questions with complete
evidence declined, per floor; the dotted line is the chosen floor](floor_sweep.png)

![Best retrieval score per question, answerable and unanswerable, with the chosen floor](best_scores.png)

![Each gate's trade-off: unanswerable declined against answerable declined, in-sample](gate_roc.png)
{gate_tables(result)}
## In-sample vs out-of-sample (k/n = rate [{result.validation_interval}])

The in-sample figures above are optimistic: the parameters were chosen on the questions they are
measured on. Out of sample, each question is decided by parameters fitted without it
(`leave_one_out`), without its gold page's questions (`grouped_by_page`), or, for the near-miss
questions only, without any near-miss question (`near_miss_held_out`). `refusal_near_miss` counts the
{result.near_miss.ids_count} near-miss unanswerable questions (topic in the corpus, fact not, checked by reading the
pages); `refusal_absent_topic` the others, whose terms are absent from the corpus by construction (what
a lexical aspect gate detects). The `checklist` oracle refuses every unanswerable question by definition;
the LLM judge is {result.near_miss.llm_judge}.
{validation_tables(result)}
## The LLM sufficiency judge beside floor+aspects (whole benchmark, in-sample parameters for the gate)

{markdown_table(result.llm_judge_rows, JUDGE_COLUMNS)}

## Q9a on the normal path, and with the gate bypassed


{decline_lines(result)}

Bypass ({result.bypass.lang}), judged automatically:

{bypass_lines(result)}

## The default generator behind the gate, every benchmark question

{generation_text(result)}

## Findings

{bullets(findings)}
"""
