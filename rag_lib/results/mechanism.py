"""The stored shape of a mechanism run (notebook 06): every run of every mechanism has this one shape.

:class:`MechanismResult` is what ``run_mechanism`` returns and what the summary reads back for each
declared run (:func:`mechanism_results`); :class:`VariantResult` reads one variant's entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_lib.evaluation.metrics import hit_name
from rag_lib.results.runs import MECHANISM_NOTEBOOK, runs_of
from rag_lib.results.store import RESULTS_FILE, ExperimentResult, MissingResult


def mechanism_metrics(k: int) -> tuple[str, ...]:
    """What a mechanism run at top-``k`` compares per variant and language (coverage@evidence: the share of
    gold pieces in the evidence the variant sends, its own k): ``("hit@5", "coverage@10", "mrr",
    "coverage@evidence")`` at k = 5."""
    return (hit_name(k), "coverage@10", "mrr", "coverage@evidence")


@dataclass(frozen=True)
class VariantResult:
    """One variant of a mechanism run, as stored (see ``run_mechanism``)."""

    name: str
    evidence_k: int
    q7: dict[str, dict[str, dict[str, int | None]]]  # phrasing -> language -> piece -> first rank
    q7_failures: dict[str, dict[str, str]]  # phrasing -> language -> why it failed
    q7_ties: dict[str, dict[str, list[str]]]  # phrasing -> language -> pieces tied at the Top-10 cut
    benchmark: dict[str, dict[str, dict[str, Any]]]  # language -> metric -> comparison
    compared_on: dict[str, int]  # language -> questions, where fewer than all were ranked
    failures: dict[str, dict[str, Any]]  # language -> failed LLM calls
    provenance: dict[str, Any]

    @classmethod
    def from_json(cls, row: dict[str, Any], source: str = "the mechanism results") -> VariantResult:
        """One stored variant entry; ``source`` names the file it came from, for the error on a missing field.

        Raises
        ------
        MissingResult
            When the entry has no ``evidence_k``: a run always stores it, and guessing the run's k would
            misreport a variant that sent a different number of chunks.
        """
        if row.get("evidence_k") is None:
            raise MissingResult(f"variant {row.get('name')!r} in {source} has no 'evidence_k' (the number of chunks "
                                "it sends to generation); re-run that mechanism.")
        return cls(name=row["name"], evidence_k=int(row["evidence_k"]), q7=row.get("q7", {}),
                   q7_failures=row.get("q7_failures", {}), q7_ties=row.get("q7_ties", {}),
                   benchmark=row.get("benchmark", {}),
                   compared_on=row.get("compared_on", {}), failures=row.get("failures", {}),
                   provenance=row.get("provenance", {}))

    def label(self, mechanism: str) -> str:
        """``mechanism: variant``, with the model that produced it for LLM variants."""
        reranker = self.provenance.get("reranker", {})
        model = self.provenance.get("llm", {}).get("model") or (
            reranker.get("revision") if reranker.get("backend") == "llm_yes_no" else None)
        return f"{mechanism}: {self.name}" + (f" ({model})" if model else "")


@dataclass(frozen=True)
class MechanismResult(ExperimentResult):
    """``06_q7_mechanism-<mechanism>``: one mechanism's variants against the baseline (one shape for every run).

    Returned by :func:`rag_lib.experiments.mechanisms.run.run_mechanism`.
    """

    mechanism: str
    status: str  # "ran" or "unavailable"
    reason: str
    variants: list[dict[str, Any]]  # one entry per variant, read by VariantResult
    baseline: dict[str, Any]
    unavailable: dict[str, Any]
    provenance: dict[str, Any]
    q7_rows: list[dict[str, Any]]
    q7_table: str
    benchmark_rows: list[dict[str, Any]]
    benchmark_table: str
    variants_text: str

    @property
    def ran(self) -> bool:
        return self.status == "ran"

    @property
    def variant_results(self) -> list[VariantResult]:
        source = f"{MECHANISM_NOTEBOOK}-{self.mechanism}/{RESULTS_FILE}"
        return [VariantResult.from_json(v, source) for v in self.variants]

    @property
    def k(self) -> int:
        """The top-k the run compared at (its baseline's ``k``, stored in ``provenance``).

        Raises
        ------
        MissingResult
            When the run stored no ``provenance.baseline.k``.
        """
        k = self.provenance.get("baseline", {}).get("k")
        if k is None:
            raise MissingResult(f"{MECHANISM_NOTEBOOK}-{self.mechanism}/{RESULTS_FILE} has no 'provenance.baseline.k' "
                                "(the top-k it compared at); re-run that mechanism.")
        return int(k)

    @property
    def n_answerable(self) -> int | None:
        return self.provenance.get("n_answerable")


def mechanism_results(root: Path | None = None) -> tuple[dict[str, MechanismResult], list[str]]:
    """The declared mechanism runs that have results (run name → result, in name order), and the names of
    those that have none."""
    found: dict[str, MechanismResult] = {}
    missing: list[str] = []
    for run in runs_of(MECHANISM_NOTEBOOK):
        stored = MechanismResult.find(run.name, root)
        if stored is None:
            missing.append(run.name)
        else:
            found[run.name] = stored
    return found, missing
