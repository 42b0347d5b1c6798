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
# # W2 · Where retrieval fails, corpus beside corpus
#
# **Question.** Do the failures the casebook found on the Cloudflare docs happen as often on another
# documentation set? For each retrieval configuration and language, the share of answerable questions whose
# every gold piece reaches the Top-k, and where the others fail, on this workbook's corpus beside the others'.
#
# **Configuration.** The workbook named in the parameters, and the workbooks its `compare_with` lists; each
# one's layers come from its own `W1_diagnosis` (run `make reproduce WORKBOOK=<other>` first). The workbooks
# hold different questions: each difference is between two independent proportions (Newcombe's interval,
# Bonferroni-adjusted over every difference shown).
#
# **Re-run.** `make reproduce WORKBOOK=<name>`. Writes `results/<name>/W2_compare/`.

# %% tags=["parameters"]
workbook = "python-docs"

# %%
from IPython.display import display

from rag_lib.experiments.compare import run_comparison
from rag_lib.pipeline.workbook import load_workbook
from rag_lib.presentation import compare as view
from rag_lib.presentation import page, report
from rag_lib.presentation.tables import Table
from rag_lib.results.compare import EXPERIMENT

result = run_comparison(workbook, load_workbook(workbook).compare_with)
page.setup_line({"workbooks": ", ".join(result.workbooks), "k": result.k})

# %% [markdown]
# ## Layer shares, workbook by workbook

# %%
page.show_figure(view.layers_figure(result, report.experiment_dir(EXPERIMENT.name) / "layers.png"))
display(Table(view.difference_rows(result)))

# %%
stored = report.write_experiment(EXPERIMENT.name, result, view.report_markdown, findings=view.findings)
page.closing(stored, {"workbooks": result.titles})
