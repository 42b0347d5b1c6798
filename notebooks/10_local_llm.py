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
# **What counts as an answer.** An answer is *shown* only when every citation is a meaningful span of
# its chunk (a sentence, list item or table row; never a word fragment, markup or text addressed to a
# model) and every number with its unit, command, key, name and URL it states is in a verified quote
# (`rag_lib/generation/support.py`); an answer that only restates the question is no answer. The rows
# of the chunk pipeline replay the same recorded calls as before this rule; the table "before → after"
# shows what it changed.
#
# **The narrowed pipeline** (`rag_lib/generation/narrowed.py`) sends the model the sentences, list items
# and table rows of the Top-5 most relevant to the question (default embedder and lexical overlap,
# fused; `generation.narrowing` in `workbook.yaml`), each with an id inside `<evidence>` tags marked as
# data, and asks for the ids it quotes first, then the reply in the question's language, then the
# status. Its judge lists the question's parts with the id that answers each (or "none") and is
# sufficient only when every part is supported.
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
from IPython.display import Image, Markdown, display

from rag_lib.config import RunConfig
from rag_lib.experiments.llm_eval import ANSWER_COLUMNS, findings, run_local_llm
from rag_lib.workbook import figures, report
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
print("sample:", ", ".join(choice["sample"]), "| quality signal:", report.prose(choice["quality_signal"]))
table(sorted(choice["rows"], key=lambda row: (row["task"], row["model"])))

# %%
print("rule:", result.pick_rule)
table(result.model_picks)

# %%
table(sorted(choice["details"], key=lambda row: (row["task"], row["model"], row["question"], row["lang"])))

# %% [markdown]
# ## Answers on the whole benchmark: local LLM and extractive baseline, ungated and gated

# %%
table(result.answer_rows, ANSWER_COLUMNS)

# %% [markdown]
# ### Before → after the support check (the same recorded calls, judged by the new rule)

# %%
table(result.before_after)

# %% [markdown]
# ### The narrowed pipeline against the answers issue's targets

# %%
table(result.targets)

# %% [markdown]
# ### Where the key facts are lost
#
# Per language, over the answerable questions with a checkable key fact: every key fact stated in the
# Top-5 chunks (retrieval kept them), in the units the narrowed pipeline sends (narrowing kept them),
# and in the answer shown (the model wrote them and the support check let the answer through). Each
# share is of the row above it, with its Wilson 95% interval.

# %%
table(result.funnel)

# %% [markdown]
# ### How far the key-fact measure can be trusted: a hand-checked sample
#
# 48 answers drawn by a seeded rule (`data/benchmark/answer_checks.yaml`) were read against their pages
# and judged correct, partial, wrong or no answer, each with its reason; "correct" by hand is compared with
# "states every key fact".

# %%
hand = result.hand_checks
print(f"agreement {hand['percent']:.1f}% {hand['ci95']} (Wilson 95%), kappa {hand['kappa']:.2f}, n = {hand['n']}")
for line in hand["disagreements"]:
    print("-", line)

# %% [markdown]
# ## The LLM judge as a gate, beside floor+aspects ("insufficient" is the positive class)
#
# The floor+aspects rows are in-sample (its parameters were fitted on these questions; its
# leave-one-out figures are in 03); the judges fit nothing.

# %%
table(result.judge_rows)

# %% [markdown]
# ## Selective answering (Joren et al., ICLR 2025)
#
# Per language, a logistic model of "showing the narrowed pipeline's output is right" (a shown answer
# stating every key fact, or an unanswerable question not answered) over the gate's best score and
# aspect coverage, the narrowed judge's verdict and whether the model answered; its probabilities are
# cross-validated (out of sample), and abstaining below a threshold trades coverage for accuracy.

# %%
curves = {lang: block["curve"] for lang, block in result.selective.items() if "curve" in block}
for lang, block in result.selective.items():
    if "curve" not in block:
        print(f"{lang}: {block['not_run']}")
    else:
        everything = block["answer_everything"]
        print(f"{lang}: n = {block['n']} ({len(block['left_out'])} left out), area under the curve "
              f"{block['auc']:.3f}; answering everything: accuracy {everything['selective_accuracy']:.3f}")
if curves:
    display(Image(filename=str(figures.accuracy_coverage(curves, report.experiment_dir(NAME) / "selective.png",
                                                        title="selective answering, cross-validated"))))

# %% [markdown]
# ## Injection: planted instructions and a model that obeys them
#
# Each variant is planted into a copy of Q9a's top evidence chunk; a scripted model answers with the
# planted claim and quotes the planted text. `claim_shown` is whether the claim reached the reader.

# %%
print(f"planted claims shown as answers: {result.injection['claims_shown']} of {result.injection['n_asked']}")
table(result.injection["rows"])

# %% tags=["report"]
template = """# 10 · A real offline LLM

Models per task (`generation.llm_tasks`): {tasks}.

## Answers on the whole benchmark (Top-{k}, dense)

Rates leave out questions whose call has no record (`missing`); fill them with `make llm-runs`.

{answer_table}

Before → after the support check (same recorded calls):

{before_after_table}

The narrowed pipeline against the targets:

{target_table}

Where the key facts are lost (narrowed pipeline, ungated; each share is of the row above):

{funnel_table}

## The LLM judge beside floor+aspects

{judge_table}

## Injection

{injection_summary}

## Findings

{findings_text}
"""
stored = report.write_experiment(NAME, result, template, findings=findings)
display(Markdown(report.report_markdown(NAME)))
