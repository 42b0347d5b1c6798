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
# # W4 · What changes retrieval: the casebook's mechanisms on every answerable question of a workbook
#
# **Question.** The casebook tried mechanisms on Q7 (another embedder, hybrid BM25 + dense, query splitting,
# near-duplicate demotion and MMR, a larger Top-k); an imported corpus adds one of its own (the pages its import
# flagged as lists of links moved to the end). On this workbook's corpus and questions, which of them put more of
# the gold evidence in front of the model than dense retrieval does, beyond chance?
#
# **Configuration.** The workbook named in the parameters; the baseline is its dense retrieval with the default
# embedder at its Top-k. Each mechanism's variants are those declared in `rag_lib/experiments/mechanisms/catalog/`
# (notebook 06 runs the same declarations on the casebook). Only variants that need no LLM call run here; every
# mechanism or variant left out is listed with the reason. Each variant is compared with the baseline on the same
# questions (McNemar's exact test for hit@k, a paired bootstrap otherwise), and all comparisons of the run form
# one Holm family; each verdict quotes its adjusted interval.
#
# **Re-run.** `make reproduce WORKBOOK=<name>`. Writes `results/<name>/W4_mechanisms/`.

# %% tags=["parameters"]
workbook = "cloudflare"
mechanisms = ["embedding", "hybrid", "query_split", "dedup_mmr", "topk", "flagged_pages", "reranker", "query_rewrite"]

# %%
from IPython.display import display

from rag_lib.core.config import RunConfig
from rag_lib.experiments.mechanisms.workbook import run_mechanisms
from rag_lib.pipeline.workbook import load_workbook, open_workbook
from rag_lib.presentation import page, report
from rag_lib.presentation import workbook_mechanisms as view
from rag_lib.presentation.tables import Table
from rag_lib.results.workbook_mechanisms import EXPERIMENT

opened = open_workbook(load_workbook(workbook), RunConfig.from_settings())
result = run_mechanisms(opened, mechanisms)
judged = view.family(result)
page.setup_line({"workbook": result.workbook, "baseline": result.baseline, "k": result.k,
                 "answerable questions": result.questions})

# %% [markdown]
# ## Each variant against the baseline
# coverage@evidence: the share of each question's gold pieces in the chunks the variant sends to generation (its
# own k), with the Holm-adjusted interval; solid lines exclude 0.

# %%
page.show_figure(view.forest_figure(result, report.experiment_dir(EXPERIMENT.name) / "forest.png", judged))
display(Table(view.verdict_rows(result, judged)))

# %% [markdown]
# ## Every comparison

# %%
page.long_table(view.comparison_rows(result, judged), report.experiment_dir(EXPERIMENT.name) / "comparisons.csv",
                examples=12)

# %% [markdown]
# ## What did not run, and why

# %%
display(Table(result.not_run))

# %%
stored = report.write_experiment(EXPERIMENT.name, result, view.report_markdown, findings=view.findings)
page.closing(stored, {"workbook": {"name": result.workbook, "title": result.title},
                      "baseline": {"configuration": result.baseline, "model": result.baseline_model, "k": result.k},
                      "variants": {v.name: v.description + (f" ({v.model})" if v.model else "")
                                   for v in result.variants},
                      "statistics": {"bootstrap resamples": result.n_boot, "seed": result.seed}})
