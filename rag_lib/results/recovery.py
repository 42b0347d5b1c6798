"""``07_recovery_loop``'s stored result (a generated answer is stored as
:class:`~rag_lib.results.answer_rows.GenerationRecord`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rag_lib.results.answer_rows import GenerationRecord
from rag_lib.results.provenance import RetrieverProvenance
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult
from rag_lib.results.typed_json import encode

PieceRanks = dict[str, int | None]  # piece -> first rank (None: not ranked)
# A suggestion and the first rank of each of its question's pieces (``RecoveryResult.rows``): the columns after
# ``suggestion`` are the question's pieces, C1 … Cn.
RankRow = dict[str, str | int | None]


# --------------------------------------------------------------------------- the recovery loop
@dataclass(frozen=True)
class StoredSuggestions:
    """What a decomposer proposed (``Suggestions.to_json``): narrower questions and why, or a named failure."""

    source: str
    status: str
    reason: str
    questions: list[str]
    copied: list[str]  # dropped: they copy the prompt's example
    call_keys: list[str]
    error: str | None
    raw_output: str | None


@dataclass(frozen=True)
class StoredLoop:
    """The whole loop for one question, language and source (``RecoveryResult.to_json``)."""

    question_id: str
    lang: str
    question: str
    retriever: str
    k: int
    baseline: PieceRanks
    baseline_top_ids: list[str]
    suggestions: StoredSuggestions
    ranks: list[RankRow]
    top_ids: list[list[str]]  # each suggestion's Top-k
    chosen: int | None
    chosen_question: str | None
    choice_rule: str
    answer: GenerationRecord | None


@dataclass(frozen=True)
class Q7Recovery:
    """Q7 in one language and source: the suggestions, their ranks, and the chosen suggestion's answer."""

    suggestions: list[str]
    reason: str
    status: str
    ranks: list[RankRow]
    baseline: PieceRanks
    chosen: int | None
    chosen_question: str | None
    answer: GenerationRecord | None
    loop: StoredLoop


@dataclass(frozen=True)
class RecoveryCounts:
    """One source in one language over every answerable compound question: pieces in the Top-5 and Top-10
    before and after (each "after" empty while some LLM call has no record), and how the suggestions went."""

    pieces_total: int
    in_top5_before: int
    in_top5_after_first: int | None
    in_top5_after_random: float | None
    in_top5_after_best: int | None
    in_top5_after_union: int | None
    in_top10_before: int
    in_top10_after_first: int | None
    in_top10_after_random: float | None
    in_top10_after_best: int | None
    in_top10_after_union: int | None
    missing: int  # questions whose LLM call has no record
    failed: int  # recorded calls that gave no usable suggestion
    n_questions: int
    n_with_suggestions: int
    n_suggestions: int
    n_echoing_prompt: int
    status_counts: dict[str, int]
    answer_status_counts: dict[str, int]


@dataclass(frozen=True)
class QuestionRecovery:
    """One compound question in one language and source (the full loop is kept for Q7 only)."""

    question_id: str
    status: str
    suggestions: list[str]
    call_keys: list[str]
    baseline: PieceRanks
    ranks: list[RankRow]
    chosen: int | None
    before_top5: int
    after_first_top5: int
    after_best_top5: int
    after_union_top5: int
    before_top10: int
    after_best_top10: int
    after_union_top10: int
    answer_status: str | None
    answer_cited: list[str]


@dataclass(frozen=True)
class CountMeaning:
    """What each "after" count is."""

    after_first: str
    after_random: str
    after_best: str
    after_union: str


@dataclass(frozen=True)
class BeforeAfter:
    before: int
    after: int


@dataclass(frozen=True)
class CasebookRecoveryFigures:
    """The casebook's recovery figures: S1's first ranks of C1 and C2, S2's rank of C3 before and after."""

    s1: dict[str, int]
    s2_c3_rank: BeforeAfter


@dataclass(frozen=True)
class CasebookRecovery:
    """The casebook's published figures (theirs, not measured here)."""

    whose: str
    q7_piece_ranks: dict[str, int]
    recovery: CasebookRecoveryFigures
    user_pick: str


@dataclass(frozen=True)
class RecoveryLLM:
    """The LLM source's model, where its calls are recorded, and a note on its quality."""

    backend: str
    model: str
    model_version: str | None
    calls: str
    quality_note: str


@dataclass(frozen=True)
class RuleSource:
    decomposer: str
    max_questions: int


@dataclass(frozen=True)
class AnswerModel:
    backend: str
    model: str
    model_version: str | None


@dataclass(frozen=True)
class RecoveryProvenance:
    """The retriever, each suggestion source (``llm``: None when its model is not here) and the answerer."""

    retriever: RetrieverProvenance
    llm: RecoveryLLM | None
    rule: RuleSource
    answer: AnswerModel


@dataclass(frozen=True)
class RecoveryExperimentResult(ExperimentResult):
    """``07_recovery_loop``: the recovery loop on Q7 and on the compound questions.

    Returned by :func:`rag_lib.experiments.recovery.run_recovery_experiment`.
    """

    k: int
    languages: list[str]
    retriever: str
    sources: dict[str, str]  # source -> what it is
    unavailable: dict[str, str]  # source -> why its model is not here
    choice_rule: str
    count_rule: str
    count_meaning: CountMeaning
    compound_question_ids: list[str]
    q7_id: str
    q7: dict[str, dict[str, Q7Recovery]]  # language -> source -> Q7's loop
    benchmark: dict[str, dict[str, RecoveryCounts]]  # language -> source -> counts
    per_question: dict[str, dict[str, list[QuestionRecovery]]]  # language -> source -> one row per question
    casebook_published: CasebookRecovery
    provenance: RecoveryProvenance


COUNT_STEPS = ("before", "after_first", "after_random", "after_best", "after_union")  # in_top{5,10}_<step>


def piece_count_rows(benchmark: Mapping[str, Mapping[str, RecoveryCounts | Mapping]]) -> list[dict[str, object]]:
    """The pieces in the Top-5 and Top-10 before and after, one row per language, source and cut: what 07's page
    and report show of :class:`RecoveryCounts` (typed, or as results.json stores it)."""
    rows: list[dict[str, object]] = []
    for lang, by_source in benchmark.items():
        for source, counts in by_source.items():
            c = encode(counts) if isinstance(counts, RecoveryCounts) else counts
            for cut in (5, 10):
                rows.append({"language": lang, "source": source, "cut": f"Top-{cut}", "pieces": c["pieces_total"],
                             **{step: c[f"in_top{cut}_{step}"] for step in COUNT_STEPS}})
    return rows


def suggestion_count_rows(benchmark: Mapping[str, Mapping[str, RecoveryCounts | Mapping]]) -> list[dict[str, object]]:
    """How the suggestions went, one row per language and source (the other half of :class:`RecoveryCounts`)."""
    rows: list[dict[str, object]] = []
    for lang, by_source in benchmark.items():
        for source, counts in by_source.items():
            c = encode(counts) if isinstance(counts, RecoveryCounts) else counts
            rows.append({"language": lang, "source": source,
                         **{key: c[key] for key in ("n_questions", "n_with_suggestions", "n_suggestions",
                                                    "n_echoing_prompt", "missing", "failed")},
                         "suggestion statuses": c["status_counts"], "answer statuses": c["answer_status_counts"]})
    return rows


EXPERIMENT = Experiment(
    "07_recovery_loop", RecoveryExperimentResult,
    checked={
        "benchmark.zh.rule.in_top5_after_first": 1,
        "benchmark.zh.rule.in_top5_before": 1,
        "benchmark.zh.rule.in_top5_after_best": 1,
        "benchmark.en.rule.in_top5_after_best": 1,
    },
)
