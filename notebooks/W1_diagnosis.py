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
# # W1 · Where retrieval fails, question by question, on a workbook's corpus
#
# **Question.** On this corpus and these questions, where does retrieval lose the evidence a complete answer
# needs? The casebook answered that for one question (Q7: its pieces ranked 52, 36, 36); here every answerable
# question gets its layer, per retrieval configuration and language: every gold piece in the Top-k, the worst
# piece just outside (within 2k), ranked deep, or in no chunk at all.
#
# **Configuration.** The workbook named in the parameters (`data/workbooks/<name>/workbook.yaml`: its corpus
# batch, questions, languages, Top-k and configurations). Gold pieces are locators resolved on the batch's
# chunks; a question's layer is its worst piece's.
#
# **Re-run.** `make reproduce WORKBOOK=<name>` (fetches and imports the corpus when it is missing). Writes
# `results/<name>/W1_diagnosis/`.

# %% tags=["parameters"]
workbook = "cloudflare"

# %%
from IPython.display import display

from rag_lib.core.config import RunConfig
from rag_lib.experiments.workbook import run_diagnosis
from rag_lib.pipeline.workbook import load_workbook, open_workbook
from rag_lib.presentation import page, report
from rag_lib.presentation import workbook as view
from rag_lib.presentation.tables import Table
from rag_lib.results.workbook import EXPERIMENT

opened = open_workbook(load_workbook(workbook), RunConfig.from_settings())
result = run_diagnosis(opened)
page.setup_line({"workbook": result.workbook, "batch": result.corpus.batch, "k": result.k,
                 "questions": result.questions.source})

# %% [markdown]
# ## Where each configuration's questions fail

# %%
page.show_figure(view.layer_figure(result, report.experiment_dir(EXPERIMENT.name) / "layers.png"))
display(Table(view.summary_rows(result)))

# %% [markdown]
# ## How deep retrieval must read to hold every piece
# The share of answerable questions whose every gold piece is within the Top-x, as x grows (the Top-k curve of
# notebook 04, per configuration): how much a larger k would buy, and where it stops buying.

# %%
page.show_figure(view.topk_figure(result, report.experiment_dir(EXPERIMENT.name) / "topk.png"))
display(Table(view.topk_rows(result)))

# %% [markdown]
# ## Every question's layer (the worst piece's rank decides)

# %%
page.long_table(view.question_rows(result), report.experiment_dir(EXPERIMENT.name) / "questions.csv", examples=12)

# %% [markdown]
# ## Pages that crowd the Top-k
# The pages filling the most Top-k slots over every answerable question, with the import's warnings about them
# (a table of contents or an index ranks for almost any question); every configuration's five: crowding.csv.

# %%
page.long_table(view.crowding_rows(result, per=5), report.experiment_dir(EXPERIMENT.name) / "crowding.csv",
                examples=len(view.crowding_rows(result)))

# %% [markdown]
# ## The corpus and the models

# %%
display(Table([result.corpus]), Table([result.questions]),
        Table([{"configuration": view.short(c), "model": m or "no model (lexical)"} for c, m in result.models.items()]))

# %%
stored = report.write_experiment(EXPERIMENT.name, result, view.report_markdown, findings=view.findings)
page.closing(stored, {"workbook": {"name": result.workbook, "title": result.title, "languages": result.languages}})
