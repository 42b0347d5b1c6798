"""The stored shape of a mechanism run (notebook 06): every run of every mechanism has this one shape.

:class:`MechanismResult` is what ``run_mechanism`` returns and what the summary reads back for each
declared run (:func:`mechanism_results`); each of its ``variants`` is a :class:`VariantResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rag_lib.evaluation.claims import Comparison, Judgement
from rag_lib.evaluation.metrics import hit_name
from rag_lib.evaluation.stats import PairedDifference, no_question_changed
from rag_lib.results.comparisons import FamilySummary, JudgedDifference
from rag_lib.results.pieces import PieceColumns
from rag_lib.results.provenance import (
    LLMDescription,
    ModelDescription,
    NestedModelDescription,
)
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult
from rag_lib.results.typed_json import Scalar, json_key, optional_key

Q7Ranks = dict[str, dict[str, dict[str, int | None]]]  # phrasing -> language -> piece -> first rank (None: unranked)
# A declared mechanism parameter as resolved for the run (``MechanismSpec.resolved_parameters``).
Parameter = str | int | float | list[int] | list[str]


def mechanism_metrics(k: int) -> tuple[str, ...]:
    """What a mechanism run at top-``k`` compares per variant and language (coverage@evidence: the share of
    gold pieces in the evidence the variant sends, its own k): ``("hit@5", "coverage@10", "mrr",
    "coverage@evidence")`` at k = 5."""
    return (hit_name(k), "coverage@10", "mrr", "coverage@evidence")


@dataclass(frozen=True)
class MechanismComparison(JudgedDifference):
    """A variant against the baseline on one metric and language, judged in the run's Holm family."""

    @property
    def no_question_changed(self) -> bool:
        """The metric moved on no question (e.g. hit@5 under a larger k): diff and interval are all 0."""
        return no_question_changed({"diff": self.diff, "ci95": self.ci95})

    @classmethod
    def judged(cls, paired: PairedDifference, j: Judgement) -> MechanismComparison:
        return cls(paired.baseline, paired.mechanism, paired.diff, paired.ci95, paired.p, list(paired.diffs),
                   j.changed, j.in_family, j.p_holm, j.adjusted, j.adjusted_confidence)

    def comparison(self, subject: str, scope: str, metric: str, n_boot: int, seed: int) -> Comparison:
        """The comparison, to judge again in another family (08's, over every run)."""
        return Comparison(subject=subject, scope=scope, metric=metric, diff=self.diff, p=self.p,
                          diffs=tuple(self.diffs), n_boot=n_boot, seed=seed)

    def judgement(self, subject: str, scope: str, metric: str, alpha: float) -> Judgement:
        """The judgement the run's family gave it."""
        return Judgement(subject=subject, scope=scope, metric=metric, diff=self.diff, changed=self.changed,
                         in_family=self.in_family, p_holm=self.p_holm, adjusted=self.adjusted,
                         adjusted_confidence=self.adjusted_confidence, alpha=alpha)


@dataclass(frozen=True)
class FailedCalls:
    """A variant's questions that could not be ranked in one language (an LLM call failed or has no record)."""

    failed: int
    of: int
    by_kind: dict[str, int]  # error kind -> questions

    @property
    def kinds_text(self) -> str:
        """``"replay_miss 19"``: the failed questions by error kind."""
        return ", ".join(f"{kind} {n}" for kind, n in self.by_kind.items())


@dataclass(frozen=True)
class LLMCalls:
    """How the calls of an LLM variant went (``LLMQueries.summary``)."""

    calls: int
    by_status: dict[str, int]  # "ok" or the error kind -> calls


@dataclass(frozen=True)
class QueryOutput:
    """What the LLM produced for one Q7 text (``QueryOutcome.to_json`` without ``replayed``)."""

    task: str
    question: str
    status: str
    queries: list[str]
    call_key: str | None
    raw_output: str | None
    error_kind: str | None
    error: str | None


@dataclass(frozen=True)
class RetrieverVariant:
    """Provenance of a variant that ranks with another retriever (embedding, hybrid, BM25)."""

    retriever: str
    embedder: ModelDescription | None = field(default=None, metadata=optional_key())
    rrf_k: int | None = field(default=None, metadata=optional_key())
    subset: list[str] | None = field(default=None, metadata=optional_key())  # the questions it ran on


@dataclass(frozen=True)
class LLMVariant:
    """Provenance of a variant whose queries an LLM wrote (rewrite, split)."""

    llm: LLMDescription


@dataclass(frozen=True)
class Strata:
    """The questions a reranker ran on: those the dense Top-k misses a piece of, and a sample of the rest."""

    misses: list[str]
    sample: list[str]


@dataclass(frozen=True)
class RerankerVariant:
    """Provenance of a reranker variant; the interpolated one adds the weight grid and each question's weight."""

    reranker: NestedModelDescription
    questions: str  # "all" or "misses+equal"
    strata: Strata | None  # None: every question
    grid: list[float] | None = field(default=None, metadata=optional_key())
    weights: dict[str, dict[str, float]] | None = field(default=None, metadata=optional_key())  # lang -> qid -> w


VariantProvenance = RetrieverVariant | LLMVariant | RerankerVariant


@dataclass(frozen=True)
class VariantResult:
    """One variant of a mechanism run, as stored (see ``run_mechanism``).

    The keys after ``status`` are stored only when they say something: failures and the questions compared
    on where some questions failed or the variant ran on a subset, the LLM's calls for an LLM variant, and
    the provenance of a variant that has one.
    """

    name: str
    description: str
    evidence_k: int  # the chunks it sends to generation
    benchmark_languages: list[str]
    notes: list[str]
    q7: Q7Ranks
    q7_ties: dict[str, dict[str, list[str]]]  # phrasing -> language -> pieces tied at the Top-10 cut
    benchmark: dict[str, dict[str, MechanismComparison]]  # language -> metric -> comparison
    status: str  # "ran", "partial" (some calls failed) or "failed"
    q7_failures: dict[str, dict[str, str]] = field(  # phrasing -> language -> why it failed
        default_factory=dict, metadata=optional_key())
    failures: dict[str, FailedCalls] = field(default_factory=dict, metadata=optional_key())  # by language
    compared_on: dict[str, int] = field(  # language -> questions, where fewer than all were ranked
        default_factory=dict, metadata=optional_key())
    llm_calls: LLMCalls | None = field(default=None, metadata=optional_key())
    q7_llm_outputs: dict[str, QueryOutput] | None = field(default=None, metadata=optional_key())  # by Q7 text
    provenance: VariantProvenance | None = field(default=None, metadata=optional_key())

    def weighted_back(self, n_answerable: int) -> list[dict[str, Scalar]]:
        """For a variant run on a stratified sample (every baseline miss, and a random draw from the rest): each
        comparison's difference weighted back to the ``n_answerable`` questions. A miss counts once; each sampled
        other question stands for (others / sampled) of them. A point estimate (the interval is the sample's).
        Empty for a variant run on every question; a language where some question failed is left out (its
        differences no longer line up with the strata)."""
        strata = self.provenance.strata if isinstance(self.provenance, RerankerVariant) else None
        if strata is None or not strata.sample:
            return []
        ids, misses = sorted(strata.misses + strata.sample), set(strata.misses)
        weight = (n_answerable - len(misses)) / len(strata.sample)
        return [{"variant": self.name, "language": lang, "metric": metric, "sample": len(ids),
                 "baseline misses in it": len(misses), "diff on the sample": c.diff,
                 f"weighted back to {n_answerable}": round(sum(d * (1.0 if q in misses else weight)
                                                                for q, d in zip(ids, c.diffs, strict=True))
                                                            / n_answerable, 4)}
                for lang, metrics in self.benchmark.items() if lang not in self.failures
                for metric, c in metrics.items() if len(c.diffs) == len(ids)]

    def label(self, mechanism: str) -> str:
        """``mechanism: variant``, with the model that produced it for LLM variants."""
        p = self.provenance
        model = p.llm.model if isinstance(p, LLMVariant) else (
            p.reranker["revision"] if isinstance(p, RerankerVariant) and p.reranker["backend"] == "llm_yes_no"
            else None)
        return f"{mechanism}: {self.name}" + (f" ({model})" if model else "")


@dataclass(frozen=True)
class BaselineFigures:
    """The baseline as the run compared with it: Q7's piece ranks and each metric's mean, per language."""

    q7: Q7Ranks
    benchmark: dict[str, dict[str, float]]  # language -> metric -> mean


@dataclass(frozen=True)
class BaselineProvenance:
    """The baseline's retriever and embedder (``Workbench.provenance``), and the top-k the run compared at."""

    retriever: str
    embedder: ModelDescription
    k: int


@dataclass(frozen=True)
class LLMSettings(LLMDescription):
    """The LLM a mechanism's variants use, with its reply cap and temperature."""

    max_tokens: int
    temperature: float


@dataclass(frozen=True)
class MechanismProvenance:
    """What a mechanism run compared with and how: the baseline, the bootstrap, the declared parameters, the
    Holm family; the LLM (for LLM mechanisms) and which rerankers are on this machine (the reranker)."""

    baseline: BaselineProvenance
    n_boot: int
    seed: int
    ci_percent: int
    n_answerable: int
    languages: list[str]
    parameters: dict[str, Parameter]
    claims: FamilySummary
    llm: LLMSettings | None = field(default=None, metadata=optional_key())
    rerankers: dict[str, bool] | None = field(default=None, metadata=optional_key())  # name -> here


@dataclass(frozen=True)
class Q7Row(PieceColumns[int | None]):
    """One row of the Q7 table: a variant (or the baseline) on one phrasing and language."""

    variant: str
    phrasing: str
    language: str
    C1: int | None
    C2: int | None
    C3: int | None
    C4: int | None
    in_top_10: str = field(metadata=json_key("in top 10"))  # "2/4", or "failed (<kind>)"
    evidence_k: int = field(metadata=json_key("evidence k"))
    in_evidence: str = field(metadata=json_key("in evidence"))


@dataclass(frozen=True)
class BenchmarkRow:
    """One row of the whole-benchmark table: a variant's comparison on one metric, or its failed calls."""

    variant: str
    language: str
    metric: str
    baseline: float | None
    mechanism: float | None
    diff: float | None
    ci95: str = field(metadata=json_key("95% CI"))
    adjusted_holm: str | None = field(metadata=json_key("adjusted (Holm)"))


@dataclass(frozen=True)
class MechanismResult(ExperimentResult):
    """``06_q7_mechanism-<mechanism>``: one mechanism's variants against the baseline (one shape for every run).

    Returned by :func:`rag_lib.experiments.mechanisms.run.run_mechanism`.
    """

    mechanism: str
    status: str  # "ran" or "unavailable"
    reason: str
    variants: list[VariantResult]
    baseline: BaselineFigures
    unavailable: dict[str, str]  # model -> why it is not on this machine
    provenance: MechanismProvenance
    q7_rows: list[Q7Row]  # the report's tables
    benchmark_rows: list[BenchmarkRow]
    variants_text: str

    @property
    def ran(self) -> bool:
        return self.status == "ran"

    @property
    def k(self) -> int:
        """The top-k the run compared at (its baseline's)."""
        return self.provenance.baseline.k

    @property
    def n_answerable(self) -> int:
        return self.provenance.n_answerable


def mechanism_results(root: Path | None = None) -> tuple[dict[str, MechanismResult], list[str]]:
    """The declared mechanism runs that have results (run name → result, in name order), and the names of
    those that have none."""
    found: dict[str, MechanismResult] = {}
    missing: list[str] = []
    for run in sorted(EXPERIMENT.runs(), key=lambda r: r.name):  # the order the summary tables have always had
        stored = MechanismResult.find(run.name, root)
        if stored is None:
            missing.append(run.name)
        else:
            found[run.name] = stored
    return found, missing


EXPERIMENT = Experiment(
    "06_q7_mechanism", MechanismResult,
    reads=("01_embedding_bakeoff",),
    varies=("mechanism", ("topk", "dedup_mmr", "reranker", "query_split", "query_rewrite", "embedding", "hybrid")),
)
