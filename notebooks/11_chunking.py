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
# # 11 · Chunking strategies: is structural chunking worth Halo's "+18 points", and what does context cost?
#
# **Question.** Halo (the second seed) ranks structural chunking first: "+18 points of hit rate, and the
# cheapest change on the list", against fixed-size, fixed-size with overlap (about 512 tokens, 15%
# overlap) and semantic chunking. On this corpus and benchmark, how do the four compare on hit@5,
# coverage@10 and MRR, per language, with paired intervals? Where do Q7's pieces land under each? And
# Halo's context claim: five passages instead of twenty "cut cost per answer by roughly two thirds":
# what does the Top-5 against the Top-20 cost and cover here?
#
# **Configuration.** Strategies: `chunking.strategies` in `config.yaml` (`rag_lib/corpus/chunkers.py`); token
# sizes by the default embedder's tokenizer. Every strategy is embedded with the default embedder
# (multilingual-e5-small, offline) and ranked with dense retrieval. Gold pieces are the benchmark's
# locators placed as character spans of the page (`rag_lib/evaluation/gold_spans.py`): a chunk counts when it holds
# the whole span, else the chunk(s) holding its largest part; on the structural chunks this reproduces
# the benchmark's own labels exactly (checked below). Halo's figures are theirs (one production system,
# internal documentation) and are printed beside ours, marked as theirs.
#
# **Re-run.** `make reproduce`, or `.venv/bin/python -m rag_lib.runner.reproduce 11_chunking`. The first run
# embeds every strategy's chunks and, for the semantic chunker, every sentence of the corpus (several
# minutes on 2 cores; cached after). Writes `results/11_chunking/`.

# %% tags=["parameters"]
languages = ["zh", "en"]
n_boot = 200000  # resamples of every paired bootstrap (binary outcomes use the exact test)

# %%
from IPython.display import display

from rag_lib.experiments.chunking import findings, run_chunking
from rag_lib.presentation import figures, page, report
from rag_lib.presentation.reports import chunking as chunking_report
from rag_lib.presentation.tables import table

NAME = "11_chunking"
result = run_chunking(languages=languages, n_boot=n_boot)
print(f"gold spans vs the benchmark's chunk-id labels on the structural chunks: "
      f"{result.gold_span_differences} piece(s) differ")
page.setup_line(result.provenance)

# %% [markdown]
# ## The strategies: how many chunks, how large (tokens of the default embedder)
#
# Tokens of chunk text, counted exactly by the default embedder's tokenizer. The fixed and semantic
# budgets count the whole embedding input (prefix, title, heading path, text), so none of their chunks
# exceeds the embedder's window; `overlong_inputs` counts the inputs that do (the embedder splits them
# into windows and averages the vectors): only structural chunks, which are cut by characters, can.

# %%
table(result.strategies, ["strategy", "kind", "description", "n_chunks", "median_tokens", "p90_tokens",
                          "max_tokens", "overlong_inputs", "cosine_threshold"])

# %% [markdown]
# ## Whole benchmark (answerable questions): hit@5, coverage@10, MRR, and tokens the Top-5 sends
#
# Small chunks send fewer tokens in the same k, so the strategies are also compared at an equal token
# budget: `coverage@equal-tokens` is the piece coverage of the leading chunks that fit, per question, the
# tokens the structural Top-5 sends for it (`chunks@equal-tokens`: how many chunks that is, on average).

# %%
display(table(result.metric_rows, decimals={"tokens@5": 0, "chunks@equal-tokens": 1}))
page.show_figure(figures.strategy_tradeoff(result.metric_rows, "tokens@5", "hit@5",
                                           report.experiment_dir(NAME) / "strategy_tradeoff.png",
                                           title="hit@5 against the tokens the Top-5 sends, per chunking strategy"))

# %% [markdown]
# ## Structural − each strategy (paired 95% interval over questions: exact for hit@k, bootstrap otherwise; and Holm-adjusted)
# `adjusted (Holm)`: difference [its interval at level α·p/p_Holm, which excludes 0 exactly when p_Holm < 0.05]; p_Holm over every comparison of the
# table (strategies × languages × metrics). The Findings judge by the adjusted figures.

# %%
table(result.comparison_rows, ["strategy", "language", "metric", "structural", "strategy_value",
                               "structural − strategy", "95% CI", "p", "adjusted (Holm)"],
      signed=["structural − strategy"])

# %% [markdown]
# ## Q7: first rank of C1–C4 under each strategy (dense, original phrasing)

# %%
table(result.q7_rows)

# %% [markdown]
# ## Context size against cost: the Top-5 against the Top-20 (structural chunks, dense order)

# %%
print(f"price: {result.priced_model} input {result.price.input_per_mtok} USD per million tokens "
      f"({result.price.source})")
table(result.context_rows, decimals={"tokens per question": 0})

# %%
stored = report.write_experiment(NAME, result, chunking_report.report_markdown, findings=findings)
page.closing(stored, {"setup": result.provenance})
