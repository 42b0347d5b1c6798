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
# # 12 · Corpus size: does "relevant but ranked deep" get worse as the corpus grows?
#
# **Question.** Every other notebook ranks 32 pages. A real documentation site has thousands, with
# more near-duplicates (shared partials rendered on many pages) and more pages about neighbouring
# products. As the corpus grows from the labelled batch's pages to the whole wide batch (the sizes table), what
# happens to hit@5, coverage@10, the gate's declines (false refusals of answerable questions, and refusal of
# the unanswerable ones, which rising best scores should hurt), Q7's piece ranks, and which chunks take
# the Top-5 slots away from the gold?
#
# **Configuration.** `scale` in `config.yaml`: the wide batch, the intermediate sizes and the seeds.
# Each corpus is the labelled batch's pages plus the first pages of one seeded random order of the
# others, so the corpora are nested. Dense retrieval, default embedder (multilingual-e5-small,
# offline); a smaller corpus's ranking is the whole batch's restricted to its chunks (exact search).
# Gold on the wide batch: the benchmark's locators plus the wide batch's own labels
# (`data/benchmark/batches/`); the gate is floor+aspects with notebook 03's parameters, fitted on the
# labelled batch's questions (in-sample for them), and also out of sample ("held out": each question
# decided by the parameters fitted without it).
#
# **Re-run.** `make reproduce`, or `.venv/bin/python -m rag_lib.runner.reproduce 12_corpus_size`. The first
# run embeds the wide batch (about 2,000 chunks; several minutes on 2 cores, resumable, cached after).
# Writes `results/12_corpus_size/`.

# %% tags=["parameters"]
languages = ["zh", "en"]
n_boot = 200000  # resamples of every paired bootstrap (binary outcomes use the exact test)

# %%
from IPython.display import display

from rag_lib.experiments.corpus_size import findings, result_metrics, run_corpus_size
from rag_lib.presentation import figures, page, report
from rag_lib.presentation.reports import corpus_size as corpus_size_report
from rag_lib.presentation.tables import table
from rag_lib.results.corpus_size import DISTRACTOR_KINDS

NAME = "12_corpus_size"
result = run_corpus_size(languages=languages, n_boot=n_boot)
page.setup_line(result.provenance)

# %% [markdown]
# ## The corpora and the labels on the wide batch
#
# Chunks per size (mean over seeds), and what the wide batch's own labels add: extra gold locators
# on pages the labelled batch lacks, and a reviewer's decision on each unanswerable question whose
# `absent` string occurs in the wide batch (answered there: left out of its scores).

# %%
display(table(result.size_rows, decimals={"chunks (mean over seeds)": 1}))
print(f"extra gold locators on pages only the wide batch has: {result.labels.extra_locators}")
table(result.label_rows)

# %% [markdown]
# ## hit@5, coverage@10 and the gate against corpus size (bands: bootstrap 95% over questions)
#
# `declined (answerable)`: answerable questions the gate declines (mean over seeds); `false refusal rate`:
# of those whose Top-5 holds every gold piece; `unanswerable declined`: the share of unanswerable
# questions still unanswerable on the wide batch that the gate declines. "(held out)": out of sample.

# %%
out = report.experiment_dir(NAME)
out.mkdir(parents=True, exist_ok=True)
png = figures.size_curves(result.curve, result_metrics(result), out / "size_curves.png",
                          title="Dense retrieval as the corpus grows (nested corpora, seed-averaged)")
page.show_figure(png)
table(result.curve, decimals={"declined (answerable)": 1})

# %% [markdown]
# ## Change from the labelled batch's pages (paired 95% over questions: exact for hit@5, bootstrap for coverage; and Holm-adjusted)
# `adjusted (Holm)`: change [its interval at level α·p/p_Holm, which excludes 0 exactly when p_Holm < 0.05]; p_Holm over every row of this table.

# %%
table(result.change_rows, ["pages", "language", "metric", "smallest", "this size", "change", "95% CI", "p",
                           "adjusted (Holm)"], signed=["change"])

# %% [markdown]
# ## The gate's refusals of the unanswerable questions: the smallest corpus against the whole batch
# Paired by question (the same questions, the same pages for every seed at both ends); each count with its Wilson
# 95% interval, and McNemar's exact test on the questions whose refusal changed.

# %%
table(result.refusal_changes)

# %% [markdown]
# ## Q7: first rank of C1–C4 (a range when the page orders disagree)

# %%
display(table(result.q7_rows))
print("In the whole wide batch, the chunk holding each piece's first rank:")
table(result.q7_first)

# %% [markdown]
# ## What takes the Top-5 slots that hold no gold chunk
#
# Share of non-gold Top-5 slots by kind (first rule that holds): a chunk of a page the gold sits on;
# a chunk whose text is rendered on more than one page of the corpus (a shared partial); another
# page of the same product; another product. "from added pages": slots taken by pages beyond the
# labelled batch. Then the chunks that take such slots most often in the whole wide batch.

# %%
display(table(result.slot_rows, decimals={"non-gold slots per run": 1}))
page.show_figure(figures.stacked_shares(
    result.slot_rows, DISTRACTOR_KINDS,
    report.experiment_dir(NAME) / "top5_slots.png", overlay="from added pages",
    title="What fills the Top-5 slots gold does not, as the corpus grows"))
table(result.top_distractors)

# %%
stored = report.write_experiment(NAME, result, corpus_size_report.report_markdown, findings=findings)
page.closing(stored, {"setup": result.provenance})
