"""``10_local_llm``'s stored choices and checks: the local models, the model choice, the narrowing budget,
the injection set, the hand-checked samples and the paired answer comparisons."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_lib.evaluation.diagnosis import ClaimMeasure
from rag_lib.results.comparisons import FamilySummary, JudgedDifference
from rag_lib.results.typed_json import json_key


@dataclass(frozen=True)
class LocalModel:
    """A local GGUF model as a result records it (``LocalModelSpec.provenance``; no machine path)."""

    name: str
    description: str
    gguf_name: str
    file: str
    sha256: str | None
    licence: str
    packages: str


@dataclass(frozen=True)
class ChoiceRow:
    """One model on one task of the model-choice sample: calls, speed and the task's quality signal."""

    model: str
    task: str
    calls: int
    s_per_call: float | None
    tokens_per_s: float | None
    prompt_tokens: int
    completion_tokens: int
    missing: int
    failed: int
    quality: float | None


@dataclass(frozen=True)
class ChoiceDetail:
    """One call of the model-choice sample (answer or rewrite): its outcome and the start of its reply."""

    model: str
    task: str
    question: str
    lang: str
    status: str
    error_kind: str | None
    citations: str  # "valid/total"; empty for a rewrite
    reply: str


@dataclass(frozen=True)
class ModelChoice:
    """Every task with every candidate model on the fixed sample (``llm_eval.model_choice``)."""

    sample: list[str]
    languages: list[str]
    k: int
    seed: int
    quality_signal: dict[str, str]  # task → what its quality figure measures
    rows: list[ChoiceRow]
    details: list[ChoiceDetail]


@dataclass(frozen=True)
class ModelPick:
    """The pick rule's model for a task beside the model configured for the task it decides."""

    task: str
    picked_by_rule: str
    configures: str
    configured: str
    agrees: bool


@dataclass(frozen=True)
class Narrowing:
    """A narrowing setting: the token budget and unit cap of what the narrowed pipeline sends."""

    budget_tokens: int
    max_units: int


@dataclass(frozen=True)
class BudgetRow:
    """One candidate budget in one language: key facts kept on each half, mean estimated tokens sent."""

    budget_tokens: int
    max_units: int
    lang: str
    choosing: str = field(metadata=json_key("choosing half"))  # "kept/questions"
    choosing_share: float | None = field(metadata=json_key("choosing half share"))
    choosing_ci: str = field(metadata=json_key("choosing half ci"))
    reporting: str = field(metadata=json_key("reporting half"))
    reporting_share: float | None = field(metadata=json_key("reporting half share"))
    reporting_ci: str = field(metadata=json_key("reporting half ci"))
    mean_tokens_sent: float | None = field(metadata=json_key("mean tokens sent"))
    picked: str  # "yes" for the rule's pick


@dataclass(frozen=True)
class NarrowingChoice:
    """The narrowing budget chosen on one half of the questions and reported on the other (``llm_eval.budget``)."""

    rule: str
    seed: int
    target: float
    choosing: list[str]  # question ids of the choosing half
    reporting: list[str]
    rows: list[BudgetRow]
    picked: Narrowing
    picked_swapped: Narrowing  # chosen on the reporting half instead
    configured: Narrowing  # generation.narrowing
    agrees: bool


@dataclass(frozen=True)
class InjectionRow:
    """One planted variant asked through one pipeline: whether its claim reached the reader."""

    plant: str
    lang: str
    placement: str
    pipeline: str
    flagged_at_build: bool
    status: str
    error_kind: str
    dropped: str
    claim_shown: bool


@dataclass(frozen=True)
class Injection:
    """The injection set (``question_sweeps.injection``) planted into Q9a's Top-k."""

    question: dict[str, str]  # language → the question asked
    n_plants: int
    n_asked: int
    claims_shown: int
    flagged_at_build: int
    rows: list[InjectionRow]


@dataclass(frozen=True)
class HandCheckAgreement:
    """The key-fact measure against one hand-checked sample (``evaluation.hand_check_agreement.Agreement``)."""

    source: str | None
    n_checks: int
    results_commit: str
    answerers: list[str]
    n: int
    both_correct: int
    hand_only: int
    key_facts_only: int
    both_not_correct: int
    percent: float
    ci95: tuple[float, float] | None  # Wilson 95%, in percent
    kappa: float
    disagreements: list[str]
    stale: list[str]
    missing: list[str]
    not_checkable: list[str]


@dataclass(frozen=True)
class PairedRow(JudgedDifference):
    """One answer-versus-answer comparison in one language and outcome (``llm_eval.paired``), Holm-adjusted."""

    comparison: str
    lang: str
    metric: str
    questions: int
    adjusted_holm: str = field(metadata=json_key("adjusted (Holm)"))


@dataclass(frozen=True)
class PairedTableRow:
    """A :class:`PairedRow` as 10's paired table shows it: no per-question differences; the difference, its 95%
    interval and the Holm-adjusted figures as cell text (the difference signed, in a text column as the table shows
    it)."""

    comparison: str
    lang: str
    metric: str
    questions: int
    answerer: float  # the row's mechanism
    baseline: float
    difference: str  # "+0.193"
    interval: str = field(metadata=json_key("95% interval"))  # "[+0.105, +0.298]"
    adjusted_holm: str = field(metadata=json_key("adjusted (Holm)"))


@dataclass(frozen=True)
class PairedFamily(FamilySummary):
    """The Holm family of the paired comparisons (``Family.summary``) and its sentence."""

    describe: str


@dataclass(frozen=True)
class FailureRow:
    """Where answers were lost (``llm_eval.diagnosis``): the answerable questions with a checkable key fact of one
    answerer, language and gate that one stage lost (``answered``: not lost), of ``of``."""

    generator: str
    lang: str
    gate: str
    stage: str
    questions: int
    of: int


@dataclass(frozen=True)
class QuestionFailure:
    """One question's stage (for the explorer): answerer key (``narrowed`` …), language, gate, question, stage."""

    answerer: str
    lang: str
    gate: str
    question: str
    stage: str


@dataclass(frozen=True)
class ClaimMeasureRow(ClaimMeasure):
    """One claim-level measure (``rag_lib.evaluation.diagnosis``) of one answerer, language and gate."""

    generator: str
    lang: str
    gate: str
