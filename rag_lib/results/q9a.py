"""``03_q9a_no_evidence``'s stored result, and the gate ``ask`` reads from it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_lib.results.answer_rows import GenerationEval
from rag_lib.results.gate_rows import (
    ChosenGate,
    GateFigures,
    GateParameters,
    JudgeTableRow,
    LLMJudge,
    SweepRow,
)
from rag_lib.results.provenance import RetrieverProvenance
from rag_lib.results.retrieval_rows import TopRow
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult, MissingResult


@dataclass(frozen=True)
class KVMentions:
    """Chunks and pages that mention KV."""

    chunks: int
    pages: int


@dataclass(frozen=True)
class CasebookQ9a:
    """The casebook's published figures 03 prints beside its own (theirs: bge-m3 on their snapshot)."""

    q9a_top5: tuple[float, float]  # Q9a's Top-5 score range
    q5_rank5: float
    kv_mentions: KVMentions


@dataclass(frozen=True)
class Q9aQuestion:
    """Q9a: its benchmark id and both phrasings."""

    id: str
    zh: str
    en: str


@dataclass(frozen=True)
class CorpusCheck:
    """Chunks and pages whose text matches ``pattern``, and the hits of each string the answer would need."""

    pattern: str
    chunks: int
    pages: int
    absent: dict[str, int]  # allowance string → chunks containing it
    absent_found: int


@dataclass(frozen=True)
class ScoreComparison:
    """Q9a's Top-k scores against Q5's rank-k score in one language (``gap``: Q5's minus Q9a's best)."""

    q9a_min: float
    q9a_max: float
    q5_rank_k: float
    gap: float
    q5_above_q9a: bool


@dataclass(frozen=True)
class ScoreOverlap:
    """How far the best scores of answerable and unanswerable questions overlap (one language)."""

    n_answerable: int
    n_unanswerable: int
    max_unanswerable_best: float
    min_answerable_best: float
    answerable_below_max_unanswerable: int
    unanswerable_above_min_answerable: int


@dataclass(frozen=True)
class BestScores:
    """The best retrieval score of every answerable and every unanswerable question, sorted."""

    answerable: list[float]
    unanswerable: list[float]


@dataclass(frozen=True)
class Calibration:
    """The setting chosen for each label-free gate in one language, and how many pairs floor+aspects tried."""

    floor: ChosenGate
    aspects: ChosenGate
    floor_aspects: ChosenGate
    grid_size: int


@dataclass(frozen=True)
class Rate:
    """``k / n`` with its Wilson 95% interval (``rate`` and ``wilson95`` are ``None`` when ``n`` is 0)."""

    k: int
    n: int
    rate: float | None
    wilson95: tuple[float, float] | None


@dataclass(frozen=True)
class RefusalFigures:
    """A gate's declines under one validation: of all, near-miss and absent-topic unanswerable questions,
    and of answerable questions with complete evidence (false refusals)."""

    refusal_correctness: Rate
    refusal_near_miss: Rate
    refusal_absent_topic: Rate
    false_refusal_rate: Rate


@dataclass(frozen=True)
class NearMissFigure:
    """Fitted without the near-miss questions, measured on them only."""

    refusal_near_miss: Rate


@dataclass(frozen=True)
class ParameterRanges:
    """The lowest and highest setting the folds of a cross-validation chose (``None``: that part is off)."""

    floor_range: tuple[float, float] | None
    min_coverage_range: tuple[float, float] | None


@dataclass(frozen=True)
class ValidationParameters:
    """The setting each validation fitted."""

    in_sample: GateParameters
    leave_one_out: ParameterRanges
    grouped_by_page: ParameterRanges
    near_miss_held_out: GateParameters


@dataclass(frozen=True)
class Folds:
    """How many folds each cross-validation had."""

    leave_one_out: int
    grouped_by_page: int


@dataclass(frozen=True)
class GateValidation:
    """One tuned gate in sample and out of sample (``rag_lib.experiments.q9a.gate_validation``)."""

    parameters: ValidationParameters
    folds: Folds
    in_sample: RefusalFigures
    leave_one_out: RefusalFigures
    grouped_by_page: RefusalFigures
    near_miss_held_out: NearMissFigure


@dataclass(frozen=True)
class ValidationRow:
    """A row of the in-sample vs out-of-sample table: one gate's figure under each validation, as
    "k/n = rate [Wilson 95%]" (``None``: that validation does not measure the figure, or it counted nothing)."""

    gate: str
    figure: str  # a field of RefusalFigures
    in_sample: str | None
    leave_one_out: str | None
    grouped_by_page: str | None
    near_miss_held_out: str | None  # measures refusal_near_miss only


@dataclass(frozen=True)
class NearMissRow:
    """A near-miss question: its best score, aspect coverage, top page, and each gate's decision."""

    question: str
    best_score: float
    aspect_coverage: float | None  # None: no checkable aspect
    top1_page: str
    checklist: str  # "declined" / "answered"
    floor: str
    aspects: str
    floor_aspects: str | None  # None: floor+aspects could not be fitted


@dataclass(frozen=True)
class NearMiss:
    """The near-miss unanswerable questions (topic in the corpus, fact not) and how each gate decides them."""

    ids: list[str]
    ids_count: int
    rows: dict[str, list[NearMissRow]]  # language → rows
    llm_judge: str  # where the LLM judge's figures on them are


@dataclass(frozen=True)
class GatedDecline:
    """Q9a on the normal path: the gate decides before the LLM is asked (a decline records no call)."""

    generator: str
    model: str
    status: str
    generator_called: bool
    recorded_calls: int
    answer: str | None
    reason: str | None


@dataclass(frozen=True)
class BypassOutcome:
    """One generator given Q9a's Top-k distractors without the gate, judged by the casebook's three checks
    (``passed`` is ``None`` when the generator never replied)."""

    model: str
    model_version: str | None
    calls: int
    call_keys: list[str]
    replayed: bool
    error_kind: str | None
    no_number: bool
    no_borrowed_figure: bool
    no_citation: bool
    passed: bool | None
    status: str
    answer: str
    citations: int
    borrowed: list[str]  # numbers of the evidence the answer repeats (at most 10)


@dataclass(frozen=True)
class Bypass:
    """The gate skipped on purpose, in one language: each generator's outcome."""

    lang: str
    generators: dict[str, BypassOutcome]  # generator name → outcome


@dataclass(frozen=True)
class OperatingPoint:
    """A gate with one setting, in-sample, as a point of 03's trade-off figure."""

    lang: str
    gate: str
    refusal_correctness: float | None
    false_refusal_rate: float | None


@dataclass(frozen=True)
class Q9aResult(ExperimentResult):
    """``03_q9a_no_evidence``: the gates calibrated and validated, Q9a's decisions, generation behind the gate.

    Returned by :func:`rag_lib.experiments.q9a.run_q9a`.
    """

    casebook: CasebookQ9a
    question: Q9aQuestion
    languages: list[str]
    k: int
    retriever: str
    provenance: RetrieverProvenance
    corpus_check: CorpusCheck
    top: dict[str, list[TopRow]]  # language → Q9a's Top-k
    scores: dict[str, ScoreComparison]
    overlap: dict[str, ScoreOverlap]
    best_scores: dict[str, BestScores]
    calibration: dict[str, Calibration]
    floor_sweep: dict[str, list[SweepRow]]
    gates: dict[str, dict[str, GateFigures]]  # language → gate name → figures
    gate_order: list[str]  # the gates in the order measured, for tables (results.json sorts gates' keys)
    validation: dict[str, dict[str, GateValidation]]  # language → gate name → validations
    validation_interval: str
    validation_rows: dict[str, list[ValidationRow]]  # language → one row per gate and figure
    near_miss: NearMiss
    gated_decline: dict[str, GatedDecline]
    bypass: Bypass
    llm_judge: LLMJudge
    llm_judge_narrowed: LLMJudge  # the narrowed pipeline's part-by-part judge
    llm_judge_rows: list[JudgeTableRow]
    generation: GenerationEval

    def calibrated_gate(self, lang: str) -> dict[str, float]:
        """The floor and aspect coverage chosen for ``lang`` (what ``ask`` applies)."""
        chosen = self.calibration[lang].floor_aspects if lang in self.calibration else None
        if chosen is None or chosen.floor is None or chosen.min_coverage is None:
            raise MissingResult(f"{EXPERIMENT.name} has no floor+aspects calibration for {lang!r} (it has "
                                f"{sorted(self.calibration)}); re-run it with that language.")
        return {"floor": float(chosen.floor), "min_coverage": float(chosen.min_coverage)}

    def gate_quality(self, lang: str) -> dict[str, dict[str, tuple[int, int]]]:
        """floor+aspects on the benchmark in ``lang``, in-sample and leave-one-out: (declined, of) for the
        unanswerable questions and for the answerable ones whose Top-k holds every gold piece."""
        fitted = self.gates[lang]["floor_aspects"]
        held = self.validation[lang]["floor_aspects"].leave_one_out
        return {"in-sample": {"unanswerable declined": (fitted.unanswerable_declined, fitted.unanswerable),
                              "false refusals": (fitted.complete_declined, fitted.complete)},
                "leave-one-out": {"unanswerable declined": (held.refusal_correctness.k, held.refusal_correctness.n),
                                  "false refusals": (held.false_refusal_rate.k, held.false_refusal_rate.n)}}

    def chosen_floors(self, languages: Sequence[str]) -> dict[str, float | None]:
        """The floor gate's chosen threshold per language (the dotted line of 03's figures)."""
        return {lang: self.calibration[lang].floor.floor for lang in languages}

    def operating_points(self, languages: Sequence[str]) -> list[OperatingPoint]:
        """Each label-free gate with one setting, in-sample, as a point per language: aspects, floor+aspects
        and every LLM judge, beside the floor's sweep in 03's trade-off figure."""
        return ([OperatingPoint(lang, gate, self.gates[lang][gate].refusal_correctness,
                                self.gates[lang][gate].false_refusal_rate)
                 for lang in languages for gate in ("aspects", "floor_aspects")]
                + [OperatingPoint(row.lang, row.gate, row.refusal_correctness, row.false_refusal_rate)
                   for row in self.llm_judge_rows if row.lang in languages and row.gate.startswith("llm_judge")])


EXPERIMENT = Experiment(
    "03_q9a_no_evidence", Q9aResult,
    checked={
        "corpus_check.absent_found": 0,
        "scores.zh.q5_above_q9a": 0,
        "overlap.zh.answerable_below_max_unanswerable": 3,
        "validation.zh.floor_aspects.leave_one_out.refusal_correctness.rate": 0.06,
        "validation.en.floor_aspects.leave_one_out.refusal_correctness.rate": 0.06,
        "validation.en.floor_aspects.leave_one_out.refusal_near_miss.rate": 0.06,
        "validation.en.floor_aspects.near_miss_held_out.refusal_near_miss.rate": 0.06,
        "gated_decline.zh.recorded_calls": 0,
        "gates.en.floor_aspects.precision": 0.05,
        "gates.en.floor_aspects.recall": 0.05,
        "gates.en.floor_aspects.refusal_correctness": 0.06,
        "generation.citation_validity": 0,
        "generation.refusal_correctness": 0.06,
    },
)
