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
# # W5 · Answers behind the gate: from question to correct answer on a workbook
#
# **Question.** When every question of this workbook goes through the whole pipeline (dense retrieval, the
# evidence gate, the generator, the citation check), how many answerable questions end with an answer that states
# every key fact, where do the others stop, and how many unanswerable questions are declined, at what cost in
# false refusals?
#
# **Configuration.** The workbook named in the parameters; evidence is its dense Top-k with the default
# embedder; the gate is floor+aspects with the settings `W3_gates` stored (the casebook's where they apply, as
# `ask` does; else refitted on this workbook's questions, in-sample, and the page says so); the generator is the
# workbook's `generator:` (default `extractive`, which quotes the evidence without an LLM; an LLM's calls are
# recorded and replayed). An answer is correct when it states every checkable key fact of its question.
#
# **Re-run.** `make reproduce WORKBOOK=<name>` (after `W3_gates`). Writes `results/<name>/W5_answers/`.

# %% tags=["parameters"]
workbook = "cloudflare"

# %%
from IPython.display import display

from rag_lib.core.config import RunConfig
from rag_lib.experiments.workbook_answers import run_answers
from rag_lib.pipeline.workbook import load_workbook, open_workbook
from rag_lib.presentation import page, report
from rag_lib.presentation import workbook_answers as view
from rag_lib.presentation.tables import Table
from rag_lib.results.workbook_answers import EXPERIMENT

opened = open_workbook(load_workbook(workbook), RunConfig.from_settings())
result = run_answers(opened)
page.setup_line({"workbook": result.workbook, "generator": view.generator_text(result), "gate": result.gate_fit,
                 "k": result.k})

# %% [markdown]
# ## From question to correct answer
# k/n [Wilson 95%]. False refusals: answerable questions whose Top-k holds every gold piece, declined.

# %%
display(Table(view.funnel_rows(result)))

# %% [markdown]
# ## Every question's outcome

# %%
page.long_table(view.answer_rows(result), report.experiment_dir(EXPERIMENT.name) / "answers.csv", examples=10,
                shown=["question", "language", "answerable", "evidence", "status", "declined by", "withheld or failed",
                       "states every key fact", "citations"])

# %%
stored = report.write_experiment(EXPERIMENT.name, result, view.report_markdown, findings=view.findings)
page.closing(stored, {"workbook": {"name": result.workbook, "title": result.title},
                      "pipeline": {"evidence": f"{result.retriever}, Top-{result.k}", "gate": result.gate,
                                   "gate settings": result.gate_fit, "generator": view.generator_text(result),
                                   "generator calls": result.generator_calls}})
