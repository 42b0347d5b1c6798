"""10's Findings: the few sentences about the model of record (its claims and narrowed pipelines), out of sample
first, then the blind readers, where answers are lost, injection, and the caveats said once. Every other measured
statement is :func:`rag_lib.experiments.llm_eval.report.statements`."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.evaluation.claim_checks import ClaimCheck
from rag_lib.evaluation.stats import count_of
from rag_lib.presentation.llm_eval import missing_text, ungated_losses
from rag_lib.results.local_llm import THEN_JUDGE, AnswerRow, LocalLLMResult
from rag_lib.results.test_set import FITTED_ON_DEV

MAX_FINDINGS = 8  # what 10's Findings may hold; every other measured statement is in its appendix


def findings(result: LocalLLMResult) -> list[str]:
    """10's Findings: the model of record's pipelines (claims, then narrowed) out of sample first, then the blind
    readers, where answers are lost, injection, and one line of caveats said once. The rest: :func:`statements`."""
    out: list[str] = []
    for name in ("claims", "narrowed"):
        rows = _test_rows(result, name, FITTED_ON_DEV)
        if rows:
            out.append(f"Out of sample (the sealed test set, behind the gate fitted on the development set), the "
                       f"{name} pipeline: " + "; ".join(f"{r.lang}: {_brief(r)}" for r in rows) + ".")
    rows = _test_rows(result, "claims", FITTED_ON_DEV + THEN_JUDGE)
    if rows:
        out.append("Adding the narrowed LLM judge after that gate (test set, claims pipeline) declines unanswerable "
                   "questions at the cost of answerable ones: " + "; ".join(f"{r.lang}: {_brief(r)}" for r in rows)
                   + ".")
    out.append(readers_brief(result.claims_check, "claims", result.languages))
    lost = lost_brief(result, "claims")
    if lost:
        out.append(lost)
    inj = result.injection
    out.append(f"Planted instructions: {inj.claims_shown} of {inj.n_asked} planted claims reached the reader as an "
               f"answer ({inj.n_plants} variants in English and Chinese, each answered by a scripted model that obeys "
               "them).")
    out.append(caveats(result))
    return out


def _test_rows(result: LocalLLMResult, name: str, gate: str) -> list[AnswerRow]:
    """The test set's recorded rows of pipeline ``name`` whose gate ends in ``gate`` (the fitted gate, or it then
    the judge: a gate name ends in only one of them)."""
    label = result.answers[name].label
    return [r for r in result.test_set_rows if r.generator == label and r.gate.endswith(gate) and r.missing < r.n]


def _brief(row: AnswerRow) -> str:
    """A row's answers and refusals in one clause, each with its own denominator."""
    correct = count_of(row.correct_gold_in_top_k, row.gold_in_top_k)
    declined = count_of(row.refusal_correctness, row.unanswerable)
    refused = count_of(row.false_refusal, row.complete_evidence)
    return (f"{correct}/{row.gold_in_top_k} answerable questions with their gold in the Top-k get a shown answer "
            f"stating every key fact {row.correct_gold_in_top_k_ci}, {declined}/{row.unanswerable} unanswerable "
            f"declined {row.refusal_correctness_ci} beside false refusal {refused}/{row.complete_evidence} "
            f"{row.false_refusal_ci}{missing_text(row)}")


def readers_brief(check: ClaimCheck, pipeline: str, languages: Sequence[str],
                  where: str = "development set, ungated") -> str:
    """The blind readers' precision of what the pipeline shows (on ``where``), in one sentence."""
    agree = check.agreement
    return (f"Two blind readers accept every claim of {agree.accepted_text(languages)} shown answers of the "
            f"{pipeline} pipeline ({where}; Cohen's kappa {agree.kappa_claims:.2f} on {agree.claims_judged} claims); "
            f"{agree.answering_text(languages)} also answer what was asked.")


def lost_brief(result: LocalLLMResult, name: str) -> str | None:
    """Where the pipeline (development set, ungated) loses the answerable questions: its two largest stages."""
    label = result.answers[name].label
    parts = []
    for lang in result.languages:
        losses = ungated_losses(result, label, lang)
        if losses is None:
            continue
        answered, of, lost = losses
        parts.append(f"{lang}: {answered} of {of} get a shown answer stating every key fact, most are lost at "
                     + " and ".join(f"'{r.stage}' ({r.questions})" for r in lost[:2]))
    return (f"Where the {name} pipeline loses the answerable questions with a checkable key fact (development "
            f"set, ungated; where_it_failed.png): " + "; ".join(parts) + ".") if parts else None


def caveats(result: LocalLLMResult) -> str:
    """Every caveat of the Findings, said once."""
    label = result.answers["claims"].label
    zh = next((s for s in result.answer_languages if s.generator == label and s.lang == "zh" and s.shown), None)
    language = (f"; the claims pipeline writes its claims in the evidence's language, so {zh.in_language} of its "
                f"{zh.shown} answers shown to Chinese questions are in Chinese, and Chinese words cannot be checked "
                "against English quotes" if zh else "")
    n = max((r.n for r in result.answer_rows), default=0)
    return ("Caveats: development-set figures are in sample (the prompts, the model, the narrowing and the "
            f"verification rules were chosen on these {n} questions; only the test set's are out of sample); key "
            f"facts are matched as strings (against the blind readers, the key-fact measure's 'correct' has "
            f"{result.claims_check.agreement.keyfact_text()}){language}; the injection variants "
            "and the detector were written together.")
