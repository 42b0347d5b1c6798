"""``11_chunking``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_lib.evaluation.claims import Family, Judgement
from rag_lib.results.comparisons import FamilySummary, JudgedComparison
from rag_lib.results.pieces import PieceColumns
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult, MissingResult
from rag_lib.results.typed_json import Scalar, json_key


@dataclass(frozen=True)
class StrategySizes:
    """One chunking strategy's chunks: how many, how large (tokens of the default embedder's tokenizer)."""

    strategy: str
    kind: str
    description: str
    n_chunks: int
    median_tokens: int
    p90_tokens: int
    max_tokens: int
    overlong_inputs: int  # inputs longer than the embedder's window (split into windows, vectors averaged)
    embedder_max_tokens: int
    cosine_threshold: float | None  # the semantic chunker's cut; None for the others


@dataclass(frozen=True)
class StrategyComparison(JudgedComparison):
    """One row of the comparison table: structural − ``strategy`` on ``metric`` in ``language``."""

    strategy: str
    language: str
    metric: str
    structural: float
    strategy_value: float
    difference: float = field(metadata=json_key("structural − strategy"))

    def judgement(self, alpha: float) -> Judgement:
        return self.judged_as(self.strategy, self.language, self.metric, self.difference, alpha)


@dataclass(frozen=True)
class StrategyQ7(PieceColumns[int | None]):
    """Q7's first rank of each piece under one strategy (None: not ranked)."""

    strategy: str
    language: str
    C1: int | None
    C2: int | None
    C3: int | None
    C4: int | None


@dataclass(frozen=True)
class ContextCost:
    """The Top-k of dense retrieval with the structural chunks: tokens, estimated input cost, piece coverage."""

    language: str
    evidence: str
    k: int
    tokens: float = field(metadata=json_key("tokens per question"))
    cost: float = field(metadata=json_key("input cost per 1000 answers (USD)"))
    coverage: float


@dataclass(frozen=True)
class Price:
    """A model's price per million tokens (``generation/models.yaml``)."""

    input_per_mtok: float
    output_per_mtok: float
    source: str


@dataclass(frozen=True)
class HaloChunking:
    """Halo's claim on structural chunking, and the fixed-size setting it names."""

    structural_hit_rate_points: int
    quote: str
    fixed_overlap_setting: str


@dataclass(frozen=True)
class HaloPoints:
    """A Halo claim in points of hit rate (the reranker's, hybrid search's)."""

    hit_rate_points: int
    quote: str


@dataclass(frozen=True)
class HaloContext:
    """Halo's claim on sending five passages instead of twenty."""

    cost_cut: str
    quote: str


@dataclass(frozen=True)
class HaloClaims:
    """Halo's published claims (theirs; ``data/casebook/halo.yaml``), printed beside ours."""

    source: str
    chunking: HaloChunking
    reranker: HaloPoints
    hybrid: HaloPoints
    context: HaloContext


@dataclass(frozen=True)
class ChunkingProvenance:
    """How 11 ran: retriever, embedder, bootstrap, the Holm family, each strategy's settings, the gold rule."""

    retriever: str
    embedder: dict[str, Scalar]  # the embedder's own description
    n_boot: int
    seed: int
    claims: FamilySummary
    strategies: dict[str, dict[str, Scalar]]  # strategy → its settings in config.yaml (keys differ by kind)
    gold: str
    token_estimate: str


@dataclass(frozen=True)
class ChunkingResult(ExperimentResult):
    """``11_chunking``: each strategy against the structural baseline, and the context cut.

    Returned by :func:`rag_lib.experiments.chunking.run_chunking`. ``metric_rows`` are keyed by metric names that
    carry k (``hit@5``), so they stay maps of scalars.
    """

    languages: list[str]
    strategies: list[StrategySizes]
    metric_rows: list[dict[str, Scalar]]
    comparison_rows: list[StrategyComparison]
    q7_rows: list[StrategyQ7]
    gold_span_differences: int
    n_answerable: int
    context_rows: list[ContextCost]
    priced_model: str
    price: Price
    halo: HaloClaims
    provenance: ChunkingProvenance

    @property
    def k(self) -> int:
        """The top-k the run compared at, as its stored hit rate names it (``"hit@5"``: 5).

        Raises
        ------
        MissingResult
            When the stored metric rows hold no single ``hit@<k>`` column.
        """
        hits = sorted({m for row in self.metric_rows for m in row if m.startswith("hit@")})
        if len(hits) != 1:
            raise MissingResult(f"the results of {EXPERIMENT.name} hold {hits or 'no'} hit@k column(s) in "
                                f"metric_rows, not one; re-run {EXPERIMENT.name}.")
        return int(hits[0].removeprefix("hit@"))

    def family(self) -> Family:
        """The notebook's Holm family as stored beside each comparison row (no resampling)."""
        claims = self.provenance.claims
        return Family(claims.name, tuple(r.judgement(claims.alpha) for r in self.comparison_rows), claims.alpha)

    def context_cut(self, lang: str) -> tuple[ContextCost, ContextCost, float]:
        """The Top-5 and Top-20 context rows of ``lang`` and the share of tokens the Top-5 saves (read by
        11's findings and by the summary)."""
        small, large = (next(r for r in self.context_rows if r.language == lang and r.k == k) for k in (5, 20))
        return small, large, 1 - small.tokens / large.tokens


EXPERIMENT = Experiment(
    "11_chunking", ChunkingResult,
    checked={
        "gold_span_differences": 0,
        "strategies[strategy=structural].n_chunks": 0,
        "strategies[strategy=fixed-512].n_chunks": 0,
        "strategies[strategy=fixed-512-overlap].n_chunks": 0,
        "strategies[strategy=fixed-256-overlap].n_chunks": 0,
        "strategies[strategy=semantic].n_chunks": 0,
        "metric_rows[strategy=fixed-512,language=zh].hit@5": 0.02,
        "metric_rows[strategy=fixed-512,language=en].hit@5": 0.02,
        "metric_rows[strategy=fixed-512-overlap,language=zh].hit@5": 0.02,
        "metric_rows[strategy=fixed-512-overlap,language=en].hit@5": 0.02,
        "metric_rows[strategy=fixed-256-overlap,language=zh].hit@5": 0.02,
        "metric_rows[strategy=fixed-256-overlap,language=en].hit@5": 0.02,
        "metric_rows[strategy=semantic,language=zh].hit@5": 0.02,
        "metric_rows[strategy=semantic,language=en].hit@5": 0.02,
    },
)
