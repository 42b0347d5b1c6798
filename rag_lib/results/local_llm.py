"""``10_local_llm``'s stored result, its answer rows, and the suffixes that name how a gated answer run decided.

The judge, gate and selective-answering parts are in :mod:`rag_lib.results.local_llm_judge`; the model
choice, narrowing budget, injection set, hand checks and paired comparisons in
:mod:`rag_lib.results.local_llm_choice`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_lib.evaluation.claim_checks import ClaimCheck
from rag_lib.results.answer_rows import AnsweredQuestion
from rag_lib.results.gate_rows import GateFigures, JudgeTableRow, LLMJudge
from rag_lib.results.local_llm_choice import (
    ClaimMeasureRow,
    FailureRow,
    HandCheckAgreement,
    Injection,
    LocalModel,
    ModelChoice,
    ModelPick,
    Narrowing,
    NarrowingChoice,
    PairedFamily,
    PairedRow,
    PairedTableRow,
    QuestionFailure,
)
from rag_lib.results.local_llm_judge import Selective
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult
from rag_lib.results.typed_json import Scalar, json_key

# How a gated answer run of 10 decided its questions (the suffix of its gate name): with parameters fitted on
# the same questions, each question by parameters fitted without it, or that followed by the narrowed judge.
IN_SAMPLE = " (in-sample)"
HELD_OUT = " (leave-one-out)"
THEN_JUDGE = " then judge"
# The answer table's columns (the rows hold more figures than it shows).
ANSWER_COLUMNS = ["generator", "lang", "gate", "n", "missing", "answer_rate", "answer_correctness",
                  "answer_correctness_ci", "correct_gold_in_top_k", "correct_gold_in_top_k_ci", "shown_wrong",
                  "shown_wrong_ci", "refusal_correctness", "refusal_correctness_ci", "citation_validity",
                  "citations_valid", "citations_total", "errors"]

# A generator's or embedder's own description of itself (backend, model, settings; a nested block such as
# the model file's ``spec`` or the narrowing ``selector``): free-form provenance, its keys are the backend's.
ModelDescription = dict[str, Scalar | dict[str, Scalar]]


@dataclass(frozen=True)
class RankingProvenance:
    """What produced the rankings (``Workbench.provenance``): the retriever and the embedder's description."""

    retriever: str
    embedder: dict[str, Scalar]


@dataclass(frozen=True)
class AnswerFigures:
    """The rates of one answer run over its recorded questions (``llm_eval.answer_figures``)."""

    lang: str
    gate: str
    model: str
    backend: str
    n: int
    missing: int
    answerable: int
    answered: int
    answer_rate: float | None
    correct: int
    answer_correctness: float | None
    answer_correctness_ci: str
    correct_when_answered: float | None
    gold_in_top_k: int
    correct_gold_in_top_k: float | None
    correct_gold_in_top_k_ci: str
    shown_wrong: float | None
    shown_wrong_ci: str
    unanswerable: int
    refusal_correctness: float | None
    refusal_correctness_ci: str
    # Declines of answerable questions whose gold is all in the Top-k: what every refusal rate is shown beside.
    complete_evidence: int
    false_refusal: float | None
    false_refusal_ci: str
    citations_valid: int
    citations_total: int
    citation_validity: float | None
    errors: dict[str, int]  # error kind → answers
    shown: int
    in_language: int
    in_language_rate: float | None
    in_language_ci: str


@dataclass(frozen=True)
class AnswerRow(AnswerFigures):
    """One row of the answer table: a run's figures under the answerer's label."""

    generator: str


@dataclass(frozen=True)
class AnswerRun:
    """One language and gate of one answerer: its figures and its per-question rows."""

    figures: AnswerFigures
    rows: list[AnsweredQuestion]


@dataclass(frozen=True)
class Answerer:
    """One answerer (the chunk pipeline, the narrowed pipeline, the extractive baseline) and its runs."""

    label: str
    model: str
    backend: str
    describe: ModelDescription | None  # None for a generator that does not describe itself
    runs: dict[str, AnswerRun]  # "lang:gate" → run


@dataclass(frozen=True)
class LanguageRow:
    """Shown answers in the question's language, per answerer and language (ungated)."""

    generator: str
    lang: str
    shown: int
    in_language: int
    in_language_rate: float | None
    in_language_ci: str


@dataclass(frozen=True)
class BeforeAfterRow:
    """An answerer's rates in an archive beside today's ("before → after", or the value when unchanged)."""

    archive: str
    generator: str
    lang: str
    gate: str
    answer_rate: str
    answer_correctness: str
    correct_gold_in_top_k: str
    shown_wrong: str
    refusal_correctness: str
    citation_validity: str


@dataclass(frozen=True)
class TargetRow:
    """One target of the answers issue against the narrowed pipeline's figure."""

    lang: str
    gate: str
    metric: str
    target: str
    measured: float | None
    ci: str
    recorded: int
    verdict: str
    before: str = field(metadata=json_key("before each change"))


@dataclass(frozen=True)
class FunnelRow:
    """Questions whose every key fact survives a stage (``llm_eval.funnel``), of those reaching the stage before."""

    lang: str
    stage: str = field(metadata=json_key("every key fact"))
    questions: int
    of: int
    share: float | None
    ci: str


@dataclass(frozen=True)
class PartlyCheckable:
    """A question with checkable key facts beside ones that cannot be checked as strings."""

    question: str
    checkable: int = field(metadata=json_key("checkable facts"))
    uncheckable: int = field(metadata=json_key("uncheckable facts"))
    why: str


@dataclass(frozen=True)
class LocalLLMResult(ExperimentResult):
    """``10_local_llm``: the local LLM's answers and judgements beside the gate, the model choice.

    Returned by :func:`rag_lib.experiments.llm_eval.run_local_llm`.
    """

    languages: list[str]
    k: int
    retriever: str
    provenance: RankingProvenance
    tasks: dict[str, str]  # task → generator name (generation.llm_tasks)
    models: dict[str, LocalModel]  # name → the local model file it is
    model_choice: ModelChoice | None  # None when run without the model choice
    pick_rule: str  # how the model-choice rows pick a model per task
    model_picks: list[ModelPick]  # the rule's pick per task beside the configured model
    answers: dict[str, Answerer]  # "llm", "narrowed", "extractive" → answerer
    answer_rows: list[AnswerRow]  # shown under ANSWER_COLUMNS
    judge: LLMJudge
    gate_beside_judge: dict[str, dict[str, GateFigures]]  # language → gate name → scores
    judge_rows: list[JudgeTableRow]
    judge_narrowed: LLMJudge  # the narrowed pipeline's part-by-part judge
    narrowing: Narrowing  # generation.narrowing: what the narrowed pipeline sends
    narrowing_choice: NarrowingChoice  # how that budget was chosen: one half of the questions, reported on the other
    injection: Injection  # the injection set (rag_lib.question_sweeps.injection)
    injection_summary: str
    before_after: list[BeforeAfterRow]  # answer rates per archive (answers-v1 … -v3) → now
    targets: list[TargetRow]  # the narrowed pipeline against the answers issue's targets
    hand_checks: list[HandCheckAgreement]  # the key-fact measure's agreement with each hand-checked sample
    selective: dict[str, Selective]  # per language: selective answering (cross-validated logistic), its curve
    funnel: list[FunnelRow]  # per language: key facts in the Top-k → in the units sent → in the shown answer
    failures: list[FailureRow]  # per answerer, language and gate: the stage that lost each answer (llm_eval.diagnosis)
    claim_measures: list[ClaimMeasureRow]  # per answerer, language and gate: RAGChecker's claim-level measures
    question_failures: list[QuestionFailure]  # per answerer, language, gate, question: its stage (the explorer)
    claim_check: ClaimCheck  # two blind readers, claim by claim, on drawn shown answers (data/claim_checks)
    claims_check: ClaimCheck  # the same for the claims pipeline (data/claim_checks/claims_v4)
    paired: list[PairedRow]  # answer against answer per question (llm_eval.paired), Holm-adjusted
    paired_rows: list[PairedTableRow]  # the same comparisons as the paired table shows them
    paired_family: PairedFamily  # the Holm family's size, fixed cells and how it was adjusted
    answer_languages: list[LanguageRow]  # per answerer and language (ungated): shown answers in its language
    partly_checkable: list[PartlyCheckable]  # questions whose key facts check only part of what they ask
    test_set_rows: list[AnswerRow]  # the narrowed pipeline on the sealed test set (notebook 14's rows), out of sample

    def narrowed_rows(self, suffix: str) -> list[AnswerRow]:
        """The narrowed answerer's figures under the gate runs whose name ends with ``suffix``
        (``HELD_OUT``, ``THEN_JUDGE``), one row per language."""
        label = self.answers["narrowed"].label
        return [r for r in self.answer_rows if r.generator == label and r.gate.endswith(suffix)]


EXPERIMENT = Experiment(
    "10_local_llm", LocalLLMResult,
    reads=("14_test_set",),
)
