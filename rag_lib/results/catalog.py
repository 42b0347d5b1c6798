"""Which result type each notebook stores: the registry ``make check``, the summary and the tests read through."""

from __future__ import annotations

from rag_lib.core.errors import WorkbookError
from rag_lib.results.ann import AnnResult
from rag_lib.results.bakeoff import BakeoffResult
from rag_lib.results.chunking import ChunkingResult
from rag_lib.results.corpus import CorpusResult
from rag_lib.results.corpus_size import CorpusSizeResult
from rag_lib.results.local_llm import LocalLLMResult
from rag_lib.results.mechanism import MechanismResult
from rag_lib.results.q5 import Q5Result
from rag_lib.results.q7_diagnosis import Q7DiagnosisResult
from rag_lib.results.q9a import Q9aResult
from rag_lib.results.recovery import RecoveryExperimentResult
from rag_lib.results.runs import MECHANISM_NOTEBOOK, planned_runs
from rag_lib.results.store import ExperimentResult
from rag_lib.results.summary import SummaryResult
from rag_lib.results.topk import TopkResult
from rag_lib.results.test_set import TestSetResult

# Notebook → the type of its stored result (09_explore stores none).
RESULT_TYPES: dict[str, type[ExperimentResult]] = {
    "00_corpus": CorpusResult, "01_embedding_bakeoff": BakeoffResult, "02_q5_success": Q5Result,
    "03_q9a_no_evidence": Q9aResult, "04_q8_topk": TopkResult, "05_q7_diagnosis": Q7DiagnosisResult,
    MECHANISM_NOTEBOOK: MechanismResult, "07_recovery_loop": RecoveryExperimentResult, "08_summary": SummaryResult,
    "10_local_llm": LocalLLMResult, "11_chunking": ChunkingResult, "12_corpus_size": CorpusSizeResult,
    "13_ann": AnnResult, "14_test_set": TestSetResult,
}


def result_type(run: str) -> type[ExperimentResult]:
    """The declared type of run ``run``'s results (the notebook ``config.yaml`` runs it with)."""
    notebooks = {r.name: r.notebook for r in planned_runs()}
    if notebooks.get(run) not in RESULT_TYPES:
        stores = sorted(name for name, notebook in notebooks.items() if notebook in RESULT_TYPES)
        raise WorkbookError(f"no declared run {run!r} stores results; the runs that do are {', '.join(stores)} "
                            "(reproduce.notebooks in rag_lib/config.yaml).")
    return RESULT_TYPES[notebooks[run]]
