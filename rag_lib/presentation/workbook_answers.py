"""``W5_answers``'s report, derived from its stored rows when it is rendered: per language, the funnel from question
to correct answer (declined by the gate, by the generator, answered, stating every key fact), the unanswerable
questions declined beside the false refusals, and citation validity, each with its Wilson 95% interval.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rag_lib.core.text import LANGUAGE_NAMES
from rag_lib.evaluation.stats import count_text
from rag_lib.generation.base import WITHHELD_KINDS
from rag_lib.results.answer_rows import AnsweredQuestion
from rag_lib.results.workbook_answers import WorkbookAnswersResult
from rag_lib.results.workbook_gates import CASEBOOK, IN_SAMPLE

EXTRACTIVE_NOTE = ("the extractive generator quotes the evidence sentences most like the question and writes no answer "
                   "of its own (in the corpus's language, whatever the question's)")

FIT_WORDS = {CASEBOOK: "the casebook's, as `ask` applies them", IN_SAMPLE: "refitted on these questions (in-sample)"}


def _kinds(kinds: list[str], of: int) -> str:
    """``k/n [Wilson]`` and how many of each kind (``unsupported_claims 6, …``)."""
    counted = Counter(kinds).most_common()
    return count_text(len(kinds), of) + (f" ({', '.join(f'{kind} {n}' for kind, n in counted)})" if kinds else "")


def _funnel(result: WorkbookAnswersResult, rows: list[AnsweredQuestion]) -> dict[str, str]:
    answerable = [r for r in rows if r.answerable]
    judged = [r for r in answerable if r.question in set(result.checkable)]
    unanswerable = [r for r in rows if not r.answerable]
    complete = [r for r in answerable if r.label == "sufficient"]
    valid, total = sum(r.citations_valid for r in rows), sum(r.citations_total for r in rows)
    # answers the checks withheld (claims their quotes do not state, …) apart from calls that failed (truncated, …)
    errors = [r.error_kind or "unknown" for r in answerable if r.status == "error"]
    withheld = [kind for kind in errors if kind in WITHHELD_KINDS]
    failed = [kind for kind in errors if kind not in WITHHELD_KINDS]
    return {
        "answerable declined by the gate": count_text(sum(r.declined_by == "gate" for r in answerable),
                                                      len(answerable)),
        "declined by the generator": count_text(sum(r.declined_by == "generator" for r in answerable), len(answerable)),
        "withheld by the checks": _kinds(withheld, len(answerable)),
        "failed": _kinds(failed, len(answerable)),
        "answered": count_text(sum(r.status == "answered" for r in answerable), len(answerable)),
        "states every key fact": count_text(sum(r.correct is True for r in judged), len(judged)),
        "unanswerable declined": count_text(sum(r.status == "insufficient" for r in unanswerable), len(unanswerable)),
        "false refusals": count_text(sum(r.status == "insufficient" for r in complete), len(complete)),
        "cited quotes found in their chunk": count_text(valid, total) if total else "no citation"}


def funnel_rows(result: WorkbookAnswersResult) -> list[dict[str, Any]]:
    """One row per language: from question to correct answer, and the refusals beside the false refusals."""
    return [{"language": lang, **_funnel(result, rows)} for lang, rows in result.answers.items()]


def answer_rows(result: WorkbookAnswersResult) -> list[dict[str, Any]]:
    """Every question and language: the gate's decision, the outcome, and whether the answer states every key fact."""
    return [{"question": r.question, "language": lang, "answerable": r.answerable, "evidence": r.label,
             "status": r.status, "declined by": r.declined_by or "", "withheld or failed": r.error_kind or "",
             "states every key fact": r.correct,
             "citations": f"{r.citations_valid}/{r.citations_total}", "answer": r.answer}
            for lang, rows in result.answers.items() for r in rows]


def generator_text(result: WorkbookAnswersResult) -> str:
    g = result.generator
    return f"{g.model} ({g.backend}" + (f", {g.model_version})" if g.model_version else ")")


def findings(result: WorkbookAnswersResult) -> list[str]:
    out = []
    for lang in result.answers:
        f = _funnel(result, result.answers[lang])
        out.append(f"{LANGUAGE_NAMES[lang]} questions on {result.title}, answered by {generator_text(result)} "
                   f"behind floor+aspects: {f['states every key fact']} answerable questions with a checkable key "
                   f"fact get an answer that states every one ({f['answered']} answered, "
                   f"{f['withheld by the checks']} withheld by the checks, {f['failed']} failed); "
                   f"{f['unanswerable declined']} unanswerable questions are declined, with {f['false refusals']} "
                   f"answerable questions whose Top-{result.k} holds every gold piece declined (false refusals).")
    note = (EXTRACTIVE_NOTE if result.generator.backend == "extractive"
            else "an LLM's answer is judged by string checks")
    fits = " and ".join(FIT_WORDS.get(fit, fit) for fit in result.gate_fit.split(" and "))
    out.append(f"Caveat: a key fact counts when the answer states it verbatim or in a listed alternative; {note}; the "
               f"gate's settings are {fits}: {result.gate}.")
    return out


def report_markdown(result: WorkbookAnswersResult, findings: Sequence[str]) -> str:
    from rag_lib.presentation.tables import Table

    lines = [f"# W5 · Answers behind the gate: {result.title}", "", "## Findings", "",
             *[f"- {line}" for line in findings], "", "## From question to correct answer", "",
             Table(funnel_rows(result)).to_markdown(), "", "## Setup", "",
             f"- evidence: {result.retriever}, Top-{result.k}", f"- gate: {result.gate}; settings: {result.gate_fit}",
             f"- generator: {generator_text(result)}; calls: {result.generator_calls}"]
    return "\n".join(lines) + "\n"
