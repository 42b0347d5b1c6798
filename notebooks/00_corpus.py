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
# # 00 · The corpus: snapshot → normalized pages → chunks
#
# **Question.** What exactly does retrieval search over? Every later rank is a rank among these
# chunks, so this notebook builds them and compares their shape with the casebook's corpus
# (section 01 and the reproduction notes of section 08).
#
# **Configuration.** Snapshot batch and chunk limit from `rag_lib/config.yaml` (printed below).
# No model is used here. Normaliser: `rag_lib.corpus.normalize` with the section rules in
# `data/snapshots/<batch>/sections.yaml`; chunker: `rag_lib.corpus.structural_chunking` (structure-aware, zero overlap).
#
# **Re-run.** `make reproduce` (all notebooks) or `.venv/bin/python -m rag_lib.runner.reproduce 00_corpus`.
# Outputs: `data/snapshots/<batch>/normalized/`, `chunks.jsonl`, and `results/00_corpus/`.
#
# Corpus licence: Cloudflare documentation © Cloudflare, Inc., CC-BY-4.0
# (source: github.com/cloudflare/cloudflare-docs; see `data/snapshots/<batch>/raw/README.md`).

# %% tags=["parameters"]
batch = None  # None: the batch named in rag_lib/config.yaml
max_chars = None  # None: the chunk size limit in rag_lib/config.yaml
batches = None  # None: every batch in snapshot.batches of rag_lib/config.yaml (compared side by side)

# %%
import warnings

import pandas as pd
from IPython.display import display

from rag_lib import corpus as corpus_mod
from rag_lib.benchmark.batch_labels import label_status
from rag_lib.core.casebook import published
from rag_lib.core.config import snapshot_batches
from rag_lib.experiments.corpus import corpus_result, findings
from rag_lib.presentation import figures, page, report
from rag_lib.presentation.reports import corpus as corpus_report
from rag_lib.presentation.tables import Table, table

corpus = corpus_mod.build_corpus(batch, max_chars)
chunks_path = corpus_mod.write_corpus(corpus)
stats = corpus_mod.corpus_stats(corpus)
print(f"batch: {stats['batch']} | chunk limit: {stats['max_chars_limit']} characters | wrote {chunks_path.name}")

# %% [markdown]
# ## Our corpus beside the casebook's
# The casebook's figures are theirs (26 pages of snapshot v1-2026-10-04); ours come from this run.

# %%
theirs = published()["corpus"]
Table([
    {"figure": figure, "ours": ours, "casebook (published)": published_}
    for figure, ours, published_ in [
        ("pages", stats["pages"], theirs["pages"]),
        ("chunks", stats["chunks"], theirs["chunks"]),
        ("embeddable chunks", stats["embeddable_chunks"], theirs["embeddable_chunks"]),
        ("heading-only chunks", stats["heading_only_chunks"], theirs["chunks"] - theirs["embeddable_chunks"]),
        ("median chunk length (chars)", stats["median_chars"], theirs["median_chars"]),
        ("longest chunk (chars)", stats["max_chars"], theirs["max_chars"]),
        ("chunks over the limit", len(stats["oversized"]), theirs["oversized"]),
    ]
])

# %% [markdown]
# ## Chunks over the limit
# Only a single table, code block or `<details>` may exceed the limit; it is kept whole.

# %%
table(stats["oversized"])

# %% [markdown]
# ## Chunk length distribution

# %%
histogram = figures.chunk_length_histogram(
    [c.n_chars for c in corpus.embeddable],
    stats["max_chars_limit"],
    report.experiment_dir("00_corpus") / "chunk_lengths.png",
)
page.show_figure(histogram)

# %% [markdown]
# ## Chunks per page

# %%
table(stats["chunks_per_page"], label="page", value="chunks")

# %% [markdown]
# ## What normalisation removed
# Every removal is logged in `normalized/removals.jsonl`: front-matter, imports, interface-only
# components, and the sections that `sections.yaml` drops from long mixed pages (with the reason
# recorded there). The Workers pricing page loses its KV section, so the casebook's Q9a
# ("how large is the Workers KV free allowance?") truly has no answer in this corpus.

# %%
removals = pd.DataFrame([r.__dict__ for p in corpus.pages for r in p.removals])
by_kind = removals.groupby("kind").agg(count=("chars", "size"), chars=("chars", "sum")).reset_index()
display(table(by_kind.to_dict("records")))
display(table(removals[removals["kind"].str.startswith("section")][["page", "detail", "chars"]].to_dict("records")))
print("normaliser warnings:", stats["warnings"] or "none")

# %% [markdown]
# ## Every batch side by side
# Each batch in `snapshot.batches` is normalised and chunked here (its `normalized/` and
# `chunks.jsonl` are written); no batch but the default is embedded in this notebook. "Unknown
# components" lists components the normaliser has no handler for (their text would be unwrapped
# or lost): it must be empty. Warnings are the source defects the normaliser repaired or reports.

# %%
others = [b for b in (batches or snapshot_batches()) if b != stats["batch"]]
with warnings.catch_warnings():  # each warning is kept on its page and printed below; Python's own
    warnings.simplefilter("ignore", UserWarning)  # format would print this machine's source path
    corpora = {stats["batch"]: corpus} | {b: corpus_mod.build_corpus(b, max_chars) for b in others}
for other in others:
    corpus_mod.write_corpus(corpora[other])
batch_stats = {b: corpus_mod.corpus_stats(c) for b, c in corpora.items()}
batch_table = {b: corpus_mod.batch_summary(s) for b, s in batch_stats.items()}
table(batch_table, label="batch")

# %%
for b, s in batch_stats.items():
    messages = [m for page_messages in s["warnings"].values() for m in page_messages]
    print(f"{b}: {len(messages)} warnings" + "".join(f"\n  {m}" for m in messages))

# %% [markdown]
# ## The benchmark's labels in every batch
# `data/benchmark/questions.yaml` is labelled on the default batch. Here every gold locator is
# matched against each batch's chunks, and every `absent` string of an unanswerable question is
# searched for: a hit means a page of that batch may answer the question, so its label needs a
# person's review before that batch is scored. The reviews, and gold locators on pages only that batch
# has, live in `data/benchmark/batches/<batch>.yaml` (`rag_lib.benchmark.batch_labels`).

# %%
labels = {b: label_status(b, c.chunks) for b, c in corpora.items()}
table(
    {b: {"questions": v["questions"], "locators": v["locators"], "unresolved locators": len(v["unresolved_locators"]),
         "absent check fails": ", ".join(v["absent_failed"]) or "none",
         "extra gold locators (this batch only)": v["extra_locators"],
         "answered in this batch": ", ".join(v["answered_here"]) or "none",
         "unreviewed": ", ".join(v["unreviewed"]) or "none"} for b, v in labels.items()}, label="batch"
)

# %%
table([{"batch": b, **hit, "pages": ", ".join(hit["pages"][:4]) + (" …" if len(hit["pages"]) > 4 else "")}
       for b, v in labels.items() for hit in v["absent_hits"]])

# %%
stored = report.write_experiment(
    "00_corpus", corpus_result(stats, len(removals), theirs, batch_table, labels), corpus_report.report_markdown,
    findings=findings,
)
page.closing(stored, {"corpus": {"batch": stats["batch"], "chunk limit (characters)": stats["max_chars_limit"],
                                  "batches compared": batches or snapshot_batches()}})
