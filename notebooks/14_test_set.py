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
# # 14 · The sealed test set: notebook 10's pipelines on questions they were not developed on
#
# **Question.** Every prompt, model choice and gate parameter of notebook 10 was chosen on the benchmark's
# 91 questions: they are the **development set**, and its answer figures are optimistic. How do the same
# narrowed and claims pipelines do on 66 new questions (per language) that were written and sealed before
# either ever ran on them?
#
# **The set.** `data/test_set/` (how the pages were drawn, what the questions ask, the rules:
# its README): 44 answerable and 22 unanswerable questions about pages drawn from the wide batch, each in
# Chinese and English, with key facts. `SHA256SUMS` records each file's hash; the run stops if one differs.
# It is evaluated once per pipeline version: `results/14_test_set/results.json` names the version it ran.
#
# **Configuration.** Retrieval from the whole wide batch (dense, default embedder, Top-5); the model of
# `generation.llm_tasks.answer_narrowed` through notebook 10's narrowed pipeline and its claims pipeline (each
# claim checked against its own quotes, `ask`'s default), ungated; behind the floor+aspects gate
# with the parameters fitted on the **whole development set**; and that gate followed by the narrowed LLM
# judge. Notebook 10 shows these rows beside the development set's rows of the same pipelines (its gate there
# is leave-one-out). Every call is recorded and replayed; a call without a record counts as *missing*.
#
# **Re-run.** `make reproduce RUNS=14_test_set` (replays; needs the wide batch embedded, about 15 minutes
# cold: notebook 12 does it); `make llm-runs RUNS=14_test_set` makes the missing
# calls live. Writes `results/14_test_set/`.

# %% tags=["parameters"]
languages = ["zh", "en"]
k = None  # None: retrieval.top_k in config.yaml

# %%
from IPython.display import display

from rag_lib.core.config import RunConfig
from rag_lib.experiments.llm_eval.test_set import findings, run_test_set
from rag_lib.presentation import page, report
from rag_lib.presentation.reports import test_set as test_set_report
from rag_lib.presentation.tables import table

NAME = "14_test_set"
# Two tables per set, so that neither is wider than the page: the answers, then each refusal rate beside its
# false refusal.
ANSWERS = ["generator", "lang", "gate", "n", "missing", "answered", "gold_in_top_k", "correct_gold_in_top_k",
           "correct_gold_in_top_k_ci", "shown_wrong", "shown_wrong_ci", "citation_validity"]
REFUSALS = ["generator", "lang", "gate", "unanswerable", "refusal_correctness", "refusal_correctness_ci", "complete_evidence",
            "false_refusal", "false_refusal_ci", "errors"]
config = RunConfig.from_settings(k=k)
result = run_test_set(languages=languages, k=config.k)
page.setup_line({"answerers": result.answerers, "batch": result.batch, "gates": result.gates})

# %% [markdown]
# ## Test set (out of sample)

# %%
display(table(result.rows, ANSWERS), table(result.rows, REFUSALS))

# %% [markdown]
# ## Is what the claims pipeline shows true? Two blind readers, claim by claim
#
# Every answer the claims pipeline showed ungated on the test set was judged by two readers (LLM helper sessions)
# against the wide batch's pages, blind to the key facts and the verdicts (`data/claim_checks/test_set_claims/`).
# Nothing in the pipeline was tuned on these questions, so these figures are out of sample.

# %%
if result.claims_check is None:
    print("not judged yet: data/claim_checks/test_set_claims/ holds no reader files")
else:
    print(f"{result.claims_check.compared} of {result.claims_check.drawn} judged answers still shown as judged")
    for line in result.claims_check.agreement.lines():
        print("-", line)

# %% [markdown]
# The sealed files were checked against their sha256 before this run (a changed file stops it); their hashes are in
# the appendix below the Findings.

# %%
stored = report.write_experiment(NAME, result, test_set_report.report_markdown, findings=findings)
page.closing(stored, {"setup": {"answerers": result.answerers, "batch": result.batch},
                      "sealed files (sha256)": {f.file: f.sha256 for f in result.sealed}})
