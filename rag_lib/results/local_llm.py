"""``10_local_llm``'s stored result, and the suffixes that name how a gated answer run decided."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult


# How a gated answer run of 10 decided its questions (the suffix of its gate name): with parameters fitted on
# the same questions, each question by parameters fitted without it, or that followed by the narrowed judge.
IN_SAMPLE = " (in-sample)"
HELD_OUT = " (leave-one-out)"
THEN_JUDGE = " then judge"


@dataclass(frozen=True)
class LocalLLMResult(ExperimentResult):
    """``10_local_llm``: the local LLM's answers and judgements beside the gate, the model choice.

    Returned by :func:`rag_lib.experiments.llm_eval.run_local_llm`.
    """

    languages: list[str]
    k: int
    retriever: str
    provenance: dict[str, Any]
    tasks: dict[str, Any]
    models: dict[str, Any]
    model_choice: dict[str, Any] | None  # None when run without the model choice
    pick_rule: str  # how the model-choice rows pick a model per task
    model_picks: list[dict[str, Any]]  # the rule's pick per task beside the configured model
    answers: dict[str, Any]
    answer_rows: list[dict[str, Any]]
    answer_table: str
    judge: dict[str, Any]
    gate_beside_judge: dict[str, Any]
    judge_rows: list[dict[str, Any]]
    judge_table: str
    judge_narrowed: dict[str, Any]  # the narrowed pipeline's part-by-part judge
    narrowing: dict[str, Any]  # generation.narrowing: what the narrowed pipeline sends
    narrowing_choice: dict[str, Any]  # how that budget was chosen: one half of the questions, reported on the other
    narrowing_choice_table: str
    injection: dict[str, Any]  # the injection set (rag_lib.question_sweeps.injection)
    injection_summary: str
    before_after: list[dict[str, Any]]  # answer rates per archive (answers-v1 … -v3) → now
    before_after_table: str
    targets: list[dict[str, Any]]  # the narrowed pipeline against the answers issue's targets
    target_table: str
    hand_checks: list[dict[str, Any]]  # the key-fact measure's agreement with each hand-checked sample
    selective: dict[str, Any]  # per language: selective answering (cross-validated logistic), its curve
    funnel: list[dict[str, Any]]  # per language: key facts in the Top-k → in the units sent → in the shown answer
    funnel_table: str
    paired: list[dict[str, Any]]  # answer against answer per question (llm_eval.paired), Holm-adjusted
    paired_table: str
    paired_family: dict[str, Any]  # the Holm family's size, fixed cells and how it was adjusted
    answer_languages: list[dict[str, Any]]  # per answerer and language (ungated): shown answers in its language
    partly_checkable: list[dict[str, Any]]  # questions whose key facts check only part of what they ask

    def narrowed_rows(self, suffix: str) -> list[dict[str, Any]]:
        """The narrowed answerer's figures under the gate runs whose name ends with ``suffix``
        (``HELD_OUT``, ``THEN_JUDGE``), one row per language."""
        label = self.answers["narrowed"]["label"]
        return [r for r in self.answer_rows if r["generator"] == label and r["gate"].endswith(suffix)]
