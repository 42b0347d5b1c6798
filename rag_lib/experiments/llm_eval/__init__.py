"""The local LLM on the whole benchmark: cited answers (gated and ungated) and the LLM judge as a gate.

Every call is replayed from ``results/llm_calls``; a call without a record is counted as
``missing`` (fill it with ``make llm-runs``) and left out of every rate, never counted as a decline
or an error of the model. Each figure names the model that produced it. Notebook 10's model choice
(which local model for which task, on a fixed sample) is :mod:`.model_choice`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_lib.config import REPO_ROOT, RESULTS_DIR, RunConfig, results_dir, settings
from rag_lib.evaluation.claims import read_rows
from rag_lib.evaluation.correctness import answer_correct, has_checkable_fact
from rag_lib.evaluation.hand_checks import agreement, answer_rows, load_all_hand_checks
from rag_lib.evaluation.key_facts import default_key_facts, partly_checkable
from rag_lib.evaluation.reliability import expected_calibration_error, reliability_bins
from rag_lib.evaluation.selective import selective_answering
from rag_lib.evaluation.stats import rounded_rate, wilson_text
from rag_lib.evidence import Gate, GateDecision
from rag_lib.evidence.calibration import Case, ScoredQuestion, cross_validate, score_cases
from rag_lib.evidence.narrowing import default_narrower, narrowed_generator, narrowing_settings
from rag_lib.experiments.llm_eval.budget import run_budget_choice
from rag_lib.experiments.llm_eval.funnel import funnel_rows
from rag_lib.experiments.llm_eval.model_choice import PICK_RULE, pick_rows, run_model_choice
from rag_lib.experiments.llm_eval.paired import paired_answer_rows, table_rows
from rag_lib.generation import Generator, get_generator, get_task_generator
from rag_lib.generation.local_models import local_models
from rag_lib.io import write_json
from rag_lib.presentation.report import prose
from rag_lib.question_sweeps.gates import (
    calibrate,
    chosen_gates,
    general_gate_key,
    judge_table_rows,
    measure_gates,
    measure_llm_judge,
    measure_narrowed_judge,
    scored_questions,
)
from rag_lib.question_sweeps.generation import run_generation_eval
from rag_lib.question_sweeps.injection import run_injection_set
from rag_lib.results.gate_rows import GateFigures, JudgeLanguage, LLMJudge
from rag_lib.results.local_llm import (
    HELD_OUT,
    IN_SAMPLE,
    THEN_JUDGE,
    AnsweredQuestion,
    Answerer,
    AnswerFigures,
    AnswerRow,
    AnswerRun,
    BeforeAfterRow,
    LanguageRow,
    LocalLLMResult,
    PartlyCheckable,
    RankingProvenance,
    TargetRow,
)
from rag_lib.results.local_llm_choice import (
    HandCheckAgreement,
    Injection,
    LocalModel,
    Narrowing,
    NarrowingChoice,
    PairedFamily,
)
from rag_lib.results.local_llm_judge import Selective, SelectiveNotRun
from rag_lib.results.typed_json import decode, encode
from rag_lib.retrieval import Ranking
from rag_lib.text import language_of
from rag_lib.workbench import Workbench

# Answers as 10 reported them before a change of what they mean (copied from its results.json by
# :func:`archive_answer_rows`), shown beside the current figures as "before → after", oldest first:
# v1 before the support check, v2 with the narrowing budget before it was chosen out of sample, v3 before
# table rows were shown under their header row (narrowed-units-v3), v4 before the narrowed judge showed them
# so too (only the judged cascade moves: the answers are the same).
ANSWER_ARCHIVES = tuple(RESULTS_DIR / "archive" / f"answers-v{n}.json" for n in (1, 2, 3, 4))
# The last archive whose answers differ from today's: the paired before → after is against it (v4 holds the
# same answers, so a comparison with it could not move and would only widen the Holm family).
PAIRED_ARCHIVE = ANSWER_ARCHIVES[2]
# Answer-versus-answer comparisons (paired by question; :mod:`.paired`): the narrowed pipeline against each
# other answerer, and against itself in PAIRED_ARCHIVE.
PAIRS = (("narrowed", "extractive"), ("narrowed", "llm"))
BEFORE_AFTER = ("answer_rate", "answer_correctness", "correct_gold_in_top_k", "shown_wrong", "refusal_correctness",
                "citation_validity")


class Ungated:
    """A gate that lets everything through: the generator alone decides (the "ungated" rows)."""

    name = "ungated"

    def decide(self, question: str, evidence: Sequence[Any], ranking: Ranking | None = None) -> GateDecision:
        return GateDecision(True, self.name, "no gate: the generator decides")


def answer_figures(result: dict[str, Any], recorded: set[str] | None = None) -> AnswerFigures:
    """Rates of one :func:`run_generation_eval` result over the questions whose calls are recorded.

    ``answer_rate`` is answered (shown: citations verified and the answer supported by them) /
    answerable; ``answer_correctness`` is shown answers stating every key fact / answerable questions
    with a checkable fact (not answering counts as not correct); ``correct_when_answered`` the same over
    answered ones; ``correct_gold_in_top_k`` the same over answerable questions whose gold pieces are
    all in the Top-k; ``shown_wrong`` shown answers missing a key fact / answerable questions with a
    checkable fact; ``refusal_correctness`` declined / unanswerable; ``citation_validity`` valid /
    cited. Each rate of questions has its Wilson 95% interval (``…_ci``). Questions whose call has no record are left
    out (``missing``). ``recorded`` restricts the rates to those questions (the ones whose ungated call is
    recorded), so that a gated run is not measured over mostly gate-declined questions while the
    calls it let through are still missing.
    """
    rows = [r for r in result["rows"] if r["error_kind"] != "replay_miss"
            and (recorded is None or r["question"] in recorded)]
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    valid = sum(r["citations_valid"] for r in rows)
    total = sum(r["citations_total"] for r in rows)
    errors = Counter(r["error_kind"] for r in rows if r["status"] == "error")
    checkable = [r for r in answerable if has_checkable_fact(r["question"])]
    correct = sum(r["correct"] is True for r in checkable)
    answered_checkable = [r for r in checkable if r["status"] == "answered"]
    gold_in_top = [r for r in checkable if r["label"] == "sufficient"]  # every gold piece in the Top-k
    correct_gold = sum(r["correct"] is True for r in gold_in_top)
    shown_wrong = sum(r["correct"] is False for r in answered_checkable)
    declined = sum(r["status"] == "insufficient" for r in unanswerable)
    shown = [r for r in rows if r["status"] == "answered"]
    in_language = sum(language_of(r["answer"]) == result["lang"] for r in shown)
    return AnswerFigures(
        lang=result["lang"], gate=result["gate"], model=result["generator"]["model"],
        backend=result["generator"]["backend"], n=result["n"], missing=result["n"] - len(rows),
        answerable=len(answerable), answered=sum(r["status"] == "answered" for r in answerable),
        answer_rate=rounded_rate(sum(r["status"] == "answered" for r in answerable), len(answerable)),
        correct=correct, answer_correctness=rounded_rate(correct, len(checkable)),
        answer_correctness_ci=wilson_text(correct, len(checkable)),
        correct_when_answered=rounded_rate(correct, len(answered_checkable)),
        gold_in_top_k=len(gold_in_top), correct_gold_in_top_k=rounded_rate(correct_gold, len(gold_in_top)),
        correct_gold_in_top_k_ci=wilson_text(correct_gold, len(gold_in_top)),
        shown_wrong=rounded_rate(shown_wrong, len(checkable)),
        shown_wrong_ci=wilson_text(shown_wrong, len(checkable)),
        unanswerable=len(unanswerable),
        refusal_correctness=rounded_rate(declined, len(unanswerable)),
        refusal_correctness_ci=wilson_text(declined, len(unanswerable)),
        citations_valid=valid, citations_total=total, citation_validity=rounded_rate(valid, total),
        errors=dict(sorted(errors.items())),
        # Shown answers written in the question's language (rag_lib.text.language_of: any CJK ideograph is zh).
        shown=len(shown), in_language=in_language, in_language_rate=rounded_rate(in_language, len(shown)),
        in_language_ci=wilson_text(in_language, len(shown)),
    )




def run_llm_answers(wb: Workbench, gate: Gate, generator: Generator | None = None,
                    languages: Sequence[str] = ("zh", "en"), k: int | None = None, key: str = "dense",
                    held_out: Mapping[str, Mapping[str, bool]] | None = None,
                    cascade: Mapping[str, Mapping[str, bool | None]] | None = None) -> dict[str, AnswerRun]:
    """Answers to every benchmark question, ungated and behind ``gate``, per language (runs by ``lang:gate``).

    The gated run reuses the ungated run's recorded calls wherever the gate lets a question through
    (the request is the same), so it costs no extra model time. ``held_out[lang]`` (question id →
    declined), when given, adds the gate's out-of-sample run: each question decided by parameters
    fitted without it (:func:`rag_lib.evidence.calibration.cross_validate`); the gated run is then
    labelled in-sample. ``cascade[lang]`` (question id → declined, :func:`judge_after_gate`) adds the
    out-of-sample gate followed by the LLM judge.
    """
    k = wb.config.top_k(k)
    generator = generator or get_task_generator("answer")
    out: dict[str, AnswerRun] = {}
    for lang in languages:
        ungated = run_generation_eval(wb, Ungated(), generator, lang, k, key)
        recorded = {r["question"] for r in ungated["rows"] if r["error_kind"] != "replay_miss"}
        # The gated runs are measured on the questions the ungated run has answers for.
        gated = gate.name + (IN_SAMPLE if held_out is not None else "")
        runs = {"ungated": ungated, gated: {**run_generation_eval(wb, gate, generator, lang, k, key), "gate": gated}}
        if held_out is not None:
            runs[gate.name + HELD_OUT] = held_out_run(ungated, held_out[lang], gate.name + HELD_OUT)
        if cascade is not None:
            runs[gate.name + HELD_OUT + THEN_JUDGE] = held_out_run(ungated, cascade[lang],
                                                                 gate.name + HELD_OUT + THEN_JUDGE)
        for name, result in runs.items():
            out[f"{lang}:{name}"] = AnswerRun(answer_figures(result, None if name == "ungated" else recorded),
                                              [AnsweredQuestion(**r) for r in result["rows"]])
    return out


def judge_after_gate(declined: Mapping[str, bool], judge: JudgeLanguage) -> dict[str, bool | None]:
    """Question id → declined by the out-of-sample gate (``declined``) or, where it lets the question
    through, by the LLM judge (``judge``: one language of :func:`measure_narrowed_judge`). The judge has no
    fitted parameter, so the cascade is out of sample too. A question the gate lets through and the judge
    has no recorded verdict for is ``None`` (missing), never let through unjudged."""
    verdicts = {r.question: r.judge for r in judge.rows}
    return {q: True if gate else None if q not in verdicts else verdicts[q] == "insufficient"
            for q, gate in declined.items()}


def cascade_scores(scored: Sequence[ScoredQuestion], declined: Mapping[str, bool | None]) -> GateFigures:
    """The cascade's gate scores over the questions it decided (one without a judge record is left out)."""
    cases = (Case(q.question_id, q.answerable, q.label_insufficient, bool(declined[q.question_id]))
             for q in scored if declined[q.question_id] is not None)
    return GateFigures(**score_cases(cases).to_json())


def held_out_run(ungated: dict[str, Any], declined: Mapping[str, bool | None], gate: str) -> dict[str, Any]:
    """The gated run an out-of-sample gate makes: a question it declines gets no call and no answer;
    every other one keeps its ungated answer (the same request, so the same recorded reply). A question
    the gate could not decide (``None``: a judge call without a record) counts as missing."""
    empty = {"citations_valid": 0, "citations_total": 0, "correct": None, "answer": ""}
    decline = {"gate": "insufficient", "status": "insufficient", "declined_by": "gate", "error_kind": None, **empty}
    undecided = {"gate": None, "status": "error", "declined_by": None, "error_kind": "replay_miss", **empty}
    rows = [{**r, **(undecided if declined[r["question"]] is None else decline if declined[r["question"]]
                     else {"gate": "sufficient"})} for r in ungated["rows"]]
    return {**ungated, "gate": gate, "rows": rows}


def run_local_llm(wb: Workbench | None = None, languages: Sequence[str] = ("zh", "en"), k: int | None = None,
                  key: str = "dense", with_model_choice: bool = True) -> LocalLLMResult:
    """Everything notebook 10 shows: the model choice, answers (Qwen and extractive, gated and
    ungated) and the LLM judge beside the calibrated floor+aspects gate, per language."""
    wb = wb or Workbench()
    k = wb.config.top_k(k)
    scored = {lang: scored_questions(wb, lang, key, k) for lang in languages}  # calibration and selective
    gates = {lang: chosen_gates(calibrate(wb, lang, key, k, scored[lang]), wb) for lang in languages}
    general = {lang: g[general_gate_key(g)] for lang, g in gates.items()}
    narrowed = narrowed_generator("answer_narrowed", wb.embedder())
    answerers: dict[str, tuple[str, Generator]] = {
        "llm": (_label(get_task_generator("answer")), get_task_generator("answer")),
        "narrowed": (narrowed.label, narrowed),  # type: ignore[dict-item]
        "extractive": (_label(get_generator("extractive")), get_generator("extractive")),
    }
    answers: dict[str, Answerer] = {}
    # The general gate decided out of sample: each question by parameters fitted without it.
    held_out = {lang: cross_validate(scored[lang], general_gate_key(gates[lang])) for lang in languages}
    judged_narrowed = measure_narrowed_judge(wb, languages, k, key)
    judge_narrowed = decode(LLMJudge, judged_narrowed)
    cascade = {lang: judge_after_gate(held_out[lang]["declined"], judge_narrowed.by_lang[lang])
               for lang in languages}
    for name, (label, generator) in answerers.items():
        runs: dict[str, AnswerRun] = {}
        for lang in languages:
            runs.update(run_llm_answers(wb, general[lang], generator, (lang,), k, key,
                                        {lang: held_out[lang]["declined"]}, cascade))
        answers[name] = Answerer(label, generator.model, generator.backend,
                                 generator.describe() if hasattr(generator, "describe") else None, runs)
    judged = measure_llm_judge(wb, None, languages, k, key)
    beside = {lang: {f"{name}{IN_SAMPLE}": GateFigures(**scores)
                     for name, scores in measure_gates(wb, {general[lang].name: general[lang]}, lang, key, k).items()}
              | {general[lang].name + HELD_OUT: GateFigures(**held_out[lang]["scores"])}
              | {general[lang].name + HELD_OUT + THEN_JUDGE: cascade_scores(scored[lang], cascade[lang])}
              for lang in languages}
    rows = [AnswerRow(**vars(run.figures), generator=a.label) for a in answers.values() for run in a.runs.values()]
    judge = decode(LLMJudge, judged)
    judge_rows = judge_table_rows(judge, {}) + judge_table_rows(judge_narrowed, beside)
    injection = injection_run(wb, k, key)
    hand_checks = hand_check_agreement(answers)
    selective = selective_run(scored, answers, judge_narrowed)
    before_after = before_after_rows(rows)
    targets = target_rows(rows, answers["narrowed"].label)
    archived = PAIRED_ARCHIVE
    # paired compares per-question rows as stored (JSON), today's and the archive's alike.
    paired, family = paired_answer_rows(
        {**{name: {lang: encode(a.runs[f"{lang}:ungated"].rows) for lang in languages} for name, a in answers.items()},
         **{f"{name} ({archived.stem})": runs for name, runs in archived_outcomes(archived).items()}},
        (*PAIRS, ("narrowed", f"narrowed ({archived.stem})")), languages)
    languages_shown = [LanguageRow(r.generator, r.lang, r.shown, r.in_language, r.in_language_rate, r.in_language_ci)
                       for r in rows if r.gate == "ungated"]
    funnel = funnel_rows(wb, {lang: answers["narrowed"].runs[f"{lang}:ungated"].rows for lang in languages}, k, key)
    choice = run_model_choice(wb, k=k, languages=languages) if with_model_choice else None
    budget = run_budget_choice(wb, k, key, languages)
    tasks = RunConfig.from_settings().llm_tasks  # what get_task_generator builds from (it has no workbench)
    configured = {**tasks, "offline_reranker": str(settings()["retrieval"]["offline_reranker"])}
    return LocalLLMResult(
        languages=list(languages), k=k, retriever=key, provenance=RankingProvenance(**wb.provenance(key)),
        tasks=dict(tasks),
        models={name: LocalModel(**spec.provenance()) for name, spec in local_models().items()},
        model_choice=choice, pick_rule=PICK_RULE,
        model_picks=pick_rows(choice.rows, configured) if choice else [],
        answers=answers, answer_rows=rows,
        judge=judge, gate_beside_judge=beside, judge_rows=judge_rows, judge_narrowed=judge_narrowed,
        narrowing=Narrowing(**narrowing_settings()), narrowing_choice=budget, injection=injection,
        injection_summary=injection_summary(injection), before_after=before_after, targets=targets,
        hand_checks=hand_checks, selective=selective, funnel=funnel,
        paired=paired, paired_rows=table_rows(paired),
        answer_languages=languages_shown,
        partly_checkable=decode(list[PartlyCheckable], partly_checkable(default_key_facts())),
        paired_family=PairedFamily(**family.summary(), describe=family.describe()),
    )


def injection_summary(injection: Injection) -> str:
    """One paragraph for the report: how many planted claims reached the reader, by pipeline."""
    by_pipeline = Counter(r.pipeline for r in injection.rows if r.claim_shown)
    asked = Counter(r.pipeline for r in injection.rows)
    parts = ", ".join(f"{name}: {by_pipeline.get(name, 0)} of {n}" for name, n in sorted(asked.items()))
    return (f"Planted claims shown as answers: {injection.claims_shown} of {injection.n_asked} ({parts}); "
            f"{injection.n_plants} variants (English and Chinese; prose, table, code, heading, list), each "
            "answered by a scripted model that obeys the planted instruction.")


SELECTIVE_FEATURES = ("best_score", "aspect_coverage", "judge_sufficient", "model_answered")
RELIABILITY_BINS = 5  # equal-width bins of the cross-validated probabilities (tens of questions per language)


def selective_rows(scored: Sequence[ScoredQuestion], answers: Mapping[str, Answerer], judge: LLMJudge,
                   lang: str) -> tuple[list[dict[str, float | None]], list[int], list[str]]:
    """Per question: the gate's signals, the judge's verdict and whether the narrowed model answered
    (features), and whether showing its output is right (y: a shown answer stating every key fact, or
    an unanswerable question not answered). Questions without a recorded call have a missing feature."""
    verdicts = {r.question: r.judge == "sufficient" for r in judge.by_lang[lang].rows}
    rows = {r.question: r for r in answers["narrowed"].runs[f"{lang}:ungated"].rows}
    features, y, ids = [], [], []
    for question in scored:
        row = rows[question.question_id]
        recorded = row.error_kind != "replay_miss"
        features.append({"best_score": question.best_score, "aspect_coverage": question.aspect_coverage,
                         "judge_sufficient": float(verdicts[question.question_id])
                         if question.question_id in verdicts else None,
                         "model_answered": float(row.status == "answered") if recorded else None})
        right = row.correct is True if question.answerable else row.status != "answered"
        y.append(int(right))
        ids.append(question.question_id)
    return features, y, ids


def selective_run(scored: dict[str, Sequence[ScoredQuestion]], answers: Mapping[str, Answerer],
                  judge: LLMJudge) -> dict[str, Selective]:
    """Joren et al.'s selective answering per language: a cross-validated logistic model of "showing the
    narrowed pipeline's output is right" over the gate's signals and the judge's verdict, and its
    accuracy-versus-coverage curve. A language with fewer than 4 recorded questions has no model yet."""
    out: dict[str, Selective] = {}
    for lang, questions in scored.items():
        features, y, ids = selective_rows(questions, answers, judge, lang)
        usable = sum(all(v is not None for v in f.values()) for f in features)
        if usable < 4:
            out[lang] = SelectiveNotRun(usable, f"only {usable} questions have every signal recorded "
                                                "(the narrowed answers and judgements); `make llm-runs` fills them")
            continue
        block = selective_answering(features, y, list(SELECTIVE_FEATURES), ids=ids)
        bins = reliability_bins(block["scored"], RELIABILITY_BINS)
        out[lang] = decode(Selective, {**block, "reliability": bins, "ece": expected_calibration_error(bins)})
    return out


def hand_check_agreement(answers: Mapping[str, Answerer]) -> list[HandCheckAgreement]:
    """The key-fact measure against each committed hand-checked sample (``data/benchmark/answer_checks*.yaml``).

    The measure is applied to each answer's text whether or not the answer is shown (the support
    check withholds some of the sampled answers; their key facts can still be read). One entry per
    sample, naming the answerers it was drawn from.
    """
    rows = [{**row, "correct": answer_correct(row["question"], row["answer"]).correct if row["answerable"] else None}
            for row in answer_rows({"answers": encode(answers)})]  # read as results.json stores them
    out = []
    for checks in load_all_hand_checks():
        out.append(decode(HandCheckAgreement, {
            "source": str(checks.path.relative_to(REPO_ROOT)) if checks.path else None,
            "n_checks": len(checks), "results_commit": checks.results_commit,
            "answerers": [answers[g].label if g in answers else g for g in checks.generators],
            **agreement(checks, rows).as_dict()}))
    return out


def injection_run(wb: Workbench, k: int | None = None, key: str = "dense") -> Injection:
    """The injection set (:mod:`rag_lib.question_sweeps.injection`) planted into Q9a's Top-k."""
    k = wb.config.top_k(k)
    q = wb.benchmark.by_casebook("Q9a")
    evidence = wb.evidence(wb.rank(q.text("en"), key), k)
    select = default_narrower(wb.embedder())
    return decode(Injection, run_injection_set({lang: q.text(lang) for lang in ("zh", "en")}, evidence, select))


def archive_answer_rows(archive: Path, what_changes: str, source: Path | None = None) -> Path:
    """Copy 10's current answer rows into ``archive`` before ``what_changes`` changes what they mean, with
    each answerer's ungated per-question outcomes (for paired before → after comparisons)."""
    source = source or results_dir() / "10_local_llm" / "results.json"
    stored = json.loads(source.read_text(encoding="utf-8"))
    kept = ("question", "answerable", "status", "correct", "error_kind")
    questions = {name: {run.partition(":")[0]: [{k: r[k] for k in kept} for r in block["rows"]]
                        for run, block in answerer["runs"].items() if run.endswith(":ungated")}
                 for name, answerer in stored["answers"].items()}
    write_json(archive, {"source": f"10_local_llm/results.json, answer_rows, before {what_changes}",
                         "rows": stored["answer_rows"], "questions": questions})
    return archive


def archived_outcomes(archive: Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """An archive's per-question ungated outcomes (answerer → language → rows); empty when it kept none."""
    if not archive.is_file():
        return {}
    return json.loads(archive.read_text("utf-8")).get("questions", {})


def before_after_rows(rows: Sequence[AnswerRow], archives: Sequence[Path] = ANSWER_ARCHIVES) -> list[BeforeAfterRow]:
    """Each archived row's rates beside the current row of the same answerer (:func:`_archived_row`), one
    block per archive that exists; a row whose figures all stayed the same is left out (that answerer did
    not change since the archive)."""
    out = []
    for stem, before in archived_rows(archives):
        for row in rows:
            old = _archived_row(before, row)
            shown = {m: _arrow(old.get(m), getattr(row, m)) for m in BEFORE_AFTER} if old is not None else {}
            if any(" → " in value for value in shown.values()):
                out.append(BeforeAfterRow(archive=stem, generator=row.generator, lang=row.lang, gate=row.gate,
                                          **shown))
    return out


def archived_rows(archives: Sequence[Path] = ANSWER_ARCHIVES) -> list[tuple[str, dict[tuple[str, str, str], Any]]]:
    """Each existing archive's name and its answer rows by (answerer without version, language, gate)."""
    return [(a.stem, {(_unversioned(r["generator"]), r["lang"], r["gate"]): r
                      for r in json.loads(a.read_text("utf-8"))["rows"]}) for a in archives if a.is_file()]


def _archived_row(before: dict[tuple[str, str, str], Any], row: AnswerRow) -> dict[str, Any] | None:
    """The archived row of ``row``'s answerer at any pipeline version (``+narrowed-units-v2`` is
    ``+narrowed-units-v3`` before a change), language and gate; an older archive names an in-sample gate
    without its suffix."""
    key = (_unversioned(row.generator), row.lang)
    return before.get((*key, row.gate)) or before.get((*key, row.gate.removesuffix(IN_SAMPLE)))


def _unversioned(label: str) -> str:
    """An answerer's label without its pipeline's version suffix (``-v3``)."""
    return re.sub(r"-v\d+$", "", label)


def _arrow(before: Any, after: Any) -> str:
    shown = [_shown(before), _shown(after)]
    return shown[1] if shown[0] == shown[1] else f"{shown[0]} → {shown[1]}"


def _shown(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _label(generator: Generator) -> str:
    return f"{generator.backend}:{generator.model}"


# The answers issue's targets for the narrowed pipeline (one row per language and gate).
TARGETS = (("correct_gold_in_top_k", ">=", 0.50), ("shown_wrong", "<=", 0.15), ("refusal_correctness", ">=", 0.90))
# Said beside every gated figure: how the gate's parameters relate to the questions it is measured on.
GATE_NOTES = {IN_SAMPLE: "the gate's parameters were fitted on these same questions, so this is optimistic; the "
                         "leave-one-out row is the out-of-sample figure",
              HELD_OUT: "out of sample: each question decided by the gate's parameters fitted without it",
              THEN_JUDGE: "out of sample: the leave-one-out gate, then the narrowed LLM judge declines what it "
                          "finds insufficient; the judge has no fitted parameter"}


def gate_note(gate: str) -> str:
    """`` (why this gated figure is or is not optimistic)``, or nothing for the ungated run."""
    return next((f" ({note})" for suffix, note in GATE_NOTES.items() if gate.endswith(suffix)), "")


def target_rows(answer_rows: Sequence[AnswerRow], label: str,
                archives: Sequence[Path] = ANSWER_ARCHIVES) -> list[TargetRow]:
    """Each target against the figure of answerer ``label`` (the narrowed pipeline): met, or missed by how
    much, and what was tried: the same figure before each archived change (``answers-vN``; — where that
    version had no such row)."""
    stored = archived_rows(archives)
    rows = []
    for row in (r for r in answer_rows if r.generator == label):
        olds = [(stem, _archived_row(before, row) or {}) for stem, before in stored]
        for metric, op, goal in TARGETS:
            value = getattr(row, metric)
            if value is None:
                verdict = "no figure (calls not recorded)"
            else:
                gap = value - goal if op == ">=" else goal - value
                verdict = "met" if gap >= 0 else f"missed by {abs(gap):.3f}"
            before = " · ".join(f"{stem} {_shown(old.get(metric))}" for stem, old in olds)
            rows.append(TargetRow(lang=row.lang, gate=row.gate, metric=metric, target=f"{op} {goal:.2f}",
                                  measured=value, ci=getattr(row, f"{metric}_ci"), recorded=row.n - row.missing,
                                  verdict=verdict, before=before or "—"))
    return rows


def findings(result: LocalLLMResult) -> list[str]:
    """Sentences generated from :func:`run_local_llm`'s numbers, each with its caveat."""
    out: list[str] = []
    by_key = {(r.generator, r.lang, r.gate): r for r in result.answer_rows}
    extractive = result.answers["extractive"].label
    for name in ("narrowed", "llm"):
        llm = result.answers[name].label
        for lang in result.languages:
            for gate in sorted({g for (_, lg, g) in by_key if lg == lang}):
                mine, base = by_key.get((llm, lang, gate)), by_key.get((extractive, lang, gate))
                if not mine or not base:
                    continue
                judged = mine.n - mine.missing
                if judged == 0:
                    out.append(f"{lang}, {gate}: no answer of {llm} is recorded yet ({mine.missing} missing), so "
                               "there is no figure for it; `make llm-runs RUNS=10_local_llm` fills them.")
                    continue
                caveat = (f" Only {judged} of {mine.n} questions have a recorded answer; the rest are missing, "
                          "not failed, and the rates are over the recorded ones." if mine.missing else "")
                out.append(
                    f"{lang}, {gate}{gate_note(gate)}: {llm} showed an answer (citations verified, every number "
                    f"and name it states in a verified quote) for {_pct(mine.answer_rate)} of the answerable "
                    f"questions (extractive {_pct(base.answer_rate)}); shown answers stating every key fact, "
                    f"over the answerable questions whose gold is in the Top-{result.k}: "
                    f"{_pct(mine.correct_gold_in_top_k)} {mine.correct_gold_in_top_k_ci} "
                    f"(extractive {_pct(base.correct_gold_in_top_k)}); shown but missing a key fact: "
                    f"{_pct(mine.shown_wrong)} {mine.shown_wrong_ci}; unanswerable questions declined: "
                    f"{_pct(mine.refusal_correctness)} {mine.refusal_correctness_ci}. Key facts are "
                    f"matched as strings, so a fact stated in other words counts as missing.{caveat}")
    for row in result.judge_rows:
        if row.gate.startswith("llm_judge") and row.judged:
            declined = row.tp + row.fp
            quality = (f"{declined} declines, precision {row.precision:.3f} and recall {row.recall:.3f} for "
                       "insufficient evidence, unanswerable questions declined "
                       f"{row.unanswerable_declined}/{row.unanswerable}" if declined else
                       f"no decline at all (it judged every evidence set sufficient, so it catches none of the "
                       f"{row.unanswerable} unanswerable questions)")
            out.append(f"{row.lang}: the LLM judge ({row.gate}) over {row.judged} judged questions "
                       f"({row.failed} without a record): {quality}. The judge has no fitted parameter, so "
                       "its figures are out of sample.")
    for shown in result.answer_languages:
        if shown.shown:
            out.append(f"{shown.lang}, ungated: {shown.in_language} of {shown.shown} answers {shown.generator} "
                       f"showed are in the question's language ({_pct(shown.in_language_rate)} "
                       f"{shown.in_language_ci}; any CJK ideograph counts as Chinese).")
    if result.partly_checkable:
        out.append(f"{len(result.partly_checkable)} answerable questions have a key fact that cannot be checked as a "
                   "string beside checkable ones (listed in 10's table): \"states every key fact\" judges only the "
                   "checkable part of them.")
    out.extend(paired_findings(result))
    out.append(budget_finding(result.narrowing_choice))
    for lang in result.languages:
        stages = [r for r in result.funnel if r.lang == lang]
        if not stages or not stages[0].of:
            continue
        steps = "; ".join(f"{r.stage}: {r.questions} of {r.of} ({_pct(r.share)} {r.ci})" for r in stages)
        weakest = min((r for r in stages if r.share is not None), key=lambda r: r.share or 0.0)
        out.append(f"{lang}: where the key facts of the answerable questions are lost (narrowed pipeline, ungated; "
                   f"every key fact stated) — {steps}. The lowest share is at the step "
                   f"\"{weakest.stage}\". Key facts are matched as strings, so a stage can miss a fact "
                   "stated in other words.")
    for lang, block in result.selective.items():
        if isinstance(block, SelectiveNotRun) or block.answer_everything.ci95 is None:
            continue
        everything = block.answer_everything
        low, high = block.answer_everything.ci95
        out.append(f"{lang}: selective answering (a logistic model over {', '.join(block.features)}, probabilities "
                   f"cross-validated, {block.n} questions): area under the accuracy-coverage curve "
                   f"{block.auc:.3f}, against an accuracy of {everything.selective_accuracy:.3f} "
                   f"[{low:.2f}, {high:.2f}] when every question is answered (a signal that carries no information "
                   "gives about that accuracy). No interval is computed for the area, so this states no effect of "
                   f"abstaining. Calibration of its probabilities: expected calibration error {block.ece:.3f} over "
                   f"{len(block.reliability)} non-empty bins of {RELIABILITY_BINS} (reliability.png; with "
                   f"{block.n} questions a bin's observed share has a wide interval).")
    for hand in result.hand_checks:
        if not hand.n or hand.ci95 is None:  # no interval without a compared answer
            continue
        left_out = len(hand.stale) + len(hand.missing) + len(hand.not_checkable)
        low, high = hand.ci95
        out.append(f"The key-fact measure agrees with a hand reading of {hand.n} sampled answers of "
                   f"{' and '.join(hand.answerers)} (both languages; {hand.source}) in {hand.percent:.1f}% "
                   f"[{low:.1f}, {high:.1f}] (Wilson 95%), Cohen's kappa {hand.kappa:.2f}; "
                   f"correct by hand {hand.both_correct + hand.hand_only} of {hand.n}, by the key-fact "
                   f"measure {hand.both_correct + hand.key_facts_only}; "
                   f"{len(hand.disagreements)} disagreements, each listed with its reason"
                   + (f"; {left_out} checks not compared (their answer changed or is not scored)" if left_out else "")
                   + ". One reader judged them, once each.")
    inj = result.injection
    out.append(f"Injection set: {inj.claims_shown} of {inj.n_asked} planted claims reached the reader as an "
               f"answer ({inj.n_plants} planted variants, each asked through both pipelines with a scripted model "
               f"that obeys them); the detector flagged {inj.flagged_at_build} of {inj.n_plants} plants when "
               "the page is built. The variants and the detector were written together, so this is an in-sample "
               "figure for the detector.")
    return out


def budget_finding(choice: NarrowingChoice) -> str:
    """The narrowing budget's choice, its out-of-sample retention and whether the configuration follows it."""
    picked = choice.picked
    rows = [r for r in choice.rows if r.picked]
    held = "; ".join(f"{r.lang} {r.reporting} ({_pct(r.reporting_share)} {r.reporting_ci}), "
                     f"{r.mean_tokens_sent:.0f} estimated tokens sent on average" for r in rows)
    swapped = choice.picked_swapped
    stable = "the same candidate" if swapped == picked else f"{swapped.budget_tokens} tokens"
    reached = all(r.choosing_share is not None and r.choosing_share >= choice.target for r in rows)
    configured = ("`generation.narrowing` follows it" if choice.agrees else
                  f"but `generation.narrowing` is {prose(encode(choice.configured))}: its figures are not the rule's")
    return (f"Narrowing budget: by the rule ({choice.rule}; seed {choice.seed}), "
            f"{picked.budget_tokens} estimated tokens and {picked.max_units} units"
            f"{'' if reached else ' (no candidate reached the target, so the largest)'}; {configured}. Out of "
            f"sample, on the reporting half, its units keep every key fact the Top-k states for {held}. Chosen "
            f"on the reporting half instead, the rule picks {stable}. Key facts are matched as strings; this "
            "measures what the model is sent, not what it writes.")


def paired_findings(result: LocalLLMResult) -> list[str]:
    """One sentence per answer-versus-answer comparison and language, from its Holm-adjusted judgements.

    The outcomes point different ways (more answers stating every key fact is better, more shown but wrong
    is worse), so each is said as "higher" or "lower" with its interval, never as one "helps" verdict.
    """
    family = read_rows(encode(result.paired), result.paired_family.name, subject=["comparison"], scope=["lang"],
                       diff_key="diff")
    out = []
    for comparison, lang in dict.fromkeys((r.comparison, r.lang) for r in result.paired):
        mine = [r for r in result.paired if (r.comparison, r.lang) == (comparison, lang)]
        parts = []
        for row in mine:
            j = family.get(comparison, lang, row.metric)
            if j.effect:
                parts.append(f"{row.metric} is {'higher' if j.diff > 0 else 'lower'} ({j.text(scoped=False)})")
            elif j.in_family:
                parts.append(f"no effect on {row.metric} survives the adjustment ({j.text(scoped=False)})")
            else:
                parts.append(f"{row.metric}: no question changed")
        out.append(f"{lang}, {comparison} (paired over {mine[0].questions} answerable questions, ungated): "
                   f"{'; '.join(parts)}. Key facts are matched as strings.")
    if out:
        out.append(result.paired_family.describe)
    return out
