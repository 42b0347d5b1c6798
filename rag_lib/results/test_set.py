"""What notebook 14 (the sealed test set) returns: :class:`TestSetResult`."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_lib.evaluation.claim_checks import ClaimCheck
from rag_lib.results.local_llm import AnsweredQuestion, AnswerRow, ModelDescription
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult
from rag_lib.results.typed_json import optional_key

# The gate's parameters are fitted on the whole development set: out of sample on the test set.
FITTED_ON_DEV = " (fitted on the development set)"


@dataclass(frozen=True)
class SealedFile:
    """One sealed file of ``data/test_set`` and the sha256 it was checked against before the run."""

    file: str
    sha256: str


@dataclass(frozen=True)
class TestSetRun:
    """One language, gate and answerer on the test set: per-question rows (as 10 stores them)."""

    lang: str
    gate: str
    rows: list[AnsweredQuestion]
    generator: str  # the answerer's label (AnswerRow.generator)


@dataclass(frozen=True)
class TestSetResult(ExperimentResult):
    """``14_test_set``: the narrowed and claims pipelines of notebook 10 on the sealed test set (10 shows them
    beside their development-set figures). Returned by :func:`rag_lib.experiments.llm_eval.test_set.run_test_set`."""

    languages: list[str]
    k: int
    retriever: str
    batch: str  # the snapshot batch retrieved from (the test set's own)
    sealed: list[SealedFile]
    n_questions: int
    n_answerable: int
    answerers: dict[str, str]  # "narrowed" / "claims" → the answerer's label (AnswerRow.generator)
    pipelines: dict[str, ModelDescription]  # what each answerer is: model, backend, prompt, narrowing
    gates: dict[str, dict[str, str | float | None]]  # language → the gate and its parameters (fitted on the dev set)
    rows: list[AnswerRow]  # test set: one row per language and gate
    runs: list[TestSetRun]
    embedder: ModelDescription
    common_key_facts: list[str]  # checkable key facts stated by more than MAX_CHUNK_SHARE of the batch (kept: sealed)
    # Two blind readers on every answer the claims pipeline showed ungated (data/claim_checks/test_set_claims);
    # absent until both readers' files are committed.
    claims_check: ClaimCheck | None = field(default=None, metadata=optional_key())


EXPERIMENT = Experiment(
    "14_test_set", TestSetResult,
)
