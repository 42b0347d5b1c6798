"""Q9a's gates out of sample: each tuned gate re-fitted without the questions it decides (leave-one-out,
folds grouped by gold page, fitted without the near-miss unanswerables then tested on them), each rate with
its Wilson 95% interval, beside the in-sample figures; and every gate's decision on each near-miss question."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.benchmark import Benchmark
from rag_lib.evaluation import wilson
from rag_lib.evidence import (
    AspectGate,
    Gate,
    ScoredQuestion,
    cross_validate,
    fit,
)
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.gate_rows import GateParameters
from rag_lib.results.q9a import (
    Folds,
    GateValidation,
    NearMissFigure,
    NearMissRow,
    ParameterRanges,
    Rate,
    RefusalFigures,
    ValidationParameters,
    ValidationRow,
)
from rag_lib.results.typed_json import decode

VALIDATED_GATES = ("floor", "aspects", "floor_aspects")
VALIDATIONS = ("in_sample", "leave_one_out", "grouped_by_page", "near_miss_held_out")
FIGURES = ("refusal_correctness", "refusal_near_miss", "refusal_absent_topic", "false_refusal_rate")


def rate(k: int, n: int) -> Rate:
    """``k / n`` with its Wilson 95% interval (``None`` rate and interval when ``n`` is 0)."""
    interval = wilson(k, n)
    return Rate(k=k, n=n, rate=round(k / n, 4) if n else None,
                wilson95=(round(interval[0], 3), round(interval[1], 3)) if interval else None)


def _figure_groups(rows: Sequence[ScoredQuestion], near_miss: set[str]) -> dict[str, list[str]]:
    """The questions each of :data:`FIGURES` counts: all, near-miss and absent-topic unanswerable ones,
    and answerable ones with complete evidence (whose decline is a false refusal)."""
    unans = [r.question_id for r in rows if not r.answerable]
    return {"refusal_correctness": unans,
            "refusal_near_miss": [q for q in unans if q in near_miss],
            "refusal_absent_topic": [q for q in unans if q not in near_miss],
            "false_refusal_rate": [r.question_id for r in rows if r.answerable and not r.label_insufficient]}


def refusal_figures(rows: Sequence[ScoredQuestion], declined: dict[str, bool], near_miss: set[str]) -> RefusalFigures:
    """Refusal on all / near-miss / absent-topic unanswerable questions and false refusals, as :func:`rate`."""
    groups = _figure_groups(rows, near_miss)
    return RefusalFigures(**{name: rate(sum(declined[q] for q in ids), len(ids)) for name, ids in groups.items()})


def gate_validation(rows: Sequence[ScoredQuestion], bench: Benchmark) -> dict[str, GateValidation]:
    """In-sample and out-of-sample figures of every tuned gate, side by side.

    ``in_sample``: fitted on every question, measured on the same ones. ``leave_one_out``: each
    question decided with parameters fitted on all the others. ``grouped_by_page``: folds are the
    answerable questions sharing a first gold page (unanswerable ones are folds of their own), so a
    page's questions never tune their own gate. ``near_miss_held_out``: fitted without the near-miss
    unanswerable questions, then measured on them only (questions the fit never saw).
    """
    near = {q.id for q in bench if q.near_miss}
    near_ids = _figure_groups(rows, near)["refusal_near_miss"]
    pages = {q.id: q.pages[0] for q in bench if q.answerable}
    out: dict[str, GateValidation] = {}
    for gate in VALIDATED_GATES:
        fitted = fit(rows, gate)
        loo = cross_validate(rows, gate)
        grouped = cross_validate(rows, gate, pages)
        without = fit([r for r in rows if r.question_id not in near], gate)
        decide = lambda params: {r.question_id: r.declined_with(params) for r in rows}  # noqa: E731
        held_out = decide(without)
        out[gate] = GateValidation(
            parameters=ValidationParameters(
                in_sample=GateParameters(**fitted), leave_one_out=decode(ParameterRanges, loo["parameters"]),
                grouped_by_page=decode(ParameterRanges, grouped["parameters"]),
                near_miss_held_out=GateParameters(**without)),
            folds=Folds(leave_one_out=loo["folds"], grouped_by_page=grouped["folds"]),
            in_sample=refusal_figures(rows, decide(fitted), near),
            leave_one_out=refusal_figures(rows, loo["declined"], near),
            grouped_by_page=refusal_figures(rows, grouped["declined"], near),
            near_miss_held_out=NearMissFigure(rate(sum(held_out[q] for q in near_ids), len(near_ids))),
        )
    return out


def _validated(block: GateValidation, validation: str, figure: str) -> Rate | None:
    """One figure under one validation; ``near_miss_held_out`` measures ``refusal_near_miss`` only."""
    if validation == "near_miss_held_out":
        return block.near_miss_held_out.refusal_near_miss if figure == "refusal_near_miss" else None
    figures: RefusalFigures = getattr(block, validation)
    return getattr(figures, figure)


def _cell(figure: Rate | None) -> str | None:
    """A rate as the validation table shows it, ``k/n = rate [lo, hi]``; ``None`` (a dash) when there is none."""
    if figure is None or figure.rate is None or figure.wilson95 is None:
        return None
    lo, hi = figure.wilson95
    return f"{figure.k}/{figure.n} = {figure.rate:.3f} [{lo:.2f}, {hi:.2f}]"


def validation_rows(validation: dict[str, GateValidation]) -> list[ValidationRow]:
    """One row per gate and figure; one column per validation (k/n = rate [Wilson 95%])."""
    return [ValidationRow(gate=gate, figure=figure, **{v: _cell(_validated(block, v, figure)) for v in VALIDATIONS})
            for gate, block in validation.items() for figure in FIGURES]


def near_miss_rows(wb: Workbench, gates: dict[str, Gate], lang: str, key: str = "dense",
                   k: int | None = None) -> list[NearMissRow]:
    """Every near-miss question: its best score, aspect coverage and each in-sample gate's decision."""
    k = wb.config.top_k(k)
    aspects = AspectGate()
    out = []
    for q in wb.benchmark.questions(near_miss=True):
        ranking = wb.rank(q.text(lang), key)
        evidence = wb.evidence(ranking, k)
        matched, unmatched, _ = aspects.check(q.text(lang), evidence)
        decided = {name: "declined" if gate.decide(q.text(lang), evidence, ranking).insufficient else "answered"
                   for name, gate in gates.items()}
        out.append(NearMissRow(
            question=q.id, best_score=round(float(ranking.scores[0]), 4),
            aspect_coverage=round(len(matched) / (len(matched) + len(unmatched)), 4) if matched or unmatched
            else None, top1_page=wb.by_id[ranking.ids[0]].page,
            checklist=decided["checklist"], floor=decided["floor"], aspects=decided["aspects"],
            floor_aspects=decided.get("floor_aspects")))  # chosen_gates leaves it out when it cannot be fitted
    return out
