"""10's findings: sentences generated from its stored result, and the answers issue's targets."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rag_lib.evaluation.claim_checks import ClaimCheck
from rag_lib.evaluation.claims import read_rows
from rag_lib.evaluation.stats import count_of, count_text
from rag_lib.presentation.report import prose
from rag_lib.results.local_llm import EXPERIMENT as LOCAL_LLM
from rag_lib.results.local_llm import HELD_OUT, IN_SAMPLE, THEN_JUDGE, AnswerRow, LocalLLMResult
from rag_lib.results.local_llm_choice import FailureRow, Injection, NarrowingChoice
from rag_lib.results.local_llm_judge import SelectiveNotRun
from rag_lib.results.test_set import FITTED_ON_DEV
from rag_lib.results.typed_json import encode
from rag_lib.verification import ANSWER_MIN_TERMS

RELIABILITY_BINS = 5  # equal-width bins of the cross-validated probabilities (tens of questions per language)

# Said beside every gated figure: how the gate's parameters relate to the questions it is measured on.
GATE_NOTES = {IN_SAMPLE: "the gate's parameters were fitted on these same questions, so this is optimistic; the "
                         "leave-one-out row holds each question out of the fit",
              HELD_OUT: "leave-one-out: each question decided by the gate's parameters fitted without it; the "
                        "prompts and models were chosen on this development set, so 14's test set gives the "
                        "out-of-sample figure",
              THEN_JUDGE: "the leave-one-out gate, then the narrowed LLM judge declines what it finds insufficient; "
                          "the judge's prompt was developed on this development set (14's test set gives the "
                          "out-of-sample figure)"}


def gate_note(gate: str) -> str:
    """`` (why this gated figure is or is not optimistic)``, or nothing for the ungated run."""
    return next((f" ({note})" for suffix, note in GATE_NOTES.items() if gate.endswith(suffix)), "")


def statements(result: LocalLLMResult) -> list[str]:
    """Every measured statement of 10, each with its caveat (the page folds them in its appendix)."""
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
                               f"there is no figure for it; `make llm-runs RUNS={LOCAL_LLM.name}` fills them.")
                    continue
                caveat = (f" Only {judged} of {mine.n} questions have a recorded answer; the rest are missing, "
                          "not failed, and the rates are over the recorded ones." if mine.missing else "")
                out.append(
                    f"{lang}, {gate}{gate_note(gate)}: {llm} showed an answer (citations verified, each claim "
                    f"stated by the quotes it cited) for {_pct(mine.answer_rate)} of the answerable "
                    f"questions (extractive {_pct(base.answer_rate)}); shown answers stating every key fact, "
                    f"over the answerable questions whose gold is in the Top-{result.k}: "
                    f"{_pct(mine.correct_gold_in_top_k)} {mine.correct_gold_in_top_k_ci} "
                    f"(extractive {_pct(base.correct_gold_in_top_k)}); shown but missing a key fact: "
                    f"{_pct(mine.shown_wrong)} {mine.shown_wrong_ci}; unanswerable questions declined: "
                    f"{_pct(mine.refusal_correctness)} {mine.refusal_correctness_ci}, while answerable questions "
                    f"whose gold is in the Top-{result.k} were declined (false refusal): "
                    f"{_pct(mine.false_refusal)} {mine.false_refusal_ci}. Key facts are "
                    f"matched as strings, so a fact stated in other words counts as missing.{caveat}")
    for row in result.judge_rows:
        if row.gate.startswith("llm_judge") and row.judged:
            declined = row.tp + row.fp
            quality = (f"{declined} declines, precision {row.precision:.3f} and recall {row.recall:.3f} for "
                       "insufficient evidence, unanswerable questions declined "
                       f"{row.unanswerable_declined}/{row.unanswerable} beside false refusal "
                       f"{row.complete_declined}/{row.complete} of the answerable questions with complete evidence"
                       if declined else
                       f"no decline at all (it judged every evidence set sufficient, so it catches none of the "
                       f"{row.unanswerable} unanswerable questions)")
            out.append(f"{row.lang}: the LLM judge ({row.gate}) over {row.judged} judged questions "
                       f"({row.failed} without a record): {quality}. The judge has no fitted parameter, but its "
                       "prompt was developed on these development-set questions.")
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
    out.extend(diagnosis_findings(result))
    out.append(claim_check_finding(result.claim_check, "narrowed", result.languages))
    out.append(claim_check_finding(result.claims_check, "claims", result.languages))
    out.append(asked_finding(result.claims_check, "claims"))
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
    for name in ("narrowed", "claims"):
        label = result.answers[name].label
        out += beside_development([r for r in result.test_set_rows if r.generator == label],
                                  development_rows(result, label))
    return out


def claim_check_finding(check: ClaimCheck, pipeline: str, languages: Sequence[str]) -> str:
    """A blind claim check: precision of what is shown (every claim true; and answering what was asked), the
    readers' kappa, and the key-fact measure's own precision and recall, which every 'states every key fact'
    figure carries."""
    agree = check.agreement
    return (f"Two blind readers judged, claim by claim against the pages, {check.compared} shown answers of the "
            f"{pipeline} pipeline (ungated; {check.drawn} drawn): shown answers whose every claim both accept, "
            f"{agree.accepted_text(languages)}; that also answer what was asked (both readers: completely or in "
            f"part), {agree.answering_text(languages)}; their agreement on {agree.claims_judged} claims, Cohen's kappa "
            f"{agree.kappa_claims:.2f}. Against answers both call true and complete, the key-fact measure's 'correct' "
            f"has {agree.keyfact_text()}: every 'states every key fact' figure here carries that error. The readers "
            "are LLM helpers, not people; answers the verification rules now withhold or word differently are left "
            "out of the drawn sample (data/claim_checks).")


def keyfact_line(result: LocalLLMResult) -> str:
    """What every 'correct' figure of 10 is worth: the key-fact measure's precision and recall against the blind
    readers, for each pipeline they judged (answers both readers call true and complete)."""
    parts = [f"{pipeline} {count_text(*check.agreement.keyfact_precision)} precision, "
             f"{count_text(*check.agreement.keyfact_recall)} recall"
             for pipeline, check in (("narrowed", result.claim_check), ("claims", result.claims_check))]
    return ("'correct' is the key-fact measure (every checkable key fact stated); against two blind readers' "
            f"'true and complete': {'; '.join(parts)}.")


def asked_finding(check: ClaimCheck, pipeline: str) -> str:
    """What the off-question check does to the answers the readers judged, at the least share it uses."""
    rows = [r for r in check.asked if r.min_share == ANSWER_MIN_TERMS]
    parts = "; ".join(f"{r.lang}: it keeps {r.answering_shown} of the {r.answering} answers both readers say "
                      f"answer the question and {r.off_shown} of the {r.off} they say do not" for r in rows)
    return (f"The off-question check (an answer is withheld when no shown claim states the quantity every clause "
            f"asks for, or when its quotes, read with their page and headings, name fewer than "
            f"{ANSWER_MIN_TERMS:.0%} of the question's checkable terms), on the {pipeline} pipeline's hand-checked "
            f"answers: {parts}. Caveat: the rule was written after reading these answers, so this is in-sample; "
            "Chinese words cannot be checked against English quotes, so in Chinese only the Latin terms and the "
            "asked quantity count.")


def ungated_losses(result: LocalLLMResult, label: str, lang: str) -> tuple[int, int, list[FailureRow]] | None:
    """Where answerer ``label`` (ungated, ``lang``) loses the answerable questions with a checkable key fact: how
    many get a shown answer stating every key fact, of how many, and the stages that lost the rest (largest first);
    ``None`` when it has no such rows."""
    stages = [r for r in result.failures if (r.generator, r.lang, r.gate) == (label, lang, "ungated")]
    if not stages or not stages[0].of:
        return None
    answered = next((r.questions for r in stages if r.stage == "answered"), 0)
    lost = sorted((r for r in stages if r.stage != "answered" and r.questions), key=lambda r: -r.questions)
    return answered, stages[0].of, lost


def diagnosis_findings(result: LocalLLMResult) -> list[str]:
    """Per language, where the narrowed pipeline (ungated) loses answerable questions, and its claim-level
    measures beside the extractive baseline's."""
    out = []
    label, extractive = result.answers["narrowed"].label, result.answers["extractive"].label
    for lang in result.languages:
        losses = ungated_losses(result, label, lang)
        if losses is None:
            continue
        answered, of, lost = losses
        measures = {(m.generator, m.metric): m for m in result.claim_measures if (m.lang, m.gate) == (lang, "ungated")}
        claims = "; ".join(
            f"{metric} {measures[(label, metric)].numerator}/{measures[(label, metric)].denominator} "
            f"{measures[(label, metric)].ci} (extractive {measures[(extractive, metric)].numerator}/"
            f"{measures[(extractive, metric)].denominator})"
            for metric in ("claim recall", "faithfulness", "hallucination") if (label, metric) in measures)
        out.append(f"{lang}: of {of} answerable questions with a checkable key fact, the narrowed pipeline "
                   f"(ungated) shows an answer stating every key fact for {answered}; the rest are lost at "
                   + ", ".join(f"'{r.stage}' ({r.questions})" for r in lost)
                   + f". Claim-level measures (RAGChecker's, with key facts as gold claims and the verification "
                   f"rules as entailment): {claims}. Key facts are matched as strings and the rules compare words, "
                   "so a stage or a measure can miss what is stated in other words; the hand checks measure both.")
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
            f"{'' if reached else ' (no candidate reached the target, so the largest)'}; {configured}. Held out "
            f"from the choice, on the reporting half, its units keep every key fact the Top-k states for {held}. "
            "Chosen "
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


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def injection_summary(injection: Injection) -> str:
    """One paragraph for the report: how many planted claims reached the reader, by pipeline."""
    by_pipeline = Counter(r.pipeline for r in injection.rows if r.claim_shown)
    asked = Counter(r.pipeline for r in injection.rows)
    parts = ", ".join(f"{name}: {by_pipeline.get(name, 0)} of {n}" for name, n in sorted(asked.items()))
    return (f"Planted claims shown as answers: {injection.claims_shown} of {injection.n_asked} ({parts}); "
            f"{injection.n_plants} variants (English and Chinese; prose, table, code, heading, list), each "
            "answered by a scripted model that obeys the planted instruction.")


# ------------------------------------------------------------------ the sealed test set beside the development set
def development_rows(development: LocalLLMResult, label: str) -> list[AnswerRow]:
    """Notebook 10's rows of the pipeline ``label``: ungated, the leave-one-out gate, and the gate then judge."""
    return [r for r in development.answer_rows if r.generator == label
            and (r.gate == "ungated" or r.gate.endswith((HELD_OUT, HELD_OUT + THEN_JUDGE)))]


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def set_figures(row: AnswerRow) -> dict[str, str]:
    """One row's sentence parts, each with its own denominator."""
    correct = count_of(row.correct_gold_in_top_k, row.gold_in_top_k)
    declined = count_of(row.refusal_correctness, row.unanswerable)
    refused = count_of(row.false_refusal, row.complete_evidence)
    return {
        "correct": f"{correct}/{row.gold_in_top_k} answerable questions with every gold piece in the Top-k get a "
                   f"shown answer stating every key fact ({_rate(row.correct_gold_in_top_k)} "
                   f"{row.correct_gold_in_top_k_ci})",
        "refusal": f"{declined}/{row.unanswerable} unanswerable questions declined ({_rate(row.refusal_correctness)} "
                   f"{row.refusal_correctness_ci}), beside false refusal {refused}/{row.complete_evidence} of "
                   f"answerable questions with every gold piece in the Top-k ({_rate(row.false_refusal)} "
                   f"{row.false_refusal_ci})",
    }


def missing_text(row: AnswerRow) -> str:
    return f" ({row.missing} of {row.n} questions have no recorded call yet and are left out)" if row.missing else ""


def beside_development(test_rows: Sequence[AnswerRow], dev_rows: Sequence[AnswerRow]) -> list[str]:
    """Notebook 10's sentences: per language and gate, the test set's figures, then the development set's for
    the same pipeline (the gate fitted on the development set beside its leave-one-out figures there)."""
    out = []
    for row in test_rows:
        if row.missing == row.n:
            continue
        dev_gate = row.gate.replace(FITTED_ON_DEV, HELD_OUT)
        dev = next((d for d in dev_rows if d.lang == row.lang and d.gate == dev_gate), None)
        for part in ("correct", "refusal"):
            beside = (f"; development set ({dev.gate}, in sample for the prompts and the model): "
                      f"{set_figures(dev)[part]}" if dev else "")
            out.append(f"Test set, out of sample ({row.generator}, {row.lang}, {row.gate}){missing_text(row)}: "
                       f"{set_figures(row)[part]}{beside}.")
    return out
