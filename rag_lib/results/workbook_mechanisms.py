"""``W4_mechanisms``'s stored result: each retrieval mechanism's variants on every answerable question of a
workbook, measured per question and stored long beside the dense baseline's measurements.

Measurements are ``(variant, language, question, measure, value)`` rows (``configuration`` holds the variant's name,
:data:`BASELINE` the baseline's); each paired comparison with the baseline, the run's Holm family, the adjusted
intervals and the Findings are derived when the report is rendered (:mod:`rag_lib.presentation.workbook_mechanisms`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult
from rag_lib.results.workbook import Measurement

BASELINE = "baseline"  # the measurements of the dense baseline the variants change


@dataclass(frozen=True)
class VariantRun:
    """One variant as it ran: what it changes, how many chunks it sends to generation, the questions it ran on."""

    mechanism: str
    name: str
    description: str
    evidence_k: int
    languages: list[str]
    questions: list[str] | None  # a stated subset of the answerable questions (None: every one)
    model: str  # the embedder of a variant that ranks with another one ("" otherwise)
    notes: list[str]


@dataclass(frozen=True)
class NotRun:
    """A mechanism, or a variant, this run did not measure, and why."""

    name: str
    reason: str


@dataclass(frozen=True)
class WorkbookMechanismsResult(ExperimentResult):
    workbook: str
    title: str
    k: int
    languages: list[str]
    baseline: str  # the dense configuration the variants change
    baseline_model: str
    questions: int  # answerable questions
    variants: list[VariantRun]
    not_run: list[NotRun]
    measurements: list[Measurement]
    n_boot: int  # the bootstrap's resamples for the coverage and MRR comparisons
    seed: int


EXPERIMENT = Experiment("W4_mechanisms", WorkbookMechanismsResult, per_workbook=True)
