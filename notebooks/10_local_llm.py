# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (ragbench-workbook)
#     language: python
#     name: ragbench-workbook
# ---

# %% [markdown]
# # 10 · A real offline LLM: Qwen2.5-Coder answers, judges and reranks
#
# **Question.** With a real small instruct model run offline, how often is a grounded answer (each claim checked
# against the quotes the model itself cited) shown for the answerable questions, and how often are the unanswerable
# ones declined, in Chinese and in English, on the development questions and on a sealed test set? Where are the
# other answers lost? And does an LLM sufficiency judge (the idea of "Sufficient Context", Joren et al., ICLR 2025)
# separate sufficient from insufficient evidence better than the floor+aspects gate?
#
# **Configuration.** Local models from PyPI part packages (`rag_lib/generation/models.yaml`), run with
# llama-cpp-python, temperature 0, seed 0, JSON-schema constrained. Which model serves which task is
# `generation.llm_tasks` in `config.yaml`, chosen on the fixed sample of the first table (seconds per
# call and a quality signal per task). Dense retrieval with the default embedder, Top-5. Every call is
# recorded in `results/llm_calls/` and replayed; a call without a record is counted as *missing* and
# left out of every rate (fill them with `make llm-runs`), never counted as a decline.
#
# **Re-run.** `make reproduce` (replays), or `.venv/bin/python -m rag_lib.runner.reproduce 10_local_llm`;
# `make llm-runs RUNS=10_local_llm` makes the missing calls live. Writes `results/10_local_llm/`.

# %% tags=["parameters"]
languages = ["zh", "en"]
k = None  # None: retrieval.top_k in config.yaml

# %%
from IPython.display import display

from rag_lib.core.config import RunConfig
from rag_lib.evaluation.diagnosis import STAGES
from rag_lib.experiments.llm_eval import findings, run_local_llm
from rag_lib.experiments.llm_eval.diagnosis import OUTCOME_COLOURS, OUTCOMES, outcome_rows
from rag_lib.presentation import figures, page, report
from rag_lib.presentation.llm_eval import development_rows, keyfact_line
from rag_lib.presentation.reports import local_llm as local_llm_report
from rag_lib.presentation.tables import pivot, table
from rag_lib.results.local_llm import ANSWER_COLUMNS
from rag_lib.results.local_llm_judge import SelectiveAnswering, SelectiveNotRun
from rag_lib.results.test_set import TestSetResult
from rag_lib.results.typed_json import encode

NAME = "10_local_llm"
config = RunConfig.from_settings(k=k)  # config.yaml, with this notebook's parameters
test_set = TestSetResult.read("14_test_set", needed_by=NAME)  # the sealed test set, evaluated by notebook 14
result = run_local_llm(languages=languages, k=config.k, test_set_rows=test_set.rows)
page.setup_line({"tasks": result.tasks})

# %% [markdown]
# ## How an answer is made and checked
#
# **What counts as an answer.** Every citation must be a meaningful span of its chunk (a sentence, list
# item or table row; never a word fragment, markup or text addressed to a model). Then the verification
# stage (`rag_lib/verification/`) checks each claim of the answer against the quotes **the model itself
# cited**, never units the workbook picks: each number with its unit, what it counts and the plan it belongs
# to (a table row's column), each command, key, name and URL verbatim, the same polarity and quantifiers,
# and, within one language, the claim's own words. Claims that fail are dropped and listed; the rest is
# shown when it still adds something to the question, otherwise the answer is withheld. A reply cut off
# inside its JSON string loses its unfinished sentence. The rows replay the same recorded calls as before
# these rules; the table "before → after" shows what they changed.
#
# **The narrowed pipeline** (`rag_lib/generation/narrowed.py`) sends the model the sentences, list items
# and table rows of the Top-5 most relevant to the question (default embedder and lexical overlap,
# fused; `generation.narrowing` in `config.yaml`), each with an id inside `<evidence>` tags marked as
# data (a table row under its table's header row, `narrowed-units-v3`), and asks for the ids it quotes
# first, then the reply in the question's language, then the status. Its judge lists the question's
# parts with the id that answers each (or "none") and is sufficient only when every part is supported;
# it is sent the same units in the same layout.

# %% [markdown]
# ## Answers on the whole benchmark: local LLM and extractive baseline, ungated and gated
#
# Gates: *in-sample* (floor+aspects fitted on these questions: optimistic), *leave-one-out* (each question
# decided by parameters fitted without it) and *leave-one-out then judge* (what that gate lets through is
# then judged by the narrowed LLM judge, which declines what it finds insufficient; the judge has no fitted
# parameter, so this row is out of sample too). An answer that copies its prompt (the evidence listing or an
# instruction) is withheld as `echoes_prompt`.
#
# **Claims, each with its own quotes** (`narrowed-claims-v4`, issue 44): the same narrowed units, but the model
# writes its answer as claims, each citing the ids it rests on, in the evidence's language (English), and, for a
# Chinese question, a reply in Chinese. Each claim is checked against *its own* quotes only (v3 checks every
# sentence against every quote of the answer), and the answer is the claims that pass. The Chinese reply is never
# the answer, since its prose cannot be compared with the quotes: it stands beside the claims as their rendering
# only when every claim passes, the claims state a number, name or command, and the reply states exactly those and
# negates what they negate; otherwise it is left out with the reason. The decoder is held to the evidence's script
# for claims (a JSON-schema pattern), so a small model asked in Chinese cannot write its claims in Chinese. Its
# calls are made by `make llm-runs RUNS=10_local_llm` (resumable); until all are recorded, its rows count only the
# recorded ones (the `missing` column counts the rest).

# %%
print(keyfact_line(result))
display(table(result.answer_rows, ANSWER_COLUMNS))
page.show_figure(figures.where_it_failed(
    outcome_rows(result.answers), OUTCOMES, report.experiment_dir(NAME) / "outcomes.png",
    title="What happened to every question, per answerer and gate", xlabel="share of the recorded questions",
    colours=OUTCOME_COLOURS))

# %% [markdown]
# ## The narrowed and claims pipelines on the sealed test set, beside the development set
#
# The benchmark questions above are the development set: the prompts, the model and the narrowing were chosen on them.
# Notebook 14 evaluates the same pipelines, once, on a sealed test set of new questions (out of sample; the gate
# fitted on the development set); per pipeline, its rows, then this notebook's. Sentences: Findings below.

# %%
# Two tables per set, so that neither runs off the page: the answers, then each refusal rate beside its false refusal.
SET_ANSWERS = ["lang", "gate", "n", "missing", "answered", "gold_in_top_k", "correct_gold_in_top_k",
               "correct_gold_in_top_k_ci"]
SET_REFUSALS = ["lang", "gate", "refusal_correctness", "refusal_correctness_ci", "false_refusal", "false_refusal_ci"]
for name in ("narrowed", "claims"):
    label = result.answers[name].label
    for title, rows in ((f"{name}: test set (notebook 14, out of sample)",
                         [r for r in result.test_set_rows if r.generator == label]),
                        (f"{name}: development set (this notebook)", development_rows(result, label))):
        display(page.markdown(f"**{title}**"), table(rows, SET_ANSWERS), table(rows, SET_REFUSALS))

# %% [markdown]
# ## Where each answer is lost, and claim-level measures (RAGChecker's, without an LLM)
#
# Every answerable question with a checkable key fact, for every answerer, language and gate, goes to the
# first stage that lost its answer, in pipeline order: a gold piece *not retrieved* (beyond the 20
# candidates a reranker would see), *ranked below the cut* (beyond the Top-5), *declined by the gate* or
# *by the judge*, *not sent by narrowing* (the narrowed units miss a key fact), *sent but not stated* (the
# model's reply misses a key fact, or it declined), *stated but unsupported* (the reply states every key
# fact but the verification stage did not show it), *withheld as off the question* (it states every key fact
# and its claims pass their quotes, but the off-question check below withheld it), *supported but wrong*
# (shown, verified against its own quotes, and missing a key fact); *answered* is a shown answer stating every key fact. Below, RAGChecker's
# measures (Ru et al., 2024) with key facts as the gold claims and the verification rules as entailment:
# each is numerator/denominator, defined in `rag_lib/evaluation/diagnosis.py`. Noise sensitivity needs
# each claim judged right or wrong by people and is left out.

# %%
page.show_figure(figures.where_it_failed(result.failures, STAGES, report.experiment_dir(NAME) / "where_it_failed.png",
                                         title="Where each answerable question's answer is lost"))
display(table(pivot(result.failures, ["generator", "lang", "gate"], "stage", "{questions}", keep=["of"])),
        table(pivot(result.claim_measures, ["generator", "lang", "gate"], "metric",
                    "{value:.2f} ({numerator}/{denominator})")))

# %% [markdown]
# ## Blind claim checks: is what is shown true, and does it answer what was asked?
#
# Two blind readers (LLM helpers) judged every claim of drawn shown answers against the snapshot pages, and
# whether each answer answers what was asked (`data/claim_checks/`: the narrowed pipeline; `claims_v4/`: the
# claims pipeline). The off-question check withholds an answer when no shown claim states the quantity every
# clause of the question asks for, or when the quotes it rests on, read with their page path, title and
# headings, name fewer than half of the question's checkable terms. The table sorts the claims pipeline's judged
# answers by that least share (at 0 only the quantity rule acts): answers both readers say answer the question,
# and those both say do not, that each share would still show.

# %%
for name, check in (("narrowed", result.claim_check), ("claims", result.claims_check)):
    print(f"{name} pipeline: {check.compared} of {check.drawn} drawn answers still shown as judged")
    for line in check.agreement.lines():
        print("-", line)
table(result.claims_check.asked)

# %% [markdown]
# ## The LLM judge as a gate, beside floor+aspects ("insufficient" is the positive class)
#
# The floor+aspects rows come twice: in-sample (its parameters fitted on these same questions, so
# optimistic) and leave-one-out (each question decided by parameters fitted without it). The judges
# fit nothing, so their figures are out of sample. Two tables of the same rows: the rates, then the counts.

# %%
judge_rates = ["lang", "gate", "precision", "recall", "refusal_correctness", "false_refusal_rate", "unanswerable",
               "unanswerable_declined", "complete", "complete_declined"]
judge_counts = ["lang", "gate", "judged", "failed", "tp", "fp", "fn", "tn", "n"]
display(table(result.judge_rows, judge_rates), table(result.judge_rows, judge_counts))

# %% [markdown]
# ## Injection: planted instructions and a model that obeys them
#
# Each variant is planted into a copy of Q9a's top evidence chunk; a scripted model answers with the
# planted claim and quotes the planted text. `claim_shown` is whether the claim reached the reader.

# %%
print(f"planted claims shown as answers: {result.injection.claims_shown} of {result.injection.n_asked}")
page.long_table(encode(result.injection.rows), report.experiment_dir(NAME) / "injection_rows.csv")

# %% [markdown]
# ## More measurements on the development set
#
# The key-fact funnel, the answers' language, the paired comparisons, the narrowing budget, the hand checks
# of the key-fact measure, selective answering and the choice of model per task.

# %% [markdown]
# ### Where the key facts are lost
#
# Per language, over the answerable questions with a checkable key fact: every key fact stated in the
# Top-5 chunks (retrieval kept them), in the units the narrowed pipeline sends (narrowing kept them),
# and in the answer shown (the model wrote them and the support check let the answer through). Each
# share is of the row above it, with its Wilson 95% interval.

# %%
table(result.funnel)

# %% [markdown]
# ### Are shown answers in the asker's language? (ungated; any CJK ideograph counts as Chinese)

# %%
table(result.answer_languages)

# %% [markdown]
# ### Questions whose key facts check only part of what they ask
#
# These questions have a key fact that cannot be checked as a string beside checkable ones;
# "states every key fact" judges only the checkable part of them.

# %%
table(result.partly_checkable)

# %% [markdown]
# ### Answer against answer, question by question (paired)
#
# On the answerable questions with a checkable key fact that both answerers have a recorded answer for
# (ungated): the share whose shown answer states every key fact (`answer_correctness`), and the share
# shown but missing one (`shown_wrong`).
# `narrowed` is the narrowed pipeline, `llm` the chunk pipeline, `extractive` the baseline; `(answers-v3)`
# is the narrowed pipeline before table rows were shown under their header row. Intervals are paired bootstrap
# 95%, then adjusted by Holm over the table.

# %%
print("answerers:", report.prose({name: answer.label for name, answer in result.answers.items()}))
print(result.paired_family.describe)
table(result.paired_rows)

# %% [markdown]
# ### How much evidence the narrowed pipeline sends: chosen on one half, reported on the other
#
# A larger budget keeps more key facts and costs more prompt tokens (seconds per call). The rule in
# `generation.narrowing_choice` picks the smallest candidate that keeps every key fact the Top-5 states
# for the target share of a seeded half of the questions, in each language; the other half reports it,
# out of sample. No model is called.

# %%
budget = result.narrowing_choice
print("rule:", budget.rule, "| picked:", report.prose(encode(budget.picked)),
      "| configured:", report.prose(encode(budget.configured)))
table(budget.rows, decimals={"mean tokens sent": 0})

# %% [markdown]
# ### How far the key-fact measure can be trusted: hand-checked samples
#
# Answers drawn by a seeded rule (`data/benchmark/answer_checks.yaml`: Qwen 0.5B and extractive;
# `answer_checks_narrowed.yaml`: the narrowed pipeline) were read against their pages and judged correct,
# partial, wrong or no answer, each with its reason; "correct" by hand is compared with "states every key fact".

# %%
for hand in result.hand_checks:
    print(f"{hand.source} ({', '.join(hand.answerers)}): agreement {hand.percent:.1f}% {encode(hand.ci95)} "
          f"(Wilson 95%), kappa {hand.kappa:.2f}, n = {hand.n}")
    for line in hand.disagreements:
        print("-", line)

# %% [markdown]
# ### Selective answering (Joren et al., ICLR 2025)
#
# Per language, a logistic model of "showing the narrowed pipeline's output is right" (a shown answer
# stating every key fact, or an unanswerable question not answered) over the gate's best score and
# aspect coverage, the narrowed judge's verdict and whether the model answered; its probabilities are
# cross-validated (out of sample), and abstaining below a threshold trades coverage for accuracy.

# %%
fitted = {lang: block for lang, block in result.selective.items() if isinstance(block, SelectiveAnswering)}
curves = {lang: encode(block.curve) for lang, block in fitted.items()}
for lang, block in result.selective.items():
    if isinstance(block, SelectiveNotRun):
        print(f"{lang}: {block.not_run}")
    else:
        print(f"{lang}: n = {block.n} ({len(block.left_out)} left out), area under the curve "
              f"{block.auc:.3f}; answering everything: accuracy {block.answer_everything.selective_accuracy:.3f}")
if curves:
    page.show_figure(figures.accuracy_coverage(curves, report.experiment_dir(NAME) / "selective.png",
                                           title="selective answering, cross-validated"))

# %% [markdown]
# Are its probabilities calibrated? Each language's cross-validated probabilities in five equal-width bins:
# the share of questions where showing the output was right, against the bin's mean probability (Wilson 95%
# bars; the dotted diagonal is perfect calibration; ECE weights each bin's gap by its share of questions).

# %%
calibrated = {lang: encode(block.reliability) for lang, block in fitted.items()}
for lang, block in fitted.items():
    print(f"{lang}: expected calibration error {block.ece:.3f} over {block.n} questions")
if calibrated:
    page.show_figure(figures.reliability(calibrated, report.experiment_dir(NAME) / "reliability.png",
                                         title="selective answering: reliability, cross-validated"))

# %% [markdown]
# ### Model choice on a fixed sample (both models, every task)

# %%
choice = result.model_choice
print("sample:", ", ".join(choice.sample), "| quality signal:", report.prose(choice.quality_signal))
table(sorted(choice.rows, key=lambda row: (row.task, row.model)), decimals={"s_per_call": 1, "tokens_per_s": 1})

# %%
print("rule:", result.pick_rule)
table(result.model_picks)

# %%
table(sorted(choice.details, key=lambda row: (row.task, row.model, row.question, row.lang)))

# %% [markdown]
# ## Appendix: development history
#
# How the narrowed pipeline got here: the same figures before each change that was tried (archived runs
# `answers-v1` … `answers-v4`), and the targets the answers issue set for it.

# %% [markdown]
# ### Before → after: the support check (`answers-v1`), the narrowing budget (`answers-v2`), table headers (`answers-v3`, `answers-v4`)
#
# `answers-v1`: the same recorded calls, judged by the support rule. `answers-v2`: the narrowed pipeline with
# 450 estimated tokens of units, before the budget rule below (its calls are new, so its answers differ).
# `answers-v3`: the narrowed pipeline (`narrowed-units-v2`) before each table row was shown under its
# table's header row (`narrowed-units-v3`: a row such as "| After compression | 3 MB | 10 MB |" alone does
# not say which column is which plan); the answers of questions whose units hold a table row are new
# calls. `answers-v4`: the same answers before the narrowed judge also showed table rows under their header
# row (its calls re-recorded), so only the rows gated by the judge move. Only answerers whose figures moved
# are listed; the paired comparison against `answers-v3` (the last archive whose answers differ) is further
# down.

# %%
table(result.before_after)

# %% [markdown]
# ### The narrowed pipeline against the answers issue's targets
#
# `before each change` is what was tried: the same figure in each archive, that is before the support
# check (`answers-v1`), the narrowing budget (`answers-v2`), table rows under their header row
# (`answers-v3`) and the judge seeing them so (`answers-v4`) changed it (— where that version had no such row). Two pilots were tried and not kept,
# so their calls are not in the record and they have no figure here: a second "focus" call that rewrites
# an answer from only the units it cited, and English replies to Chinese questions.

# %%
table(result.targets)

# %%
stored = report.write_experiment(NAME, result, local_llm_report.report_markdown, findings=findings,
                                 statements=local_llm_report.statements)
page.closing(stored, {"models": encode(result.models), "tasks": result.tasks})
