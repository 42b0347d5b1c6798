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
# # 05 · Q7 diagnosis: everything looks relevant, yet the answer is incomplete
#
# **Question.** For Q7 (environment variables, secrets and plain configuration; local versus
# production), what is in the Top-10, where does each of its four pieces C1–C4 first appear, how
# many are covered, and at which layer does retrieval fail: is a piece missing from the corpus, just
# outside the top k, or there but ranked deep? Asked for each of the casebook's three phrasings
# (original, Chinese-terms, document-aligned) in Chinese and English.
#
# **Configuration.** Dense retrieval with the default embedder and k = `retrieval.top_k` (`config.yaml`)
# for the layer diagnosis (worst piece: ≤ k in top k; ≤ 2k just outside; deeper = ranked deep). The
# casebook's published ranks (bge-m3 on their snapshot) are printed beside ours and marked as theirs.
#
# **Re-run.** `make reproduce`, or `.venv/bin/python -m rag_lib.runner.reproduce 05_q7_diagnosis`.
# Writes `results/05_q7_diagnosis/`.

# %% tags=["parameters"]
retriever = "dense"
k = None  # None: retrieval.top_k in config.yaml
languages = ["zh", "en"]

# %%
from IPython.display import display

from rag_lib.core.config import RunConfig
from rag_lib.experiments.q7_diagnosis import findings, ranks_figure, run_q7_diagnosis
from rag_lib.presentation import page, report
from rag_lib.presentation.reports import q7_diagnosis as q7_diagnosis_report
from rag_lib.presentation.tables import table
from rag_lib.results.typed_json import encode

NAME = "05_q7_diagnosis"
config = RunConfig.from_settings(k=k)  # config.yaml, with this notebook's parameters
result = run_q7_diagnosis(retriever, k=config.k, languages=languages)
display(table(result.pieces, label="piece", value="what the piece is"))
page.setup_line(result.provenance)

# %% [markdown]
# ## Piece ranks and layer, ours beside the casebook's (theirs)

# %%
display(table(result.rank_rows, ["source", "phrasing", "language", "C1", "C2", "C3", "C4", f"in top {config.k}",
                                 "in top 10", "layer"]))
page.show_figure(ranks_figure(result, report.experiment_dir(NAME) / "q7_ranks.png", config.k))

# %% [markdown]
# ## Top-10 of each phrasing and language
# Each phrasing's question and where it fails; then the first phrasing's Top-10 (every Top-10 is in the CSV).

# %%
display(table([{"phrasing": phrasing, "language": lang, "question": case.question,
                f"covered in top {config.k}": case.coverage_at_k, "in top 10": case.coverage_top10,
                "layer": case.layer} for phrasing, by_lang in result.cases.items() for lang, case in by_lang.items()]))
page.long_table([{"phrasing": phrasing, "language": lang, **encode(row)}
                 for phrasing, by_lang in result.cases.items() for lang, case in by_lang.items() for row in case.top10],
                report.experiment_dir(NAME) / "top10.csv", examples=10,
                shown=["phrasing", "language", "rank", "score", "heading", "page", "covers"], decimals=4)

# %%
stored = report.write_experiment(NAME, result, q7_diagnosis_report.report_markdown, findings=findings)
page.closing(stored, {"setup": result.provenance})
