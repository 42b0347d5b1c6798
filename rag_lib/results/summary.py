"""``08_summary``'s stored result, its Q7 side-by-side rows, comparisons and relabelling figures."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_lib.results.gate_rows import JudgeTableRow
from rag_lib.results.local_llm import AnswerRow
from rag_lib.results.pieces import PieceColumns
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult
from rag_lib.results.typed_json import Scalar, json_key


@dataclass(frozen=True)
class Q7Note:
    """A side-by-side row without ranks: a mechanism not run, a failed variant, a recovery source without a
    usable suggestion (the row says which)."""

    row: str


@dataclass(frozen=True)
class Q7Ranks(PieceColumns[int | None]):
    """A side-by-side row: the first rank of each of Q7's pieces (None: not ranked), fields named as the pieces.

    A recovery suggestion's row: its ranks are not checked for ties at the Top-10 cut.
    """

    row: str
    C1: int | None
    C2: int | None
    C3: int | None
    C4: int | None

    @property
    def tied(self) -> list[str]:
        """The pieces tied at the Top-10 cut (none checked for this row)."""
        return []


@dataclass(frozen=True)
class Q7TiedRanks(Q7Ranks):
    """The baseline's or a mechanism variant's row: its ranks and the pieces tied at the Top-10 cut."""

    ties: list[str]

    @property
    def tied(self) -> list[str]:
        return self.ties


SideBySideRow = Q7TiedRanks | Q7Ranks | Q7Note


@dataclass(frozen=True)
class ComparisonRow:
    """One mechanism comparison (variant, language, metric) with its judgement in the summary's Holm family."""

    variant: str
    language: str
    questions: int | None  # None where the run did not store how many it compared
    metric: str
    baseline: float
    value: float
    diff: float
    ci95: tuple[float, float]
    p: float
    changed: int
    in_family: bool  # False where no question changed (fixed)
    p_holm: float | None
    adjusted: tuple[float, float] | None
    adjusted_confidence: float | None


@dataclass(frozen=True)
class Q7EveryPhrasing:
    """Q7's mechanism rows over every phrasing: how many, and which put all pieces inside the Top-``k``."""

    rows: int
    complete: list[str]
    k: int


@dataclass(frozen=True)
class Multiplicity:
    """The summary's Holm family: its size, the fixed cells left out, and how many comparisons survive."""

    comparisons: int
    fixed: int
    alpha: float
    ci_percent: int
    chance: str
    significant_holm_05: int
    significant_unadjusted_05: int
    method: str


@dataclass(frozen=True)
class RelabelQ7Row(PieceColumns[str]):
    """Q7's first ranks under one configuration, phrasing and language, "before → after" the relabelling."""

    configuration: str
    phrasing: str
    language: str
    C1: str
    C2: str
    C3: str
    C4: str


@dataclass(frozen=True)
class RelabelClosing:
    """The default configuration's figures in one language, before → after."""

    baseline: dict[str, str]  # a metrics row (its hit@k names the k)
    q7: dict[str, RelabelQ7Row]  # phrasing → row


@dataclass(frozen=True)
class PooledRelabel:
    """Every pooled configuration scored under both label versions; unavailable without both archives."""

    available: bool
    rows: list[dict[str, Scalar]]  # columns: hit@5 and coverage@10, each before, after and changed


@dataclass(frozen=True)
class PooledUnavailable(PooledRelabel):
    """The pooled relabelling without both archives: which are needed."""

    why: str


@dataclass(frozen=True)
class PooledRelabelled(PooledRelabel):
    """The pooled relabelling with the pool's depth, what it did not pool and the decision counts."""

    depth: int
    not_pooled: dict[str, str]  # configuration → why it is not in the pool
    sizes: dict[str, int]  # question → candidates
    decisions: dict[str, int]


@dataclass(frozen=True)
class Relabel:
    """Label-dependent figures before → after the relabelling (``presentation.label_archive``); without the
    archive or 01's results only whether the pooled figures are."""

    available: bool
    archive: str
    pooled: PooledRelabelled | PooledUnavailable


@dataclass(frozen=True)
class Relabelled(Relabel):
    """The relabelling with 01's metrics and Q7 rows beside the archived ones."""

    before_commit: str
    before_note: str
    metrics: list[dict[str, str]]  # configuration, language and its metrics (hit@k names the k)
    q7: list[RelabelQ7Row]
    closing: dict[str, RelabelClosing]  # language → the default configuration's figures


@dataclass(frozen=True)
class HaloRow:
    """One of Halo's ranked changes (theirs) beside our figure for it."""

    change: str
    language: str
    halo: str = field(metadata=json_key("Halo (theirs)"))
    ours: str


@dataclass(frozen=True)
class CasebookRow:
    """One of the casebook's published figures (theirs)."""

    figure: str
    casebook: str = field(metadata=json_key("casebook (theirs)"))


@dataclass(frozen=True)
class LocalLLMSummary:
    """What the summary shows of 10: the models per task, its answer rows and the judge beside the gate."""

    tasks: dict[str, str]
    answer_rows: list[AnswerRow]  # shown under local_llm.ANSWER_COLUMNS
    judge_rows: list[JudgeTableRow]


@dataclass(frozen=True)
class SummaryResult(ExperimentResult):
    """``08_summary``: the casebook side by side, what helps, the headline, from the stored runs.

    Returned by :func:`rag_lib.experiments.summary.run_summary`.
    """

    local_llm: LocalLLMSummary | None  # None when 10_local_llm has not run
    languages: list[str]
    k: int  # the top-k the mechanism runs compared at (hit@k names it)
    missing_inputs: list[str]  # declared runs without results
    missing_text: str
    side_by_side: dict[str, list[SideBySideRow]]  # language → Q7 rows (the first language's: the README headline)
    evidence_k: dict[str, int]  # row label → evidence size, for rows that send more than the Top-10
    benchmark_rows: list[dict[str, str]]  # mechanism, language, a cell per metric (hit@k names the k), failed
    comparisons: list[ComparisonRow]  # every mechanism comparison with its judgement (rag_lib.evaluation.claims)
    q7_every_phrasing: Q7EveryPhrasing  # Q7's mechanism rows of every phrasing that put all pieces in the Top-10
    multiplicity: Multiplicity
    # rank (int, or "—" for the unranked top-k rows), mechanism, language, questions, verdict, a cell per metric
    what_helps: list[dict[str, Scalar]]
    relabel: Relabelled | Relabel
    halo_rows: list[HaloRow]
    casebook_rows: list[CasebookRow]
    headline_findings: list[dict[str, str]]  # the README's five findings (rag_lib.experiments.headline)


EXPERIMENT = Experiment(
    "08_summary", SummaryResult,
    reads=(
        "01_embedding_bakeoff", "03_q9a_no_evidence", "04_q8_topk", "05_q7_diagnosis", "06_q7_mechanism",
        "07_recovery_loop", "10_local_llm", "11_chunking", "14_test_set",
    ),
)
