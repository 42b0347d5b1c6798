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
# # 10 · A real offline LLM: Qwen2.5-Coder answers, judges and reranks
#
# **Question.** With a real (small) instruct model instead of the smoke-test SmolLM2, how often does
# the grounded answerer answer the answerable questions, with citations that pass the verbatim check,
# and decline the unanswerable ones, in Chinese and in English, ungated and behind the calibrated
# floor+aspects gate, beside the extractive baseline? And does an LLM sufficiency judge (the idea of
# "Sufficient Context", Joren et al., ICLR 2025) separate sufficient from insufficient evidence better
# than floor+aspects?
#
# **Configuration.** Local models from PyPI part packages (`rag_lib/generation/models.yaml`), run with
# llama-cpp-python, temperature 0, seed 0, JSON-schema constrained. Which model serves which task is
# `generation.llm_tasks` in `workbook.yaml`, chosen on the fixed sample of the first table (seconds per
# call and a quality signal per task). Dense retrieval with the default embedder, Top-5. Every call is
# recorded in `results/llm_calls/` and replayed; a call without a record is counted as *missing* and
# left out of every rate (fill them with `make llm-runs`), never counted as a decline.
#
# **Re-run.** `make reproduce` (replays), or `.venv/bin/python -m rag_lib.workbook.reproduce 10_local_llm`;
# `make llm-runs RUNS=10_local_llm` makes the missing calls live. Writes `results/10_local_llm/`.

# %% tags=["parameters"]
languages = ["zh", "en"]
k = None  # None: retrieval.top_k in workbook.yaml

# %%
from IPython.display import Markdown, display

from rag_lib.config import RunConfig
from rag_lib.experiments.llm_eval import ANSWER_COLUMNS, findings, run_local_llm
from rag_lib.workbook import report
from rag_lib.workbook.tables import table

NAME = "10_local_llm"
config = RunConfig.from_settings(k=k)  # workbook.yaml, with this notebook's parameters
result = run_local_llm(languages=languages, k=config.k)
display(table(result.models, ["description", "packages", "sha256", "licence"], label="model"))
table(result.tasks, label="task")

# %% [markdown]
# ## Model choice on a fixed sample (both models, every task)

# %%
choice = result.model_choice
print("sample:", ", ".join(choice["sample"]), "| quality signal:", choice["quality_signal"])
table(sorted(choice["rows"], key=lambda row: (row["task"], row["model"])))

# %%
table(sorted(choice["details"], key=lambda row: (row["task"], row["model"], row["question"], row["lang"])))

# %% [markdown]
# ## Answers on the whole benchmark: local LLM and extractive baseline, ungated and gated

# %%
table(result.answer_rows, ANSWER_COLUMNS)

# %% [markdown]
# ## The LLM judge as a gate, beside floor+aspects ("insufficient" is the positive class)

# %%
table(result.judge_rows)

# %% tags=["report"]
template = """# 10 · A real offline LLM

Models per task (`generation.llm_tasks`): {tasks}.

## Answers on the whole benchmark (Top-{k}, dense)

Rates leave out questions whose call has no record (`missing`); fill them with `make llm-runs`.

{answer_table}

## The LLM judge beside floor+aspects

{judge_table}

## Findings

{findings_text}
"""
stored = report.write_experiment(NAME, result, template, findings=findings)
display(Markdown(report.report_markdown(NAME)))
