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
# **Re-run.** `.venv/bin/python -m rag_lib.reproduce 03_q9a_no_evidence`. Writes `results/03_q9a_no_evidence/`.

# %% tags=["parameters"]
languages = ["zh", "en"]
k = 5
generators = ["extractive", "llama_cpp"]
bypass_lang = "en"
generation_lang = "en"

# %%
from IPython.display import Markdown, display

from rag_lib import figures, report
from rag_lib.experiments.q9a import findings, run_q9a
from rag_lib.tables import settings, table

result = run_q9a(languages=languages, k=k, generators=generators, bypass_lang=bypass_lang,
                 generation_lang=generation_lang)
models = {"retrieval": result["provenance"]["embedder"], "generation (whole benchmark)": result["generation"]["generator"],
          **{f"bypass: {name}": {"model": row["model"], "model_version": row["model_version"]}
             for name, row in result["bypass"].items() if name != "lang"}}
table(models, label="role")

# %% [markdown]
# ## Corpus check: chunks that mention KV, and the allowance strings no chunk may contain

# %%
settings(result["corpus_check"])

# %% [markdown]
# ## Q9a's Top-5 scores vs Q5's rank-5 score

# %%
for lang in languages:
    display(Markdown(f"**{lang}**"), table(result["top"][lang], decimals=4))
table(result["scores"], label="language", decimals=4)

# %% [markdown]
# ## Over the whole benchmark: how far the best scores of answerable and unanswerable questions overlap

# %%
table(result["overlap"], label="language", decimals=4)

# %% [markdown]
# ## Floor sweep: refusal correctness vs false refusals (answerable questions with complete evidence)

# %%
sweep_png = figures.threshold_sweep(
    {lang: result["floor_sweep"][lang] for lang in languages},
    {lang: result["calibration"][lang]["floor"]["floor"] for lang in languages},
    report.experiment_dir("03_q9a_no_evidence") / "floor_sweep.png", title="Score-floor gate, in-sample")
print(f"figure: {sweep_png.name} (shown in the report at the end)")
table({lang: c["floor_aspects"] for lang, c in result["calibration"].items()}, label="language", decimals=4)

# %% [markdown]
# ## Every gate on the whole benchmark ("insufficient" is the positive class)

# %%
table([{"language": lang, "gate": gate, **figures_} for lang, by_gate in result["gates"].items()
       for gate, figures_ in by_gate.items()])

# %% [markdown]
# ## In-sample vs out-of-sample: the tuned gates re-fitted without the questions they decide
# k/n = rate [Wilson 95% interval]. `near_miss_held_out`: fitted without the near-miss questions,
# measured on them only.

# %%
for lang in languages:
    display(Markdown(f"### {lang}\n\n" + result["validation_tables"][lang]))

# %% [markdown]
# ## Every gate on each near-miss question (in-sample parameters)

# %%
for lang in languages:
    display(Markdown(f"**{lang}**"), table(result["near_miss"]["rows"][lang]))

# %% [markdown]
# ## Normal path: does the gate decline Q9a before the LLM is asked? (a decline records zero calls)

# %%
table(result["gated_decline"], label="language")

# %% [markdown]
# ## Bypass: the generators face the five distractors (judged automatically)

# %%
table({n: r for n, r in result["bypass"].items() if n != "lang"}, label="generator")

# %% [markdown]
# ## The LLM sufficiency judge as a gate, beside floor+aspects, every benchmark question
# "Insufficient" is the positive class; `judged` leaves out calls that failed or have no record yet
# (`failed`), so rates over few judged questions say little.

# %%
table(result["llm_judge_rows"])

# %% [markdown]
# ## Default generator behind the gate, every benchmark question

# %%
display(settings({k: v for k, v in result["generation"].items() if k != "rows"}))
table(result["generation"]["rows"])

# %% tags=["report"]
template = """# 03 · Q9a: no evidence, and the gate on the whole benchmark

Retrieval: dense, {provenance.embedder.model} ({provenance.embedder.backend}, {provenance.embedder.version}); k = {k}.

Corpus check: {corpus_check.chunks} chunks on {corpus_check.pages} pages mention KV; the allowance strings
occur {corpus_check.absent_found} times (casebook: {casebook.kv_mentions.chunks} chunks on {casebook.kv_mentions.pages} pages).

Q9a Top-{k} scores vs Q5's rank-{k} score (casebook, bge-m3: {casebook.q9a_top5.0}–{casebook.q9a_top5.1} vs {casebook.q5_rank5}):
- zh: {scores.zh.q9a_min:.3f}–{scores.zh.q9a_max:.3f} vs {scores.zh.q5_rank_k:.3f} (Q5's rank-{k} above Q9a's best:
  {scores.zh.q5_above_q9a}, by a margin of {scores.zh.gap:.3f})
- en: {scores.en.q9a_min:.3f}–{scores.en.q9a_max:.3f} vs {scores.en.q5_rank_k:.3f} (Q5's rank-{k} above Q9a's best:
  {scores.en.q5_above_q9a}, by a margin of {scores.en.gap:.3f})

That orders one pair of questions only. Over the whole benchmark the best scores overlap: the highest
unanswerable best score ({overlap.zh.max_unanswerable_best:.3f} zh, {overlap.en.max_unanswerable_best:.3f} en) is above
{overlap.zh.answerable_below_max_unanswerable} of {overlap.zh.n_answerable} answerable best scores in zh and
{overlap.en.answerable_below_max_unanswerable} of {overlap.en.n_answerable} in en; {overlap.zh.unanswerable_above_min_answerable}
(zh) and {overlap.en.unanswerable_above_min_answerable} (en) of {overlap.zh.n_unanswerable} unanswerable questions score at or above
the lowest answerable one.

Chosen parameters (rule: maximise refusal correctness − false-refusal rate over every candidate,
fitted on all {overlap.zh.n_answerable} answerable and {overlap.zh.n_unanswerable} unanswerable questions; these are the
parameters `python -m rag_lib ask` uses):
- zh: floor alone {calibration.zh.floor.floor}; floor+aspects: floor {calibration.zh.floor_aspects.floor},
  coverage ≥ {calibration.zh.floor_aspects.min_coverage}
- en: floor alone {calibration.en.floor.floor}; floor+aspects: floor {calibration.en.floor_aspects.floor},
  coverage ≥ {calibration.en.floor_aspects.min_coverage}

![Score-floor sweep: share of unanswerable questions declined and of answerable questions with complete
evidence declined, per floor; the dotted line is the chosen floor](floor_sweep.png)

Gates on the whole benchmark, in-sample, zh:

{gate_tables.zh}

Gates on the whole benchmark, in-sample, en:

{gate_tables.en}

## In-sample vs out-of-sample (k/n = rate [{validation_interval}])

The in-sample figures above are optimistic: the parameters were chosen on the questions they are
measured on. Out of sample, each question is decided by parameters fitted without it
(`leave_one_out`), without its gold page's questions (`grouped_by_page`), or, for the near-miss
questions only, without any near-miss question (`near_miss_held_out`). `refusal_near_miss` counts the
{near_miss.ids_count} near-miss unanswerable questions (topic in the corpus, fact not, checked by reading the
pages); `refusal_absent_topic` the others, whose terms are absent from the corpus by construction (what
a lexical aspect gate detects). The `checklist` oracle refuses every unanswerable question by definition;
the LLM judge is {near_miss.llm_judge}.

## The LLM sufficiency judge beside floor+aspects (whole benchmark, in-sample parameters for the gate)

{llm_judge_table}

zh:

{validation_tables.zh}

en:

{validation_tables.en}

Fitted parameters, floor+aspects: in-sample floor {validation.zh.floor_aspects.parameters.in_sample.floor}, coverage
{validation.zh.floor_aspects.parameters.in_sample.min_coverage} (zh); leave-one-out floors range over
{validation.zh.floor_aspects.parameters.leave_one_out.floor_range} (zh) and
{validation.en.floor_aspects.parameters.leave_one_out.floor_range} (en).

Normal path (en): status {gated_decline.en.status}; generator called: {gated_decline.en.generator_called};
recorded LLM calls: {gated_decline.en.recorded_calls}. (zh: status {gated_decline.zh.status}; calls
{gated_decline.zh.recorded_calls}.)

Bypass ({bypass.lang}): extractive passed = {bypass.extractive.passed} (status {bypass.extractive.status},
citations {bypass.extractive.citations}); llama_cpp passed = {bypass.llama_cpp.passed} (status
{bypass.llama_cpp.status}, citations {bypass.llama_cpp.citations}, calls {bypass.llama_cpp.calls}).

Default generator ({generation.generator.backend}) behind the `{generation.gate}` gate, {generation.lang},
{generation.n} questions: answered {generation.answered}, declined by the gate {generation.declined_by_gate},
declined by the generator {generation.declined_by_generator}, errors {generation.errors}; citations valid
{generation.citations_valid} / {generation.citations_total}; refusal correctness {generation.refusal_correctness}
({generation.unanswerable_declined} / {generation.unanswerable} unanswerable declined).

## Findings

{findings_text}
"""
stored = report.write_experiment("03_q9a_no_evidence", result, template, findings=findings)
display(Markdown(report.report_markdown("03_q9a_no_evidence")))
