"""``12_corpus_size``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_lib.evaluation.claims import Family, Judgement
from rag_lib.results.comparisons import FamilySummary, JudgedComparison
from rag_lib.results.pieces import PieceColumns
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult
from rag_lib.results.typed_json import Scalar, json_key

# What a Top-5 slot that holds no gold is, relative to the question's gold (first rule that holds): the slot table's
# columns, in this order.
DISTRACTOR_KINDS = ("same page as gold", "copy on another page", "same product, other page", "other product")


@dataclass(frozen=True)
class WideBatchLabels:
    """What the wide batch's own labels add: extra gold locators, and the unanswerable questions it settles."""

    batch: str
    extra_locators: int
    absent_reviewed: dict[str, str]  # question id → "answered" or "still unanswerable"
    left_out: dict[str, str]  # question id → why it is left out of the wide batch's scores


@dataclass(frozen=True)
class CorpusChunks:
    """One corpus size: its chunks, averaged over the page orders."""

    pages: int
    chunks: float = field(metadata=json_key("chunks (mean over seeds)"))


@dataclass(frozen=True)
class LabelReview:
    """A reviewer's decision on an unanswerable question whose absent string occurs in the wide batch."""

    question: str
    decision: str = field(metadata=json_key("in the wide batch"))
    reason: str


@dataclass(frozen=True)
class SizeChange(JudgedComparison):
    """One row of the change table: ``metric`` with ``pages`` pages − with the smallest corpus, in ``language``."""

    pages: int
    language: str
    metric: str
    smallest: float
    this_size: float = field(metadata=json_key("this size"))
    change: float

    def judgement(self, alpha: float) -> Judgement:
        return self.judged_as(str(self.pages), self.language, self.metric, self.change, alpha)


@dataclass(frozen=True)
class Q7Run(PieceColumns[int | None]):
    """Q7's first rank of each piece in one nested corpus (size, language, page order; None: not ranked)."""

    pages: int
    language: str
    seed: int
    C1: int | None
    C2: int | None
    C3: int | None
    C4: int | None


@dataclass(frozen=True)
class Q7Span(PieceColumns[str]):
    """Q7's first rank of each piece per size and language, over the page orders (``rank_span``: "3–7 (median 5)")."""

    pages: int
    language: str
    C1: str
    C2: str
    C3: str
    C4: str


@dataclass(frozen=True)
class Q7First:
    """In the whole wide batch, the chunk holding a piece's first rank."""

    language: str
    piece: str
    rank: int
    chunk: str
    page: str
    added_page: bool = field(metadata=json_key("added page"))


@dataclass(frozen=True)
class SlotShares:
    """Per size and language: the Top-5 slots holding no gold, per run, and their shares by kind
    (:data:`DISTRACTOR_KINDS`) and from the pages added to the labelled batch."""

    pages: int
    language: str
    per_run: float = field(metadata=json_key("non-gold slots per run"))
    same_page: float = field(metadata=json_key("same page as gold"))
    copy_elsewhere: float = field(metadata=json_key("copy on another page"))
    same_product: float = field(metadata=json_key("same product, other page"))
    other_product: float = field(metadata=json_key("other product"))
    from_added: float = field(metadata=json_key("from added pages"))

    @property
    def by_kind(self) -> dict[str, float]:
        """Each kind's share, in :data:`DISTRACTOR_KINDS` order."""
        return dict(zip(DISTRACTOR_KINDS, (self.same_page, self.copy_elsewhere, self.same_product, self.other_product),
                        strict=True))


@dataclass(frozen=True)
class TopDistractor:
    """A chunk that takes Top-5 slots from gold most often in the whole wide batch."""

    language: str
    chunk: str
    page: str
    heading: str
    questions: int
    added_page: bool = field(metadata=json_key("added page"))
    copies: int = field(metadata=json_key("copies on other pages"))


@dataclass(frozen=True)
class RefusalChange:
    """The gate's refusals of the unanswerable questions on the smallest corpus and on the whole wide batch, paired
    by question: each rate with its Wilson interval, the questions that changed, and McNemar's exact p."""

    language: str
    gate: str  # in-sample (03's parameters) or leave-one-out
    unanswerable: int
    smallest: int  # declined on the smallest corpus
    smallest_ci: str
    whole: int  # declined on the whole wide batch
    whole_ci: str
    newly_declined: int
    no_longer_declined: int
    p_exact: float


@dataclass(frozen=True)
class GateParameters:
    """floor+aspects' parameters as notebook 03 chose them."""

    floor: float
    min_coverage: float


@dataclass(frozen=True)
class ScaleSettings:
    """``scale`` of config.yaml: the wide batch, the intermediate sizes, the seeds (page orders)."""

    batch: str
    sizes: list[int]
    seeds: list[int]


@dataclass(frozen=True)
class CorpusSizeProvenance:
    """How 12 ran: retriever, embedder, bootstrap, the Holm family, the scale settings, k, the gate, the restriction."""

    retriever: str
    embedder: dict[str, Scalar]  # the embedder's own description
    n_boot: int
    seed: int
    claims: FamilySummary
    scale: ScaleSettings
    top: int  # the k hit@k and the Top-k slots are measured at
    gate: str
    restriction: str


@dataclass(frozen=True)
class CorpusSizeResult(ExperimentResult):
    """``12_corpus_size``: retrieval as the corpus grows (nested sizes, seeded page orders).

    Returned by :func:`rag_lib.experiments.corpus_size.run_corpus_size`. ``curve``, ``runs`` and ``by_size`` are
    keyed by metric names that carry k (``hit@5``), so their rows stay maps of scalars.
    """

    languages: list[str]
    sizes: list[int]
    seeds: list[int]
    batch: str
    base_batch: str
    n_answerable: int
    labels: WideBatchLabels
    size_rows: list[CorpusChunks]
    label_rows: list[LabelReview]
    curve: list[dict[str, Scalar]]
    change_rows: list[SizeChange]
    by_size: dict[str, dict[str, dict[str, float]]]  # language → pages → metric → value (for make check)
    runs: list[dict[str, Scalar]]
    q7_runs: list[Q7Run]
    q7_rows: list[Q7Span]
    slot_rows: list[SlotShares]
    top_distractors: list[TopDistractor]
    q7_first: list[Q7First]
    gate: dict[str, GateParameters]
    refusal_changes: list[RefusalChange]
    provenance: CorpusSizeProvenance

    def family(self) -> Family:
        """The notebook's Holm family as stored beside each change row (no resampling)."""
        claims = self.provenance.claims
        return Family(claims.name, tuple(r.judgement(claims.alpha) for r in self.change_rows), claims.alpha)


EXPERIMENT = Experiment(
    "12_corpus_size", CorpusSizeResult,
    reads=("03_q9a_no_evidence",),
    checked={
        "by_size.zh.32.hit@5": 0,
        "by_size.zh.32.coverage@10": 0,
        "by_size.zh.249.hit@5": 0.02,
        "by_size.zh.249.coverage@10": 0.02,
        "by_size.zh.249.declined (answerable)": 1,
        "by_size.en.32.hit@5": 0,
        "by_size.en.32.coverage@10": 0,
        "by_size.en.249.hit@5": 0.02,
        "by_size.en.249.coverage@10": 0.02,
        "by_size.en.249.declined (answerable)": 1,
    },
)
