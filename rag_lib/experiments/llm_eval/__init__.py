"""The local LLM on the whole benchmark: cited answers (gated and ungated) and the LLM judge as a gate.

Every call is replayed from ``results/llm_calls``; a call without a record is counted as
``missing`` (fill it with ``make llm-runs``) and left out of every rate, never counted as a decline
or an error of the model. Each figure names the model that produced it. Notebook 10's model choice
(which local model for which task, on a fixed sample) is :mod:`.model_choice`; the narrowing budget
:mod:`.budget`; answer-versus-answer comparisons :mod:`.paired`; the archived answers and the answers issue's
targets :mod:`.archives`; selective answering :mod:`.selective`; the Findings :mod:`.findings`, every other
measured statement :mod:`.report`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from rag_lib.core.config import REPO_ROOT, RunConfig, settings
from rag_lib.core.text import language_of
from rag_lib.evaluation.claim_checks import CHECKS, SHEET_RUN, claim_check
from rag_lib.evaluation.correctness import answer_correct, has_checkable_fact
from rag_lib.evaluation.hand_check_agreement import agreement
from rag_lib.evaluation.hand_checks import answer_rows, load_all_hand_checks
from rag_lib.evaluation.key_facts import KeyFacts, default_key_facts, partly_checkable
from rag_lib.evaluation.stats import rounded_rate, wilson_text
from rag_lib.evidence import Gate, GateDecision
from rag_lib.evidence.calibration import Case, ScoredQuestion, cross_validate, score_cases
from rag_lib.evidence.narrowing import default_narrower, narrowed_generator, narrowing_settings
from rag_lib.experiments.llm_eval.archives import PAIRED_ARCHIVE, archived_outcomes, before_after_rows, target_rows
from rag_lib.experiments.llm_eval.budget import run_budget_choice
from rag_lib.experiments.llm_eval.diagnosis import diagnose, retrieved
from rag_lib.experiments.llm_eval.findings import findings
from rag_lib.experiments.llm_eval.funnel import funnel_rows
from rag_lib.experiments.llm_eval.model_choice import PICK_RULE, pick_rows, run_model_choice
from rag_lib.experiments.llm_eval.paired import paired_answer_rows, table_rows
from rag_lib.experiments.llm_eval.selective import selective_rows, selective_run
from rag_lib.generation import Generator, get_generator, get_task_generator
from rag_lib.generation.local_models import local_models
from rag_lib.pipeline.workbench import Workbench
from rag_lib.presentation.llm_eval import injection_summary
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
    LanguageRow,
    LocalLLMResult,
    PartlyCheckable,
    RankingProvenance,
)
from rag_lib.results.local_llm_choice import (
    HandCheckAgreement,
    Injection,
    LocalModel,
    Narrowing,
    PairedFamily,
)
from rag_lib.results.typed_json import decode, encode
from rag_lib.retrieval import Ranking

# Answer-versus-answer comparisons (paired by question; :mod:`.paired`): the narrowed pipeline against each
# other answerer, and against itself in PAIRED_ARCHIVE.
PAIRS = (("narrowed", "extractive"), ("narrowed", "llm"))


class Ungated:
    """A gate that lets everything through: the generator alone decides (the "ungated" rows)."""

    name = "ungated"

    def decide(self, question: str, evidence: Sequence[Any], ranking: Ranking | None = None) -> GateDecision:
        return GateDecision(True, self.name, "no gate: the generator decides")


def answer_figures(result: dict[str, Any], recorded: set[str] | None = None,
                   key_facts: KeyFacts | None = None) -> AnswerFigures:
    """Rates of one :func:`run_generation_eval` result over the questions whose calls are recorded.

    ``answer_rate`` is answered (shown: citations verified and the answer supported by them) /
    answerable; ``answer_correctness`` is shown answers stating every key fact / answerable questions
    with a checkable fact (not answering counts as not correct); ``correct_when_answered`` the same over
    answered ones; ``correct_gold_in_top_k`` the same over answerable questions whose gold pieces are
    all in the Top-k; ``shown_wrong`` shown answers missing a key fact / answerable questions with a
    checkable fact; ``refusal_correctness`` declined / unanswerable, always beside ``false_refusal``:
    declined / answerable questions whose gold is all in the Top-k; ``citation_validity`` valid /
    cited. Each rate of questions has its Wilson 95% interval (``…_ci``). Questions whose call has no record are left
    out (``missing``). ``recorded`` restricts the rates to those questions (the ones whose ungated call is
    recorded), so that a gated run is not measured over mostly gate-declined questions while the
    calls it let through are still missing. ``key_facts`` (default: the development set's) say which
    questions have a checkable fact.
    """
    rows = [r for r in result["rows"] if r["error_kind"] != "replay_miss"
            and (recorded is None or r["question"] in recorded)]
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    valid = sum(r["citations_valid"] for r in rows)
    total = sum(r["citations_total"] for r in rows)
    errors = Counter(r["error_kind"] for r in rows if r["status"] == "error")
    checkable = [r for r in answerable if has_checkable_fact(r["question"], key_facts)]
    correct = sum(r["correct"] is True for r in checkable)
    answered_checkable = [r for r in checkable if r["status"] == "answered"]
    gold_in_top = [r for r in checkable if r["label"] == "sufficient"]  # every gold piece in the Top-k
    correct_gold = sum(r["correct"] is True for r in gold_in_top)
    shown_wrong = sum(r["correct"] is False for r in answered_checkable)
    declined = sum(r["status"] == "insufficient" for r in unanswerable)
    complete = [r for r in answerable if r["label"] == "sufficient"]  # every gold piece in the Top-k
    refused = sum(r["status"] == "insufficient" for r in complete)
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
        complete_evidence=len(complete), false_refusal=rounded_rate(refused, len(complete)),
        false_refusal_ci=wilson_text(refused, len(complete)),
        citations_valid=valid, citations_total=total, citation_validity=rounded_rate(valid, total),
        errors=dict(sorted(errors.items())),
        # Shown answers written in the question's language (rag_lib.core.text.language_of: any CJK ideograph is zh).
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
            runs[gate.name + HELD_OUT + THEN_JUDGE] = held_out_run(
                ungated, cascade[lang], gate.name + HELD_OUT + THEN_JUDGE,
                held_out[lang] if held_out is not None else None)
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


def held_out_run(ungated: dict[str, Any], declined: Mapping[str, bool | None], gate: str,
                 gate_declined: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """The gated run an out-of-sample gate makes: a question it declines gets no call and no answer;
    every other one keeps its ungated answer (the same request, so the same recorded reply). A question
    the gate could not decide (``None``: a judge call without a record) counts as missing. For a gate then
    a judge, ``gate_declined`` (the gate's own declines) tells the judge's declines apart."""
    empty = {"citations_valid": 0, "citations_total": 0, "correct": None, "answer": "", "stated": None,
             "claims": 0, "claims_supported": 0, "claims_ungrounded": 0}
    decline = {"gate": "insufficient", "status": "insufficient", "declined_by": "gate", "error_kind": None, **empty}
    undecided = {"gate": None, "status": "error", "declined_by": None, "error_kind": "replay_miss", **empty}
    judge = {**decline, "declined_by": "judge"}

    def outcome(question: str) -> dict[str, Any]:
        if declined[question] is None:
            return undecided
        if not declined[question]:
            return {"gate": "sufficient"}
        return decline if gate_declined is None or gate_declined[question] else judge

    rows = [{**r, **outcome(r["question"])} for r in ungated["rows"]]
    return {**ungated, "gate": gate, "rows": rows}


def run_local_llm(wb: Workbench | None = None, languages: Sequence[str] = ("zh", "en"), k: int | None = None,
                  key: str = "dense", with_model_choice: bool = True,
                  test_set_rows: Sequence[AnswerRow] = ()) -> LocalLLMResult:
    """Everything notebook 10 shows: the model choice, answers (Qwen and extractive, gated and
    ungated) and the LLM judge beside the calibrated floor+aspects gate, per language; ``test_set_rows``
    (notebook 14's) are kept to be shown beside the development set's."""
    wb = wb or Workbench()
    k = wb.config.top_k(k)
    scored = {lang: scored_questions(wb, lang, key, k) for lang in languages}  # calibration and selective
    gates = {lang: chosen_gates(calibrate(wb, lang, key, k, scored[lang]), wb) for lang in languages}
    general = {lang: g[general_gate_key(g)] for lang, g in gates.items()}
    narrowed = narrowed_generator("answer_narrowed", wb.embedder())
    claims = narrowed_generator("answer_narrowed", wb.embedder(), claims=True)  # issue 44's pipeline
    answerers: dict[str, tuple[str, Generator]] = {
        "llm": (_label(get_task_generator("answer")), get_task_generator("answer")),
        "narrowed": (narrowed.label, narrowed),  # type: ignore[dict-item]
        "claims": (claims.label, claims),  # type: ignore[dict-item]
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
    kept = {lang: retrieved(wb, lang, k, key) for lang in languages}  # what retrieval and narrowing kept
    funnel = funnel_rows({lang: answers["narrowed"].runs[f"{lang}:ungated"].rows for lang in languages}, kept, k)
    failures, claim_measures, question_failures = diagnose(answers, kept, k, wb.config.rerank_candidates)
    checked = {name: claim_check({f"{lang}:{r.question}": encode(r) for lang in languages
                                  for r in answers[generator].runs[f"{lang}:{SHEET_RUN}"].rows}, folder, left_out)
               for name, (generator, folder, left_out) in CHECKS.items()}
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
        failures=failures, claim_measures=claim_measures, question_failures=question_failures,
        claim_check=checked["narrowed"], claims_check=checked["claims"],
        paired=paired, paired_rows=table_rows(paired),
        answer_languages=languages_shown,
        partly_checkable=decode(list[PartlyCheckable], partly_checkable(default_key_facts())),
        paired_family=PairedFamily(**family.summary(), describe=family.describe()),
        test_set_rows=list(test_set_rows),
    )


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


def _label(generator: Generator) -> str:
    return f"{generator.backend}:{generator.model}"


__all__ = [
    "Ungated",
    "answer_figures",
    "cascade_scores",
    "findings",
    "hand_check_agreement",
    "held_out_run",
    "injection_run",
    "injection_summary",
    "judge_after_gate",
    "run_llm_answers",
    "run_local_llm",
    "selective_rows",
    "selective_run",
]
