# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python (ragbench-workbook)
#     language: python
#     name: ragbench-workbook
# ---

# %% [markdown]
# # 09 · Explore ranks interactively
#
# **Question.** Where does the evidence for *your* question rank, and how do the ranks move when you
# switch the embedder, the retriever or k?
#
# **Configuration.** Every retrieval configuration available on this machine (dense per embedder,
# BM25, hybrid RRF); the default embedder is the one in `rag_lib/workbook.yaml`. Gold pieces are
# marked when the question is a benchmark question.
#
# **Re-run.** Open in JupyterLab with `make lab` and run all cells; the widget needs a live kernel.
# `make reproduce` executes it headless, where the static example below is what a reviewer sees.

# %% tags=["parameters"]
question = "q07"  # a benchmark id or any question text
key = "dense"
k = 5
lang = "zh"

# %% [markdown]
# ## A static example (rendered for reviewers)

# %%
from IPython.display import display

from rag_lib.explain import explain
from rag_lib.explore import build_explorer, retrieval_keys
from rag_lib.workbench import Workbench

workbench = Workbench()
example = explain(question, key=key, k=k, lang=lang, workbench=workbench)
print(example.summary())
print("configurations available here:", ", ".join(retrieval_keys()))
example.top()

# %% [markdown]
# ## The explorer (needs a live kernel)

# %%
# NBVAL_IGNORE_OUTPUT
# (a live widget: headless runs render it differently each time, so nbval skips its output)
display(build_explorer(workbench))
