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
# # 02 · Q5 end to end: what working looks like
#
# **Question.** For the casebook's success case Q5 ("How do I configure an R2 bucket binding for
# Pages Functions, and access it in code?"), what does the Top-5 look like, does the evidence gate
# accept it, what answer comes back, do its citations check out, and where does the chunk with the
# Wrangler configuration syntax rank (the casebook found it at rank 8, outside the Top-5)? And does
# every bad input or backend fault end as a visible outcome rather than a crash?
#
# **Configuration.** Dense retrieval with the default embedder, Top-k from the parameters; gates
# from `rag_lib.evidence` with parameters chosen by the sweep of notebook 03 (same rule, same
# benchmark, recomputed here); the default generator of `config.yaml` behind the gate. Backend
# faults use a scripted LLM backend (no model). The first code cell after the parameters prints the
# models, backends and versions from provenance.
#
# **Re-run.** `.venv/bin/python -m rag_lib.runner.reproduce 02_q5_success`. Writes `results/02_q5_success/`.

# %% tags=["parameters"]
lang = "zh"  # the casebook asked Q5 in Chinese
languages = ["zh", "en"]
k = None  # None: retrieval.top_k in config.yaml
generator = None  # None: generation.default in config.yaml

# %%
from IPython.display import display

from rag_lib.core.config import RunConfig
from rag_lib.experiments.q5 import findings, run_q5
from rag_lib.presentation import page, report
from rag_lib.presentation.reports import q5 as q5_report
from rag_lib.presentation.tables import table

config = RunConfig.from_settings(k=k)  # config.yaml, with this notebook's parameters
result = run_q5(lang=lang, languages=languages, k=config.k, generator=generator)
setup = {"retrieval": result.provenance.embedder, "generator": result.generator}
page.setup_line(setup)

# %% [markdown]
# ## Top-k with headings and scores, and the gold pieces' first ranks

# %%
display(table(result.top, decimals=4))
table(result.pieces)

# %% [markdown]
# ## Gate decisions (checklist = an oracle: the casebook's per-question checklist, from the gold labels)
# `floor` and `floor+aspects` are two gates fitted separately in 03: the floor alone, and a floor fitted together
# with the aspect coverage, so each reason names its own floor.

# %%
table(result.decisions, ["sufficient", "reason", "missing"], label="gate")

# %% [markdown]
# ## The answer and its citations, each checked against the chunk it names

# %%
print(result.answer.result.answer.answer if result.answer.result.answer else result.answer)
table(result.citations, ["chunk_id", "valid", "reason", "deep_link"])

# %% [markdown]
# ## The same question answered by the local LLM (the `answer` model of `generation.llm_tasks`)
# Replayed from `results/llm_calls/`; a missing record shows as `replay_miss` (fill it with `make llm-runs`).

# %%
llm = result.llm_answer
print(f"{llm.generator.backend}:{llm.generator.model} — status {llm.result.status}"
      + (f" ({llm.result.error_kind})" if llm.result.error_kind else ""))
print(llm.result.answer.answer if llm.result.answer else llm.result.error)
table(llm.result.citations.citations if llm.result.citations else [], ["chunk_id", "valid", "reason", "deep_link"])

# %% [markdown]
# ## The Wrangler-configuration R2 chunk (casebook: rank 8)
# Two candidates: the Workers Wrangler reference (`workers/wrangler/configuration`, heading path ending
# "R2 buckets"; the benchmark's note names this one) and the Pages page on Wrangler configuration.

# %%
table(result.wrangler_r2)

# %% [markdown]
# ## Bad input and backend faults: each a recorded outcome

# %%
table(result.faults)

# %%
stored = report.write_experiment("02_q5_success", result, q5_report.report_markdown, findings=findings)
page.closing(stored, setup)
