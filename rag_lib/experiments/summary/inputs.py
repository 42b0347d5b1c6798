"""08's inputs: the results the summary reads (:class:`SummaryInputs`, each read once per run), the baseline's
embedder, and what the mechanism runs compared at (their k, the variants that send more context, the evidence
sizes beyond the Top-10)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from rag_lib.core.config import RunConfig, results_dir
from rag_lib.core.errors import WorkbookError
from rag_lib.presentation.side_by_side import BOLD_WITHIN
from rag_lib.results.bakeoff import EXPERIMENT as BAKEOFF
from rag_lib.results.bakeoff import BakeoffResult
from rag_lib.results.baseline import baseline_label
from rag_lib.results.chunking import EXPERIMENT as CHUNKING
from rag_lib.results.chunking import ChunkingResult
from rag_lib.results.local_llm import EXPERIMENT as LOCAL_LLM
from rag_lib.results.local_llm import LocalLLMResult
from rag_lib.results.mechanism import MechanismResult, mechanism_results
from rag_lib.results.provenance import model_name
from rag_lib.results.q7_diagnosis import EXPERIMENT as DIAGNOSIS
from rag_lib.results.q7_diagnosis import Q7DiagnosisResult
from rag_lib.results.recovery import EXPERIMENT as RECOVERY
from rag_lib.results.recovery import RecoveryExperimentResult
from rag_lib.results.store import MissingResult


@dataclass(frozen=True)
class SummaryInputs:
    """The results the summary reads, each read once: the declared mechanism runs (06) and 01, 07, 10, 11.

    Parameters
    ----------
    mechanisms : list of MechanismResult
        The declared mechanism runs that have results, in run-name order.
    missing : list of str
        The runs the summary reads that have no results (shown in the notebook, never guessed).
    """

    mechanisms: list[MechanismResult]
    missing: list[str]
    bakeoff: BakeoffResult | None
    recovery: RecoveryExperimentResult | None
    chunking: ChunkingResult | None
    local_llm: LocalLLMResult | None
    diagnosis: Q7DiagnosisResult | None = None  # 05: the baseline's margins to the Top-10 cut

    @classmethod
    def read(cls, root: Path | None = None) -> Self:
        """Every input found under ``root`` (``RAG_RESULTS_DIR``)."""
        root = root or results_dir()
        found, missing_mechanisms = mechanism_results(root)
        bakeoff = BakeoffResult.find(BAKEOFF.name, root)
        recovery = RecoveryExperimentResult.find(RECOVERY.name, root)
        local_llm = LocalLLMResult.find(LOCAL_LLM.name, root)
        chunking = ChunkingResult.find(CHUNKING.name, root)
        diagnosis = Q7DiagnosisResult.find(DIAGNOSIS.name, root)
        ran = {BAKEOFF.name: bakeoff is not None, DIAGNOSIS.name: diagnosis is not None,
               RECOVERY.name: recovery is not None, LOCAL_LLM.name: local_llm is not None,
               CHUNKING.name: chunking is not None}
        return cls(mechanisms=list(found.values()),
                   missing=[name for name, done in ran.items() if not done] + missing_mechanisms,
                   bakeoff=bakeoff, recovery=recovery, chunking=chunking, local_llm=local_llm, diagnosis=diagnosis)


def baseline_embedder(bakeoff: BakeoffResult | None) -> str | None:
    """The baseline's embedder as prose names it, from 01's stored provenance of the baseline configuration
    (``None`` when 01 has no results)."""
    if bakeoff is None:
        return None
    embedder = bakeoff.provenance[baseline_label()].embedder
    if embedder is None:
        raise MissingResult(f"{BAKEOFF.name} stores no embedder for {baseline_label()}; re-run it.")
    return model_name(embedder)


def mechanisms_k(mechanisms: Sequence[MechanismResult]) -> int:
    """The top-k the mechanism runs that ran compared at (each stores it, ``provenance.baseline.k``);
    the workbook's ``retrieval.top_k`` when none ran (nothing is then compared).

    Raises
    ------
    WorkbookError
        When runs compared at different k: their metrics (hit@k) would not share one column.
    """
    ks = sorted({r.k for r in mechanisms if r.ran})
    if len(ks) > 1:
        raise WorkbookError(f"the mechanism runs compared at different k ({ks}); re-run them with one "
                            "retrieval.top_k.")
    return ks[0] if ks else RunConfig.from_settings().k


def more_context_variants(mechanisms: Sequence[MechanismResult]) -> set[str]:
    """Row labels of the variants that send more chunks than their run's k (the top-k mechanism)."""
    return {f"{r.mechanism}: {v.name}" for r in mechanisms for v in r.variants
            if v.evidence_k > r.k}


def evidence_sizes(mechanisms: Sequence[MechanismResult]) -> dict[str, int]:
    """Row label → evidence size, for the mechanism variants that send more than the Top-10."""
    return {f"{r.mechanism}: {v.name}": v.evidence_k for r in mechanisms
            for v in r.variants if v.evidence_k > BOLD_WITHIN}
