"""``W5_answers``'s stored result: every question of a workbook answered behind the evidence gate, one row per
question and language (the gate's decision, the answer, its citations, whether it states every key fact).

The funnel (declined, answered, correct), the refusal and false-refusal rates, citation validity, their intervals
and the Findings are derived when the report is rendered (:mod:`rag_lib.presentation.workbook_answers`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.results.answer_rows import AnsweredQuestion, GeneratorInfo
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class WorkbookAnswersResult(ExperimentResult):
    workbook: str
    title: str
    k: int
    retriever: str  # the dense configuration whose Top-k is the evidence
    gate: str  # the gate and its settings, as W3 stored them
    gate_fit: str  # which of W3's fits: the casebook's where it applies, else refitted here in sample
    generator: GeneratorInfo
    generator_calls: dict[str, int]  # language → calls the generator got (the gate declines without one)
    checkable: list[str]  # answerable questions with a checkable key fact (the denominator of "correct")
    answers: dict[str, list[AnsweredQuestion]]  # language → one row per question


EXPERIMENT = Experiment("W5_answers", WorkbookAnswersResult, reads=("W3_gates",), per_workbook=True)
