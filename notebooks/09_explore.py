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
# # 09 · Explore ranks interactively
#
# **Question.** Where does the evidence for *your* question rank, and how do the ranks move when you
# switch the embedder, the retriever or k?
#
# **Configuration.** Every retrieval configuration available on this machine (dense per embedder,
# BM25, hybrid RRF); the default embedder is the one in `rag_lib/config.yaml`. Gold pieces are
# marked when the question is a benchmark question.
#
# **Re-run.** Open in JupyterLab with `make lab` and run all cells; the widget needs a live kernel.
# `make reproduce` executes it headless with `live = False`, where the static example below is what a
# reviewer sees.

# %% tags=["parameters"]
question = "q07"  # a benchmark id or any question text
key = "dense"
k = None  # None: retrieval.top_k in config.yaml
lang = "zh"
live = True  # build the widget; headless runs set False (config.yaml): a client executing a widget cell can hang

# %% [markdown]
# ## The default view, rendered for reviewers
# The question of the parameters, its gold pieces (what each is, its rank, inside or below the top-k cut)
# and the ranking down to the deepest piece, with a line at the cut: what the explorer below shows first.

# %%
from IPython.display import HTML, display

from rag_lib.app.explore import answer_stages_html, build_explorer, retrieval_keys
from rag_lib.core.config import RunConfig
from rag_lib.pipeline.explain import explain
from rag_lib.pipeline.workbench import Workbench

config = RunConfig.from_settings(k=k)  # config.yaml, with this notebook's parameters
workbench = Workbench(config=config)
print("configurations available here:", ", ".join(retrieval_keys(config.embedder)))
if not live:  # in JupyterLab the explorer below shows this view itself: one ranking on the page, not two
    display(explain(question, key=key, k=config.k, lang=lang, workbench=workbench))
    display(HTML(answer_stages_html(question, lang)))

# %% [markdown]
# ## The explorer (needs a live kernel: `make lab`, then run all cells)

# %%
if live:
    display(build_explorer(workbench, question=question, lang=lang, k=config.k))
else:
    print("live = False (a headless run): the explorer is not built here; open this notebook in JupyterLab.")
