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
# # 07 · Recovery loop: narrower questions, each run as a new ordinary query
#
# **Question.** When a compound question's Top-5 misses pieces, do 2–3 narrower questions, each
# retrieved again with the same retriever and nothing else changed, bring the missing pieces into the
# Top-5 / Top-10? On Q7 (casebook section 06: theirs, S2 takes C3 from rank 36 to 2) and on every
# answerable compound question of the benchmark.
#
# **Configuration.** Retriever: dense, default embedder. Suggestions come from three labelled
# sources: `llm`, the local LLM of the `recovery` task (`generation.llm_tasks` in `config.yaml`; its
# model is named in the report), one call per question and language, recorded in `results/llm_calls/`
# and replayed after (a reply that fails the schema is a recorded outcome, counted as `failed`); `rule`, a deterministic
# clause/aspect splitter with no model (a baseline); `casebook`, the casebook's own S1–S3 for Q7,
# replayed on our retriever. The suggestion that gets an answer is an **oracle choice from the gold
# labels** (most pieces newly brought into the Top-5, tie → first), standing in for the user's pick
# (the casebook's user picked S2); it is answered by the default generator (extractive offline) from
# its own Top-5, citations checked.
#
# **Re-run.** `make reproduce`, or `.venv/bin/python -m rag_lib.runner.reproduce 07_recovery_loop`.
# Writes `results/07_recovery_loop/`. The first run records the LLM calls (minutes on 2 cores);
# later runs replay them.

# %% tags=["parameters"]
languages = ["zh", "en"]
k = None  # None: retrieval.top_k in config.yaml
retriever = "dense"
llm = None  # None: generation.llm_tasks.recovery in config.yaml
llm_mode = None  # None: RAG_LLM_MODE (make reproduce: replay_only)

# %%
from IPython.display import Markdown, display

from rag_lib.core.config import RunConfig
from rag_lib.experiments.recovery import casebook_rows, findings, q7_rank_rows, ranks_figure, run_recovery_experiment
from rag_lib.presentation import page, report
from rag_lib.presentation.reports import recovery as recovery_report
from rag_lib.presentation.tables import table
from rag_lib.results.recovery import piece_count_rows, suggestion_count_rows

config = RunConfig.from_settings(k=k)  # config.yaml, with this notebook's parameters
result = run_recovery_experiment(languages, k=config.k, retriever=retriever, llm=llm, llm_mode=llm_mode)
print("unavailable sources:", result.unavailable or "none")

# %% [markdown]
# ## What ran

# %%
page.setup_line(result.provenance)

# %% [markdown]
# ## Q7: each piece's rank for the original question and for each suggestion
# Q7's pieces, from the benchmark's labels; in each table the first row is the original question.

# %%
display(page.markdown(report.q7_pieces_lines()))
for lang in result.languages:
    for source, entry in result.q7[lang].items():
        display(Markdown(f"**{lang} · {source}** (status {entry.status}; the source's reason: {entry.reason})"))
        display(page.markdown(report.markdown_table(q7_rank_rows(entry))))
    page.show_figure(ranks_figure(result.q7[lang], lang, report.experiment_dir("07_recovery_loop") / f"q7_ranks_{lang}.png"))

# %% [markdown]
# THEIRS, from the casebook (bge-m3 and qwen3.8-flash on their 26-page snapshot; not measured here):

# %%
table(casebook_rows(result.casebook_published))

# %% [markdown]
# ## Q7: the chosen suggestion's grounded answer (oracle choice, see the header)

# %%
rows = []
for lang in result.languages:
    for source, entry in result.q7[lang].items():
        answer = entry.answer  # None: no suggestion was chosen
        rows.append({"language": lang, "source": source, "chosen": entry.chosen_question,
                     "status": answer.status if answer else None,
                     "valid citations": answer.citations.n_valid if answer and answer.citations else None,
                     "answer": answer.answer.answer if answer and answer.answer else None})
table(rows)

# %% [markdown]
# ## Every answerable compound question: pieces in the Top-5 / Top-10, before and after
# "after first": the original plus the first suggestion; "after random": expected over one suggestion
# picked at random (both without labels). "after best" (ORACLE: the labels pick the suggestion) and
# "after union" (POOLED: every suggestion's Top-k at once) are upper bounds, not what a system gets.
# The second table says how the suggestions went: "missing", questions whose call has no record yet;
# "failed", recorded calls that gave no usable suggestion.

# %%
display(table(piece_count_rows(result.benchmark), decimals=2), table(suggestion_count_rows(result.benchmark)))

# %%
stored = report.write_experiment("07_recovery_loop", result, recovery_report.report_markdown, findings=findings)
page.closing(stored, {"setup": result.provenance})
