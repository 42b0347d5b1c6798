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
# # 03 · Q9a: no evidence in the corpus, and the evidence-sufficiency gate on the whole benchmark
#
# **Question.** Q9a asks for the Workers KV free allowance, which the corpus does not contain. Is that
# true of our corpus? Can a score threshold tell Q9a's Top-5 from Q5's (casebook: 0.574–0.593 vs
# 0.608, "a score threshold cannot block it")? Does the gate decline without calling the model, and
# what do the generators do when the gate is bypassed on purpose? How well does each gate separate
# "enough evidence" from "not enough" over the whole benchmark, and what does the default generator
# do behind the gate on every benchmark question?
#
# **Configuration.** Dense retrieval with the default embedder, Top-k from the parameters. Gates from
# `rag_lib.evidence`: `checklist` (an oracle built from the gold labels), `floor`, `aspects` and
# `floor+aspects`, their parameters chosen by one fixed rule (maximise refusal correctness − false-
# refusal rate) over every candidate value on this same benchmark. Those figures are in-sample; beside
# them, the same rule re-fitted out of sample: leave-one-out, folds grouped by gold page, and fitted
# without the 17 near-miss unanswerable questions (topic in the corpus, fact not) then tested on them.
# Rates carry Wilson 95% intervals (the counts are small). The `ask` command uses the parameters
# fitted on all questions. Beside them, an LLM sufficiency judge (question + evidence → sufficient or
# not, with the missing aspects; the model of `generation.llm_tasks.judge`) on the whole benchmark, its
# calls recorded in `results/llm_calls/` and replayed (a call without a record is counted as failed,
# never as a decision). The cell after the parameters prints the models,
# backends and versions from provenance.
#
# **Re-run.** `.venv/bin/python -m rag_lib.runner.reproduce 03_q9a_no_evidence`. Writes `results/03_q9a_no_evidence/`.

# %% tags=["parameters"]
languages = ["zh", "en"]
k = None  # None: retrieval.top_k in config.yaml
generators = ["extractive", "llama_cpp"]
bypass_lang = "en"
generation_lang = "en"

# %%
from IPython.display import Markdown, display

from rag_lib.core.config import RunConfig
from rag_lib.experiments.q9a import findings, run_q9a
from rag_lib.presentation import figures, page, report
from rag_lib.presentation.reports import q9a as q9a_report
from rag_lib.presentation.tables import settings, table
from rag_lib.results.typed_json import encode

config = RunConfig.from_settings(k=k)  # config.yaml, with this notebook's parameters
result = run_q9a(languages=languages, k=config.k, generators=generators, bypass_lang=bypass_lang,
                 generation_lang=generation_lang)
models = {"retrieval": result.provenance.embedder, "generation (whole benchmark)": result.generation.generator,
          **{f"bypass: {name}": {"model": row.model, "model_version": row.model_version}
             for name, row in result.bypass.generators.items()}}
page.setup_line(models)

# %% [markdown]
# ## Corpus check: chunks that mention KV, and the allowance strings no chunk may contain

# %%
settings(result.corpus_check)

# %% [markdown]
# ## Q9a's Top-5 scores vs Q5's rank-5 score

# %%
for lang in languages:
    display(Markdown(f"**{lang}**"), table(result.top[lang], decimals=4))
table(result.scores, label="language", decimals=4)

# %% [markdown]
# ## Over the whole benchmark: how far the best scores of answerable and unanswerable questions overlap

# %%
display(table(result.overlap, label="language", decimals=4))
page.show_figure(figures.score_distributions(
    result.best_scores, result.chosen_floors(languages),
    report.experiment_dir("03_q9a_no_evidence") / "best_scores.png",
    title="Best retrieval score per question: answerable vs unanswerable"))

# %% [markdown]
# ## Floor sweep: refusal correctness vs false refusals (answerable questions with complete evidence)

# %%
sweep_png = figures.threshold_sweep(
    {lang: result.floor_sweep[lang] for lang in languages},
    result.chosen_floors(languages),
    report.experiment_dir("03_q9a_no_evidence") / "floor_sweep.png", title="Score-floor gate, in-sample")
page.show_figure(sweep_png)
table({lang: c.floor_aspects for lang, c in result.calibration.items()}, label="language", decimals=4)

# %% [markdown]
# ## Every gate on the whole benchmark ("insufficient" is the positive class)

# %%
table([{"language": lang, "gate": gate, **encode(figures_)} for lang, by_gate in result.gates.items()
       for gate, figures_ in by_gate.items()])

# %% [markdown]
# ## In-sample vs out-of-sample: the tuned gates re-fitted without the questions they decide
# k/n = rate [Wilson 95% interval]. `near_miss_held_out`: fitted without the near-miss questions,
# measured on them only.

# %%
for lang in languages:
    display(Markdown(f"### {lang}"), table(result.validation_rows[lang]))

# %% [markdown]
# ## Every gate on each near-miss question (in-sample parameters)

# %%
for lang in languages:
    display(Markdown(f"**{lang}**"), table(result.near_miss.rows[lang]))

# %% [markdown]
# ## Normal path: does the gate decline Q9a before the LLM is asked? (a decline records zero calls)

# %%
table(result.gated_decline, label="language")

# %% [markdown]
# ## Bypass: the generators face the five distractors (judged automatically)

# %%
# (call keys and model versions: in the provenance appendix)
table(result.bypass.generators, ["model", "calls", "replayed", "error_kind", "no_number", "no_borrowed_figure",
                                 "no_citation", "passed", "status", "answer", "citations", "borrowed"], label="generator")

# %% [markdown]
# ## The LLM sufficiency judge as a gate, beside floor+aspects, every benchmark question
# "Insufficient" is the positive class; `judged` leaves out calls that failed or have no record yet
# (`failed`), so rates over few judged questions say little.

# %%
display(table(result.llm_judge_rows))
page.show_figure(figures.gate_roc(
    {lang: result.floor_sweep[lang] for lang in languages}, result.operating_points(languages),
    report.experiment_dir("03_q9a_no_evidence") / "gate_roc.png",
    title="Each gate's trade-off, in-sample (the floor over every threshold)"))

# %% [markdown]
# ## Default generator behind the gate, every benchmark question

# %%
page.long_table(result.generation.rows, report.experiment_dir("03_q9a_no_evidence") / "generation_rows.csv",
                shown=["question", "answerable", "gate", "status", "declined_by", "correct", "answer", "citations_valid",
                       "citations_total"])

# %%
stored = report.write_experiment("03_q9a_no_evidence", result, q9a_report.report_markdown, findings=findings)
page.closing(stored, {**models, "generation": {k: v for k, v in encode(result.generation).items() if k != "rows"}})
