"""Hand-made mechanism results for tests: variants judged as a run judges them, a provenance at a given k."""

from __future__ import annotations

from typing import Any

from typed_results import partial_result

from rag_lib.evaluation.claims import ALPHA
from rag_lib.experiments.mechanisms.report import MeasuredVariant, judge_variants
from rag_lib.results.comparisons import FamilySummary
from rag_lib.results.mechanism import BaselineProvenance, MechanismProvenance, VariantResult


def provenance(k: int = 5, **given: Any) -> MechanismProvenance:
    """A run's provenance at top-``k`` with ``given`` fields (blanks elsewhere; a run's bootstrap and α unless
    given)."""
    return partial_result(MechanismProvenance, **{
        "baseline": BaselineProvenance("dense", {}, k), "n_boot": 10000, "seed": 0,
        "claims": FamilySummary("this run", 0, 0, ALPHA, 0, "Holm"), **given})


def variants(*given: dict[str, Any], n_boot: int = 1000, seed: int = 0) -> list[VariantResult]:
    """A :class:`VariantResult` per ``given`` (its fields, ``evidence_k`` 5 unless given, blanks elsewhere) whose
    ``benchmark`` (language → metric → :func:`~rag_lib.evaluation.stats.compare`) is judged in one Holm family,
    as ``run_mechanism`` judges a run's variants."""
    measured = []
    for fields in given:
        rest = {key: value for key, value in fields.items() if key != "benchmark"}
        variant = partial_result(VariantResult, **{"evidence_k": 5, **rest})
        measured.append(MeasuredVariant(variant, fields.get("benchmark", {})))
    return judge_variants(measured, n_boot, seed)[0]
