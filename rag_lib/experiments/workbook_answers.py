"""``W5_answers``: every question of a workbook answered behind the evidence gate, by the workbook's generator
(``generator:`` in its workbook.yaml; the extractive default quotes the evidence without an LLM). The gate is
floor+aspects with the settings W3 stored: the casebook's where they apply (what ``ask`` does), else the ones
refitted on this workbook's questions (in-sample, and said so). Stored one row per question and language
(:mod:`rag_lib.results.workbook_answers`).
"""

from __future__ import annotations

from rag_lib.core.errors import WorkbookError
from rag_lib.evaluation.correctness import answer_correct
from rag_lib.evidence import get_gate
from rag_lib.generation import get_generator
from rag_lib.pipeline.workbench import RunKey
from rag_lib.pipeline.workbook import OpenWorkbook
from rag_lib.question_sweeps.generation import run_generation_eval
from rag_lib.results.answer_rows import AnsweredQuestion, GeneratorInfo
from rag_lib.results.typed_json import decode
from rag_lib.results.workbook_answers import EXPERIMENT, WorkbookAnswersResult
from rag_lib.results.workbook_gates import CASEBOOK, IN_SAMPLE, WorkbookGatesResult
from rag_lib.results.workbook_gates import EXPERIMENT as W3

GATE = "floor_aspects"  # the gate `ask` applies


def gate_settings(gates: WorkbookGatesResult, lang: str) -> tuple[str, dict[str, float]]:
    """The fit and the floor+aspects settings W3 stored for ``lang``: the casebook's where they apply."""
    by_fit = {s.fit: s for s in gates.settings if (s.language, s.gate) == (lang, GATE)}
    fit = CASEBOOK if CASEBOOK in by_fit else IN_SAMPLE
    chosen = by_fit.get(fit)
    if chosen is None or chosen.floor is None or chosen.min_coverage is None:
        raise WorkbookError(f"{W3.name} stored no floor+aspects settings for {lang!r}; re-run it for that language.")
    return fit, {"floor": chosen.floor, "min_coverage": chosen.min_coverage}


def run_answers(opened: OpenWorkbook) -> WorkbookAnswersResult:
    """Answer every question in each language behind the gate W3 chose the settings of."""
    wb, workbook = opened.workbench, opened.workbook
    gates = WorkbookGatesResult.read(W3.name, needed_by=EXPERIMENT.name)
    generator = get_generator(workbook.generator)
    key_facts = opened.questions.key_facts if opened.questions else None
    answers: dict[str, list[AnsweredQuestion]] = {}
    calls: dict[str, int] = {}
    fits, shown = set(), []
    for lang in workbook.languages:
        fit, params = gate_settings(gates, lang)
        fits.add(fit)
        shown.append(f"{lang}: best score ≥ {params['floor']:.4f}, aspect coverage ≥ {params['min_coverage']:.2f}")
        run = run_generation_eval(wb, get_gate("floor+aspects", **params), generator, lang, workbook.k, "dense",
                                  key_facts)
        answers[lang] = [decode(AnsweredQuestion, row) for row in run["rows"]]
        calls[lang] = run["generator_calls"]
    return WorkbookAnswersResult(
        workbook.name, workbook.title, workbook.k, RunKey("dense", wb.config.embedder).label,
        "floor+aspects (" + "; ".join(shown) + ")", " and ".join(sorted(fits)),
        GeneratorInfo(generator.backend, generator.model, generator.model_version), calls,
        [q.id for q in wb.benchmark.questions(answerable=True)
         if answer_correct(q.id, "", key_facts).correct is not None], answers)
