"""``W3_gates``'s stored result: what the label-free evidence gates see of every question, and their settings.

Stored long: one row per question and language (its label, best score and aspect coverage of its Top-k), the
settings each gate was given (the casebook's, fitted by notebook 03 and applied by ``ask``; and refitted on this
workbook's questions), and each gate's decision on each question under each fit (leave-one-out included). Every
rate, interval and sentence is derived when the report is rendered (:mod:`rag_lib.presentation.workbook_gates`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult

CASEBOOK = "casebook"  # the fit of notebook 03, on the labelled benchmark
IN_SAMPLE = "in_sample"  # refitted on this workbook's questions, measured on the same ones
LEAVE_ONE_OUT = "leave_one_out"  # each question decided by a fit without it
FITS = (CASEBOOK, IN_SAMPLE, LEAVE_ONE_OUT)


@dataclass(frozen=True)
class GateInput:
    """One question in one language as the label-free gates see it, with its label."""

    language: str
    question: str
    answerable: bool
    near_miss: bool  # unanswerable, its topic in the corpus but not the asked fact
    complete: bool  # answerable, and every gold piece in the Top-k (the label says: enough evidence)
    best_score: float
    aspect_coverage: float | None  # None: no checkable aspect in the question


@dataclass(frozen=True)
class GateSetting:
    """The parameters one gate was given in one language by one fit (``None``: that part of the gate is off)."""

    language: str
    gate: str  # floor, aspects, floor_aspects
    fit: str  # CASEBOOK or IN_SAMPLE
    floor: float | None
    min_coverage: float | None


@dataclass(frozen=True)
class Decision:
    """Whether one gate, given one fit's settings, declined one question in one language."""

    language: str
    gate: str
    fit: str  # one of FITS; under LEAVE_ONE_OUT each question's settings were fitted without it
    question: str
    declined: bool


@dataclass(frozen=True)
class WorkbookGatesResult(ExperimentResult):
    workbook: str
    title: str
    k: int
    configuration: str  # the dense configuration the gates' scores come from
    model: str  # its embedder: model (backend, version)
    questions_source: str
    casebook_fit: str  # where the casebook's settings come from
    casebook_refused: str | None  # why they do not apply here (another k or embedder); None: they do
    same_questions: bool  # this workbook asks the questions the casebook's settings were fitted on (in-sample)
    inputs: list[GateInput]
    settings: list[GateSetting]
    decisions: list[Decision]


EXPERIMENT = Experiment("W3_gates", WorkbookGatesResult, per_workbook=True)
