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
# # 08 · Summary: every mechanism on Q7, and on the whole benchmark
#
# **Question.** Did any mechanism get Q7's missing pieces into the Top-10, and what did each do to the
# whole benchmark? (Casebook sections 05–07.)
#
# **Configuration.** Nothing is recomputed here: every figure is read from the `results.json` of
# notebooks 01 (bake-off, baseline ranks), 06 (one run per mechanism) and 07 (recovery loop); their
# headers name the models and backends. The casebook's published figures are shown beside ours and
# are theirs (bge-m3, qwen3.8-flash, their 26-page snapshot).
#
# **Re-run.** `make reproduce` (this notebook runs last among the experiments).

# %% tags=["parameters"]
languages = ["zh", "en"]

# %%
import pandas as pd
from IPython.display import Markdown, display

from rag_lib import report
from rag_lib.experiments.summary import run_summary

summary = run_summary(tuple(languages))
print("inputs missing:", summary["missing_inputs"] or "none")

# %% [markdown]
# ## Q7 side by side: first rank of each piece (bold = inside the Top-10)

# %%
for lang in languages:
    display(Markdown(f"### {lang}\n\n" + summary["side_by_side_tables"][lang]))

# %% [markdown]
# ## Whole benchmark: each mechanism against the baseline
# baseline → mechanism (difference [95% bootstrap interval over questions]).

# %%
display(Markdown(summary["benchmark_table"]))

# %% [markdown]
# ## The local LLM (notebook 10): answers and the LLM judge on the whole benchmark

# %%
display(Markdown(summary["local_llm_text"]))

# %% [markdown]
# ## The casebook's published figures (theirs)

# %%
pd.DataFrame(summary["casebook_rows"]).set_index("figure")

# %%
template = """# 08 · Summary

Inputs missing: {missing_text}.

## Q7: first rank of C1–C4 (bold = inside the Top-10), question in Chinese

{side_by_side_tables.zh}

## Q7, question in English

{side_by_side_tables.en}

## Whole benchmark: baseline → mechanism (difference [95% CI])

{benchmark_table}

## The local LLM (notebook 10)

{local_llm_text}

## The casebook's published figures (theirs: bge-m3, their corpus)

{casebook_table}
"""
stored = report.write_experiment(
    "08_summary", {**summary, "missing_text": ", ".join(summary["missing_inputs"]) or "none"}, template
)
report.write_headline(stored["headline_table"])
display(Markdown(report.experiment_dir("08_summary").joinpath("report.md").read_text()))
