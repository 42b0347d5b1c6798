"""``W3_gates``: whether to answer, on any workbook: the label-free evidence gates (score floor, aspect coverage,
both) on every question of the workbook, with the settings notebook 03 fitted on the casebook's benchmark (those
``ask`` applies) and with settings refitted on the workbook's own questions, in sample and leave-one-out.

The casebook's settings were tuned on none of another workbook's questions, so on it their figures are out of
sample: what ``ask`` would do on documents it was never tuned for. Stored long
(:mod:`rag_lib.results.workbook_gates`).
"""

from __future__ import annotations

from collections.abc import Mapping

from rag_lib.core.config import RESULTS_DIR, shown_path
from rag_lib.core.errors import WorkbookError
from rag_lib.evidence import ScoredQuestion, cross_validate, fit
from rag_lib.pipeline.answer import check_calibration
from rag_lib.pipeline.workbench import RunKey
from rag_lib.pipeline.workbook import OpenWorkbook
from rag_lib.question_sweeps.gates import scored_questions
from rag_lib.results.q9a import EXPERIMENT as Q9A
from rag_lib.results.q9a import Q9aResult
from rag_lib.results.workbook_gates import (
    CASEBOOK,
    EXPERIMENT,
    IN_SAMPLE,
    LEAVE_ONE_OUT,
    Decision,
    GateInput,
    GateSetting,
    WorkbookGatesResult,
)

GATES = ("floor", "aspects", "floor_aspects")  # the label-free gates 03 tunes (rag_lib.evidence.calibration)


def casebook_settings(casebook: Q9aResult, lang: str, gate: str) -> dict[str, float | None] | None:
    """The setting 03 chose for ``gate`` in ``lang`` (``None``: 03 did not calibrate that language)."""
    calibration = casebook.calibration.get(lang)
    if calibration is None:
        return None
    chosen = getattr(calibration, gate)
    return {"floor": chosen.floor, "min_coverage": chosen.min_coverage}


def _decisions(rows: list[ScoredQuestion], lang: str, gate: str, fit_name: str,
               declined: Mapping[str, bool]) -> list[Decision]:
    return [Decision(lang, gate, fit_name, r.question_id, declined[r.question_id]) for r in rows]


def run_gates(opened: OpenWorkbook) -> WorkbookGatesResult:
    """Score every question's dense Top-k in each language and decide it with each gate under each fit."""
    wb, workbook = opened.workbench, opened.workbook
    casebook = Q9aResult.read(Q9A.name, RESULTS_DIR, needed_by=f"{EXPERIMENT.name} (the casebook's gate settings)")
    try:
        check_calibration(casebook, workbook.k, wb.config.embedder)
        refused = None
    except WorkbookError as exc:  # fitted at another k or on another embedder's scores: shown, never applied
        refused = str(exc)
    near = {q.id for q in wb.benchmark if q.near_miss}
    inputs: list[GateInput] = []
    settings: list[GateSetting] = []
    decisions: list[Decision] = []
    for lang in workbook.languages:
        rows = scored_questions(wb, lang, "dense", workbook.k)
        inputs += [GateInput(lang, r.question_id, r.answerable, r.question_id in near,
                             r.answerable and not r.label_insufficient, r.best_score, r.aspect_coverage) for r in rows]
        for gate in GATES:
            fits = {IN_SAMPLE: fit(rows, gate)}
            theirs = None if refused else casebook_settings(casebook, lang, gate)
            if theirs is not None:
                fits = {CASEBOOK: theirs, **fits}
            for name, chosen in fits.items():
                settings.append(GateSetting(lang, gate, name, chosen["floor"], chosen["min_coverage"]))
                decisions += _decisions(rows, lang, gate, name, {r.question_id: r.declined_with(chosen) for r in rows})
            decisions += _decisions(rows, lang, gate, LEAVE_ONE_OUT, cross_validate(rows, gate)["declined"])
    label = RunKey("dense", wb.config.embedder).label
    fitted_on = {figures.n for by_gate in casebook.gates.values() for figures in by_gate.values()}
    return WorkbookGatesResult(
        workbook.name, workbook.title, workbook.k, label, opened.model(label),
        shown_path(workbook.questions) if workbook.questions else "the labelled benchmark",
        f"{Q9A.name}, fitted on the {'/'.join(map(str, sorted(fitted_on)))} questions of the labelled benchmark "
        f"(the casebook's Cloudflare docs) at k = {casebook.k}", refused, workbook.questions is None,
        inputs, settings, decisions)
