"""``03_q9a_no_evidence``'s stored result, and the gate ``ask`` reads from it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult, MissingResult


@dataclass(frozen=True)
class Q9aResult(ExperimentResult):
    """``03_q9a_no_evidence``: the gates calibrated and validated, Q9a's decisions, generation behind the gate.

    Returned by :func:`rag_lib.experiments.q9a.run_q9a`.
    """

    casebook: dict[str, Any]
    question: dict[str, Any]
    languages: list[str]
    k: int
    retriever: str
    provenance: dict[str, Any]
    corpus_check: dict[str, Any]
    top: dict[str, Any]
    scores: dict[str, Any]
    overlap: dict[str, Any]
    best_scores: dict[str, Any]  # language -> {"answerable": [...], "unanswerable": [...]}
    calibration: dict[str, Any]
    floor_sweep: dict[str, Any]
    gates: dict[str, Any]
    gate_tables: dict[str, str]  # language → Markdown
    validation: dict[str, Any]
    validation_interval: str
    validation_tables: dict[str, str]  # language → Markdown
    near_miss: dict[str, Any]
    gated_decline: dict[str, Any]
    bypass: dict[str, Any]
    llm_judge: dict[str, Any]
    llm_judge_narrowed: dict[str, Any]  # the narrowed pipeline's part-by-part judge
    llm_judge_rows: list[dict[str, Any]]
    llm_judge_table: str
    generation: dict[str, Any]

    def calibrated_gate(self, lang: str) -> dict[str, float]:
        """The floor and aspect coverage chosen for ``lang`` (what ``ask`` applies)."""
        chosen = (self.calibration.get(lang) or {}).get("floor_aspects")
        if not chosen:
            raise MissingResult(f"03_q9a_no_evidence has no floor+aspects calibration for {lang!r} (it has "
                                f"{sorted(self.calibration)}); re-run it with that language.")
        return {"floor": float(chosen["floor"]), "min_coverage": float(chosen["min_coverage"])}

    def gate_quality(self, lang: str) -> dict[str, dict[str, tuple[int, int]]]:
        """floor+aspects on the benchmark in ``lang``, in-sample and leave-one-out: (declined, of) for the
        unanswerable questions and for the answerable ones whose Top-k holds every gold piece."""
        fitted = self.gates[lang]["floor_aspects"]
        held = self.validation[lang]["floor_aspects"]["leave_one_out"]
        return {"in-sample": {"unanswerable declined": (fitted["unanswerable_declined"], fitted["unanswerable"]),
                              "false refusals": (fitted["complete_declined"], fitted["complete"])},
                "leave-one-out": {"unanswerable declined": (held["refusal_correctness"]["k"],
                                                            held["refusal_correctness"]["n"]),
                                  "false refusals": (held["false_refusal_rate"]["k"], held["false_refusal_rate"]["n"])}}

    def chosen_floors(self, languages: Sequence[str]) -> dict[str, float]:
        """The floor gate's chosen threshold per language (the dotted line of 03's figures)."""
        return {lang: self.calibration[lang]["floor"]["floor"] for lang in languages}

    def operating_points(self, languages: Sequence[str]) -> list[dict[str, Any]]:
        """Each label-free gate with one setting, in-sample, as a point per language: aspects, floor+aspects
        and every LLM judge (``lang``, ``gate``, the rates), beside the floor's sweep in 03's trade-off figure."""
        return ([{"lang": lang, "gate": gate, **self.gates[lang][gate]}
                 for lang in languages for gate in ("aspects", "floor_aspects")]
                + [row for row in self.llm_judge_rows
                   if row["lang"] in languages and row["gate"].startswith("llm_judge")])
