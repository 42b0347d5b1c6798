"""``10_local_llm``'s report: the local LLM's answers, where they are lost, its judge and the injection set."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.presentation.llm_eval import development_rows, keyfact_line, statements
from rag_lib.presentation.report import bullets, markdown_table, prose
from rag_lib.presentation.tables import pivot
from rag_lib.results.local_llm import ANSWER_COLUMNS, EXPERIMENT, AnswerRow, LocalLLMResult

__all__ = ["EXPERIMENT", "report_markdown"]

# The test set's rows and the development set's, under the same columns.
SET_COLUMNS = ["generator", "lang", "gate", "n", "missing", "answered", "gold_in_top_k", "correct_gold_in_top_k",
               "correct_gold_in_top_k_ci", "refusal_correctness", "refusal_correctness_ci", "false_refusal",
               "false_refusal_ci"]
PAIRED_COLUMNS = ["comparison", "lang", "metric", "questions", "answerer", "baseline", "difference", "95% interval",
                  "adjusted (Holm)"]
NARROWING_COLUMNS = ["budget_tokens", "max_units", "lang", "choosing half", "choosing half share", "choosing half ci",
                     "reporting half", "reporting half share", "reporting half ci", "mean tokens sent", "picked"]
FUNNEL_COLUMNS = ["lang", "every key fact", "questions", "of", "share", "ci"]
# The off-question check's rows, in the order results.json stores their keys (sorted).
ASKED_COLUMNS = ["answering", "answering_shown", "lang", "min_share", "off", "off_shown"]
JUDGE_RATES = ["lang", "gate", "precision", "recall", "refusal_correctness", "false_refusal_rate", "unanswerable",
               "unanswerable_declined", "complete", "complete_declined"]
JUDGE_COUNTS = ["lang", "gate", "judged", "failed", "tp", "fp", "fn", "tn", "n"]
BEFORE_AFTER_COLUMNS = ["archive", "generator", "lang", "gate", "answer_rate", "answer_correctness",
                        "correct_gold_in_top_k", "shown_wrong", "refusal_correctness", "citation_validity"]
TARGET_COLUMNS = ["lang", "gate", "metric", "target", "measured", "ci", "recorded", "verdict", "before each change"]


def development_beside_test(result: LocalLLMResult) -> list[AnswerRow]:
    """The narrowed and claims pipelines' development-set rows under the gates the test set has."""
    return [row for name in ("narrowed", "claims") for row in development_rows(result, result.answers[name].label)]


def before_after_table(result: LocalLLMResult) -> str:
    """The answer rates per archive beside today's, or a note that no archive was read."""
    if not result.before_after:
        return "_(no archive)_"
    return markdown_table(result.before_after, BEFORE_AFTER_COLUMNS)


def report_markdown(result: LocalLLMResult, findings: Sequence[str]) -> str:
    failures = pivot(result.failures, ["generator", "lang", "gate"], "stage", "{questions}", keep=["of"])
    claim_measures = pivot(result.claim_measures, ["generator", "lang", "gate"], "metric",
                           "{value:.2f} ({numerator}/{denominator})")
    return f"""# 10 · A real offline LLM

Models per task (`generation.llm_tasks`): {prose(result.tasks)}.

## Answers on the whole benchmark (Top-{result.k}, dense)

Rates leave out questions whose call has no record (`missing`); fill them with `make llm-runs`. \
{keyfact_line(result)}

{markdown_table(result.answer_rows, ANSWER_COLUMNS)}

![What happened to every question, per answerer and gate](outcomes.png)

The narrowed and claims pipelines on the sealed test set (notebook 14, out of sample), then on this development set:

{markdown_table(result.test_set_rows, SET_COLUMNS)}

{markdown_table(development_beside_test(result), SET_COLUMNS)}

Answer against answer, question by question (ungated; paired bootstrap, Holm-adjusted):

{markdown_table(result.paired_rows, PAIRED_COLUMNS)}

How much evidence the narrowed pipeline sends (rule: {result.narrowing_choice.rule}):

{markdown_table(result.narrowing_choice.rows, NARROWING_COLUMNS, decimals={"mean tokens sent": 0})}

Where the key facts are lost (narrowed pipeline, ungated; each share is of the row above):

{markdown_table(result.funnel, FUNNEL_COLUMNS)}

Where each answerable question's answer is lost (every answerer, language and gate; the first stage that lost it):

![Where each answerable question's answer is lost](where_it_failed.png)

{markdown_table(failures)}

Claim-level measures (RAGChecker's, with key facts as gold claims and the verification rules as entailment;
numerator/denominator; definitions in `rag_lib/evaluation/diagnosis.py`):

{markdown_table(claim_measures)}

The off-question check against two blind readers' verdicts (claims pipeline; the least share of the question's
terms its quotes must name, at 0 only the asked-quantity rule; the findings give the checks' precision):

{markdown_table(result.claims_check.asked, ASKED_COLUMNS)}

## The LLM judge beside floor+aspects

{markdown_table(result.judge_rows, JUDGE_RATES)}

Counts of the same rows ("insufficient" is the positive class):

{markdown_table(result.judge_rows, JUDGE_COUNTS)}

## Injection

{result.injection_summary}

## Findings

{bullets(findings)}

## Appendix: development history

Before → after (`answers-v1`: the support check, same recorded calls; `answers-v2`: the narrowing budget; \
`answers-v3`: table rows under their header row; `answers-v4`: the judge sees them so too):

{before_after_table(result)}

The narrowed pipeline against the targets (`before each change`: the same figure in each archive, before the \
change it names):

{markdown_table(result.targets, TARGET_COLUMNS)}

## Every measured statement

""" + "".join(f"- {statement}\n" for statement in statements(result))
