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
# # 06 · Q7 mechanisms: does one mechanism bring Q7's missing pieces into the Top-10?
#
# **Question.** The casebook tried six mechanisms on Q7 and none brought C1–C3 into the Top-10. For
# the mechanism named in the parameters: where do C1–C4 first appear after it, for Q7's three
# phrasings and both languages, and what does it do to the whole answerable benchmark (hit@5,
# coverage@10, MRR, and coverage at the mechanism's own evidence size), as a paired difference
# against the baseline with a 95% confidence interval over questions (McNemar's exact test and its interval for
# hit@5, a paired bootstrap for the other metrics)?
#
# **Configuration.** Baseline: dense retrieval, default embedder, top 5 (`config.yaml`).
# Mechanisms: `topk` (k = 10 / 20), `dedup_mmr` (near-duplicate demotion and MMR over the top 50),
# `reranker` (bge-reranker-v2-m3 over the top 20 when its files are here, and always the offline LLM
# reranker `retrieval.offline_reranker`: P("yes") from a local Qwen2.5-Coder's next-token logits),
# `query_split` (rule-based sentence / clause splitting with RRF or round-robin merge; LLM splitting),
# `query_rewrite` (LLM rewriting; the casebook's hand-written document-aligned phrasing of Q7),
# `embedding` (every other available embedder), `hybrid` (BM25 + dense RRF). LLM variants use the
# model `generation.llm_tasks` names for the task (temperature 0, query replies capped at 96 tokens),
# every call recorded under `results/llm_calls/` and replayed. A question whose LLM call failed or has
# no record is reported as failed (with its error kind) and left out of the paired comparison, which
# then says on how many questions it ran; it is never ranked as the original question.
#
# **Re-run.** `make reproduce` runs it once per mechanism, or
# `.venv/bin/python -m rag_lib.runner.reproduce 06_q7_mechanism-<mechanism>`.
# Writes `results/06_q7_mechanism-<mechanism>/`.

# %% tags=["parameters"]
mechanism = "topk"
languages = ["zh", "en"]
llm_languages = ["zh", "en"]
n_boot = 200000  # resamples of every paired bootstrap (binary outcomes use the exact test)

# %%
from IPython.display import Markdown, display

from rag_lib.experiments.mechanisms import findings, run_mechanism
from rag_lib.experiments.mechanisms.report import forest_rows
from rag_lib.presentation import figures, page, report
from rag_lib.presentation.reports import mechanism as mechanism_report
from rag_lib.presentation.tables import table

NAME = f"06_q7_mechanism-{mechanism}"
result = run_mechanism(mechanism, languages=languages, llm_languages=llm_languages, n_boot=n_boot)
print(f"mechanism: {mechanism}; status: {result.status}; variants: {result.variants_text}")
if result.status == "unavailable":
    display(Markdown(f"**Not run: the model is not available on this machine.** {result.reason}"))

# %% [markdown]
# ## Provenance, and the models that are not here

# %%
if result.unavailable:
    display(table(result.unavailable, label="model", value="why not available"))
else:
    print("every model this mechanism can use is on this machine")
page.setup_line(result.provenance)

# %% [markdown]
# ## Q7: first rank of each piece, baseline and after the mechanism

# %%
original = [row for row in result.q7_rows if row.phrasing == "original"]  # the page shows Q7 as asked; the CSV all
page.long_table(original + [row for row in result.q7_rows if row.phrasing != "original"],
                report.experiment_dir(NAME) / "q7_ranks.csv", examples=len(original))
page.show_figure(figures.piece_ranks_of(result.q7_rows, ("variant", "phrasing", "language"),
                                        report.experiment_dir(NAME) / "q7_ranks.png",
                                        title=f"Q7: first rank of each piece, baseline and {mechanism}"))

# %% [markdown]
# ## The answerable questions each variant was compared on (`compared on`: all of them, or the sample its notes name): paired difference against the baseline
# `95% CI`: each comparison on its own. `adjusted (Holm)`: difference [its interval at level α·p/p_Holm, which excludes 0 exactly when p_Holm < 0.05];
# Holm-adjusted p, over every comparison of this run; "fixed": no question changed, left out of the family.

# %%
page.show_figure(figures.forest(forest_rows(result), "difference",
                                report.experiment_dir(NAME) / "benchmark_effects.png",
                                title=f"{mechanism}: each variant − baseline on the answerable questions"))
page.long_table(result.benchmark_rows, report.experiment_dir(NAME) / "benchmark_rows.csv", examples=8,
                shown=["variant", "language", "metric", "baseline", "mechanism", "diff", "95% CI", "adjusted (Holm)"],
                signed=["diff"])

# %% [markdown]
# A variant run on a stratified sample (the reranker's: every baseline miss and as many others, drawn at random)
# overstates what it can gain on the whole benchmark; below, each difference weighted back to every answerable
# question (a point estimate; empty for a variant run on every question).

# %%
table([row for v in result.variants for row in v.weighted_back(result.provenance.n_answerable)])

# %% [markdown]
# ## What the LLM produced for Q7 (LLM variants only)

# %%
for variant in result.variants:
    if variant.q7_llm_outputs is not None:  # an LLM variant
        for text, outcome in variant.q7_llm_outputs.items():
            produced = " | ".join(outcome.queries) if outcome.queries else outcome.error_kind
            print(f"[{variant.name}] {text}\n  -> {outcome.status}: {produced}")
    if variant.llm_calls is not None:
        by_status = ", ".join(f"{status} {n}" for status, n in variant.llm_calls.by_status.items())
        print(f"[{variant.name}] {variant.llm_calls.calls} LLM calls ({by_status})")
    for note in variant.notes:
        print(f"[{variant.name}] note: {note}")

# %%
stored = report.write_experiment(NAME, result, mechanism_report.report_markdown, findings=findings)
page.closing(stored, {"setup": result.provenance})
