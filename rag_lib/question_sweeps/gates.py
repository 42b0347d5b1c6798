"""Evidence gates on the whole benchmark: score every question's Top-k, calibrate a gate's
parameters, build the chosen gates, and measure them (and the LLM judge) against the labels.

Shared by notebooks 02, 03 and 10, which is why it is not in one experiment's module. Every
calibration here is in-sample (fitted and measured on the same questions); notebook 03 measures
the chosen parameters out of sample.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from rag_lib.benchmark import Question
from rag_lib.core.documents import Chunk
from rag_lib.evidence import (
    AspectGate,
    Case,
    ChecklistGate,
    Gate,
    LLMJudgeGate,
    ScoredQuestion,
    choose,
    get_gate,
    label_insufficient,
    score_cases,
    sweep,
)
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.gate_rows import GateFigures, JudgeTableRow, LLMJudge
from rag_lib.retrieval import Ranking


def scored_questions(wb: Workbench, lang: str, key: str = "dense", k: int | None = None) -> list[ScoredQuestion]:
    """Every benchmark question's label, best score and aspect coverage of its Top-``k``."""
    k = wb.config.top_k(k)
    aspects = AspectGate()
    rows = []
    for q in wb.benchmark:
        ranking = wb.rank(q.text(lang), key)
        rows.append(score_question(q, lang, ranking, wb.evidence(ranking, k), aspects))
    return rows


def score_question(q: Question, lang: str, ranking: Ranking, evidence: Sequence[Chunk],
                   aspects: AspectGate | None = None) -> ScoredQuestion:
    """What the label-free gates see of one question's ``evidence`` (the Top-k of ``ranking``)."""
    matched, unmatched, _ = (aspects or AspectGate()).check(q.text(lang), evidence)
    coverage = len(matched) / (len(matched) + len(unmatched)) if matched or unmatched else None
    return ScoredQuestion(q.id, q.answerable, label_insufficient(q, [c.id for c in evidence]),
                          float(ranking.scores[0]), coverage)


def calibrate(wb: Workbench, lang: str, key: str = "dense", k: int | None = None,
              rows: Sequence[ScoredQuestion] | None = None) -> dict[str, Any]:
    """Sweep the floor, the aspect coverage and both together; choose each by Youden's J.

    Every candidate value is tried (see :func:`rag_lib.evidence.sweep`); the choice rule is
    :func:`rag_lib.evidence.choose`. In-sample: the same questions are then measured.
    """
    k = wb.config.top_k(k)
    rows = rows if rows is not None else scored_questions(wb, lang, key, k)
    floor_rows = sweep(rows, floors=None)
    coverage_rows = sweep(rows, coverages=None)
    both_rows = sweep(rows, floors=None, coverages=None)
    return {
        "lang": lang,
        "floor_sweep": floor_rows,
        "floor": choose(floor_rows),
        "aspects": choose(coverage_rows),
        "floor_aspects": choose(both_rows),
        "grid_size": len(both_rows),
    }


def chosen_gates(calibration: dict[str, Any], wb: Workbench) -> dict[str, Gate]:
    """The gates with the parameters :func:`calibrate` chose, plus the checklist oracle."""
    both = calibration["floor_aspects"]
    gates: dict[str, Gate] = {"checklist": ChecklistGate(wb.benchmark),
                              "floor": get_gate("floor", floor=calibration["floor"]["floor"]),
                              "aspects": get_gate("aspects", min_coverage=calibration["aspects"]["min_coverage"])}
    if both["floor"] is not None and both["min_coverage"] is not None:
        gates["floor_aspects"] = get_gate("floor+aspects", floor=both["floor"], min_coverage=both["min_coverage"])
    return gates


def general_gate_key(gates: dict[str, Gate]) -> str:
    """The key of the gate every general question goes through: floor+aspects when its parameters
    could be fitted, else the floor alone."""
    return "floor_aspects" if "floor_aspects" in gates else "floor"


def measure_gates(wb: Workbench, gates: dict[str, Gate], lang: str, key: str = "dense",
                  k: int | None = None) -> dict[str, Any]:
    """Run each gate on every benchmark question's Top-``k``; precision/recall of "insufficient" etc."""
    k = wb.config.top_k(k)
    out = {}
    for name, gate in gates.items():
        cases = []
        for q in wb.benchmark:
            ranking = wb.rank(q.text(lang), key)
            evidence = wb.evidence(ranking, k)
            decision = gate.decide(q.text(lang), evidence, ranking)
            cases.append(Case(q.id, q.answerable, label_insufficient(q, [c.id for c in evidence]),
                              not decision.sufficient))
        out[name] = score_cases(cases).to_json()
    return out


def measure_llm_judge(wb: Workbench, judge: LLMJudgeGate | None = None, languages: Sequence[str] = ("zh", "en"),
                      k: int | None = None, key: str = "dense") -> dict[str, Any]:
    """The LLM sufficiency judge as a gate on every question's Top-``k``, against the labels.

    A judgement whose call failed or has no record is counted (``failed`` by reason) and left out:
    the gate itself fails closed in use, but here a missing call is not a decision of the model.
    """
    k = wb.config.top_k(k)
    judge = judge or LLMJudgeGate()
    out: dict[str, Any] = {"model": judge.generator.model, "gate": judge.name, "by_lang": {}}  # type: ignore[attr-defined]
    for lang in languages:
        cases, failed, rows = [], Counter(), []
        for q in wb.benchmark:
            ranking = wb.rank(q.text(lang), key)
            evidence = wb.evidence(ranking, k)
            decision = judge.decide(q.text(lang), evidence, ranking)
            label = label_insufficient(q, ranking.ids[:k])
            if decision.scores.get("judge_ok") != 1:
                failed[decision.reason] += 1
                continue
            cases.append(Case(q.id, q.answerable, label, not decision.sufficient))
            rows.append({"question": q.id, "answerable": q.answerable,
                         "label": "insufficient" if label else "sufficient",
                         "judge": "sufficient" if decision.sufficient else "insufficient",
                         "missing": list(decision.missing)})
        out["by_lang"][lang] = {"scores": score_cases(cases).to_json() if cases else None,
                                "judged": len(cases), "failed": dict(failed), "rows": rows}
    return out


def measure_narrowed_judge(wb: Workbench, languages: Sequence[str] = ("zh", "en"), k: int | None = None,
                           key: str = "dense") -> dict[str, Any]:
    """:func:`measure_llm_judge` with the narrowed pipeline's part-by-part judge (``judge_narrowed``)."""
    k = wb.config.top_k(k)
    from rag_lib.evidence.narrowing import narrowed_generator

    generator = narrowed_generator("judge_narrowed", wb.embedder())
    judged = measure_llm_judge(wb, LLMJudgeGate(generator), languages, k, key)  # type: ignore[arg-type]
    return {**judged, "model": generator.label}


_FIGURES = [f.name for f in fields(GateFigures)]  # a judge table row's figure columns, in stored order


def judge_table_rows(judge: LLMJudge, beside: dict[str, dict[str, GateFigures]]) -> list[JudgeTableRow]:
    """One row per language for the LLM judge (judged / failed, then its figures: ``None`` when it decided no
    question), followed by the rows of the gates it is compared with (``beside[lang]``: gate name → figures)."""
    rows = []
    for lang, block in judge.by_lang.items():
        figures = block.scores
        rows.append(JudgeTableRow(lang=lang, gate=f"llm_judge ({judge.model})", judged=block.judged,
                                  failed=sum(block.failed.values()),
                                  **{f: getattr(figures, f) if figures else None for f in _FIGURES}))
        for name, scores in beside.get(lang, {}).items():
            judged = scores.tp + scores.fp + scores.fn + scores.tn
            rows.append(JudgeTableRow(lang=lang, gate=name, judged=judged, failed=0,
                                      **{f: getattr(scores, f) for f in _FIGURES}))
    return rows
