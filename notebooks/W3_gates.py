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
# # W3 · Whether to answer: the evidence gates on a workbook's questions
#
# **Question.** Can a gate tell, before the model is asked, that the retrieved evidence is not enough? The
# casebook's Q9a had no answer in the corpus and a score threshold could not block it; notebook 03 tuned three
# label-free gates on the casebook's benchmark, and `ask` applies them. On this workbook's corpus and questions:
# how many unanswerable questions does each gate decline, and how many answerable questions with complete
# evidence does it wrongly refuse, with the casebook's settings and with settings refitted here?
#
# **Configuration.** The workbook named in the parameters; scores from its dense retrieval with the default
# embedder at its Top-k. Gates from `rag_lib.evidence`: `floor` (best score at least a threshold), `aspects` (the
# question's key terms found in the evidence) and `floor+aspects`. Three fits: the casebook's (03's settings,
# tuned on the labelled benchmark; out of sample on any other workbook's questions, and not applied when they
# were fitted at another k or on another embedder), refitted on this workbook's questions by 03's rule (Youden's
# J) and measured on the same questions (in-sample, optimistic), and the same rule leave-one-out.
#
# **Re-run.** `make reproduce WORKBOOK=<name>` (needs the casebook's `03_q9a_no_evidence` results). Writes
# `results/<name>/W3_gates/`.

# %% tags=["parameters"]
workbook = "cloudflare"

# %%
from IPython.display import display

from rag_lib.core.config import RunConfig
from rag_lib.experiments.workbook_gates import run_gates
from rag_lib.pipeline.workbook import load_workbook, open_workbook
from rag_lib.presentation import page, report
from rag_lib.presentation import workbook_gates as view
from rag_lib.presentation.tables import Table
from rag_lib.results.workbook_gates import EXPERIMENT

opened = open_workbook(load_workbook(workbook), RunConfig.from_settings())
result = run_gates(opened)
page.setup_line({"workbook": result.workbook, "scores": result.configuration, "k": result.k,
                 "questions": result.questions_source})

# %% [markdown]
# ## How far the best scores of answerable and unanswerable questions overlap
# A score floor can only separate what does not overlap; the dotted line is the casebook's floor, the dashed one
# the floor refitted on these questions.

# %%
page.show_figure(view.score_figure(result, report.experiment_dir(EXPERIMENT.name) / "best_scores.png"))

# %% [markdown]
# ## Each gate under each fit
# Unanswerable questions declined (near-miss: the topic is in the corpus, the asked fact is not; absent topic:
# neither) beside false refusals (answerable questions whose Top-k holds every gold piece, declined); k/n [Wilson
# 95%].

# %%
display(Table(view.rate_rows(result)))

# %% [markdown]
# ## Every question as the gates saw it

# %%
page.long_table(result.inputs, report.experiment_dir(EXPERIMENT.name) / "questions.csv", examples=10)

# %%
stored = report.write_experiment(EXPERIMENT.name, result, view.report_markdown, findings=view.findings)
page.closing(stored, {"workbook": {"name": result.workbook, "title": result.title},
                      "scores": {"configuration": result.configuration, "model": result.model, "k": result.k},
                      "casebook settings": {"from": result.casebook_fit,
                                            "not applied because": result.casebook_refused or "they apply"}})
