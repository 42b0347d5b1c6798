"""``W3_gates``'s report, derived from its stored decisions when it is rendered: for each language, gate and fit,
the unanswerable questions declined (near-miss and absent-topic apart) beside the false refusals (answerable
questions whose Top-k holds every gold piece, declined), each with its Wilson 95% interval; the Findings; the
best-score figure with both floors.

A refusal rate is never shown without its false-refusal rate: each row of the table holds both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag_lib.core.text import LANGUAGE_NAMES
from rag_lib.evaluation.stats import count_text
from rag_lib.presentation.figures.gates import score_distributions
from rag_lib.results.q9a import BestScores
from rag_lib.results.workbook_gates import (
    CASEBOOK,
    FITS,
    IN_SAMPLE,
    LEAVE_ONE_OUT,
    GateInput,
    GateSetting,
    WorkbookGatesResult,
)

GATE_NAMES = {"floor": "floor", "aspects": "aspects", "floor_aspects": "floor+aspects"}
FIT_NAMES = {CASEBOOK: "the casebook's (what ask applies)", IN_SAMPLE: "refitted here, in-sample",
             LEAVE_ONE_OUT: "refitted here, leave-one-out"}


def languages(result: WorkbookGatesResult) -> list[str]:
    return list(dict.fromkeys(i.language for i in result.inputs))


def declined(result: WorkbookGatesResult, lang: str, gate: str, fit: str) -> dict[str, bool] | None:
    """Question → declined, for one gate under one fit (``None``: that fit was not applied)."""
    out = {d.question: d.declined for d in result.decisions if (d.language, d.gate, d.fit) == (lang, gate, fit)}
    return out or None


def _setting(result: WorkbookGatesResult, lang: str, gate: str, fit: str) -> GateSetting | None:
    return next((s for s in result.settings if (s.language, s.gate, s.fit) == (lang, gate, fit)), None)


def setting_text(setting: GateSetting | None) -> str:
    if setting is None:
        return "fitted without the question it decides"
    parts = ([f"best score ≥ {setting.floor:.4f}"] if setting.floor is not None else []) + (
        [f"aspect coverage ≥ {setting.min_coverage:.2f}"] if setting.min_coverage is not None else [])
    return ", ".join(parts) or "declines nothing"


class Groups:
    """One language's questions by label: unanswerable (near-miss and absent-topic), and answerable with every
    gold piece in the Top-k (complete) or not."""

    def __init__(self, inputs: Sequence[GateInput]) -> None:
        self.unanswerable = [i.question for i in inputs if not i.answerable]
        self.near_miss = [i.question for i in inputs if not i.answerable and i.near_miss]
        self.absent_topic = [i.question for i in inputs if not i.answerable and not i.near_miss]
        self.complete = [i.question for i in inputs if i.complete]
        self.incomplete = [i.question for i in inputs if i.answerable and not i.complete]

    @staticmethod
    def count(decided: dict[str, bool], questions: Sequence[str]) -> str:
        return count_text(sum(decided[q] for q in questions), len(questions))


def rate_rows(result: WorkbookGatesResult) -> list[dict[str, Any]]:
    """One row per language, gate and fit: its setting, unanswerable declined (all, near miss, absent topic) and
    false refusals, each k/n [Wilson 95%]."""
    rows = []
    for lang in languages(result):
        groups = Groups([i for i in result.inputs if i.language == lang])
        for gate, gate_name in GATE_NAMES.items():
            for fit in FITS:
                decided = declined(result, lang, gate, fit)
                if decided is None:
                    continue
                rows.append({
                    "language": lang, "gate": gate_name, "settings": FIT_NAMES[fit],
                    "setting": setting_text(_setting(result, lang, gate, fit)),
                    "unanswerable declined": groups.count(decided, groups.unanswerable),
                    "near miss declined": groups.count(decided, groups.near_miss),
                    "absent topic declined": groups.count(decided, groups.absent_topic),
                    "false refusals": groups.count(decided, groups.complete),
                    "answerable, a piece missing, declined": groups.count(decided, groups.incomplete)})
    return rows


def _said(result: WorkbookGatesResult, lang: str, gate: str, fit: str) -> str:
    groups = Groups([i for i in result.inputs if i.language == lang])
    decided = declined(result, lang, gate, fit)
    assert decided is not None
    near = f" (near miss: {groups.count(decided, groups.near_miss)})" if groups.near_miss else ""
    return (f"declines {groups.count(decided, groups.unanswerable)} unanswerable questions{near} and "
            f"{groups.count(decided, groups.complete)} answerable ones whose Top-{result.k} holds every gold piece "
            "(false refusals)")


def findings(result: WorkbookGatesResult) -> list[str]:
    """Per language: the gate `ask` applies, with the casebook's settings, on these questions; then refitted here and
    measured leave-one-out (what a new question of this corpus can expect); then the caveat."""
    out = []
    for lang in languages(result):
        who = f"{LANGUAGE_NAMES[lang]} questions on {result.title}"
        if declined(result, lang, "floor_aspects", CASEBOOK) is not None:
            tuned = ("in-sample here: these are the questions it was fitted on" if result.same_questions
                     else "tuned on none of these questions")
            out.append(f"{who}: the gate `ask` applies (floor+aspects with the casebook's settings, {tuned}) "
                       f"{_said(result, lang, 'floor_aspects', CASEBOOK)}.")
        out.append(f"{who}: floor+aspects refitted on this workbook's questions and measured leave-one-out "
                   f"{_said(result, lang, 'floor_aspects', LEAVE_ONE_OUT)}; fitted and measured on the same questions "
                   f"(in-sample, optimistic) it {_said(result, lang, 'floor_aspects', IN_SAMPLE)}.")
    if result.casebook_refused:
        out.append(f"The casebook's settings are not applied here: {result.casebook_refused}")
    groups = {lang: Groups([i for i in result.inputs if i.language == lang]) for lang in languages(result)}
    counts = ", ".join(f"{len(g.unanswerable)} unanswerable and {len(g.complete)} complete-evidence answerable "
                       f"questions ({lang})" for lang, g in groups.items())
    out.append(f"Caveat: {counts}, so every rate's interval is wide; the labels are the workbook's "
               f"({result.questions_source}); the LLM judge gate is not run here (it needs a recorded LLM call per "
               "question and language).")
    return out


def best_scores(result: WorkbookGatesResult) -> dict[str, BestScores]:
    return {lang: BestScores(sorted(i.best_score for i in result.inputs if i.language == lang and i.answerable),
                             sorted(i.best_score for i in result.inputs if i.language == lang and not i.answerable))
            for lang in languages(result)}


def score_figure(result: WorkbookGatesResult, path: Path) -> Path:
    """Best scores of answerable and unanswerable questions, with the floor gate's casebook and refitted floors."""
    def floors(fit: str) -> dict[str, float | None]:
        return {lang: s.floor if (s := _setting(result, lang, "floor", fit)) else None for lang in languages(result)}

    return score_distributions(best_scores(result), floors(CASEBOOK), path,
                               title=f"Best dense score per question, answerable vs unanswerable: {result.title}",
                               floor_label="casebook's floor", other_floors=floors(IN_SAMPLE),
                               other_label="refitted floor")


def report_markdown(result: WorkbookGatesResult, findings: Sequence[str]) -> str:
    from rag_lib.presentation.tables import Table

    lines = [f"# W3 · Whether to answer: the evidence gates on {result.title}", "", "## Findings", "",
             *[f"- {line}" for line in findings], "", "![Best scores](best_scores.png)", "",
             "## Each gate under each fit", "", Table(rate_rows(result)).to_markdown(), "", "## Setup", "",
             f"- scores: {result.configuration}, {result.model}; Top-{result.k}",
             f"- the casebook's settings: {result.casebook_fit}", f"- questions: {result.questions_source}"]
    return "\n".join(lines) + "\n"
