"""``13_ann``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_lib.evaluation.claims import Judgement
from rag_lib.results.comparisons import FamilySummary
from rag_lib.results.pieces import PieceColumns
from rag_lib.results.provenance import ModelDescription
from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult
from rag_lib.results.typed_json import json_key


@dataclass(frozen=True)
class HnswSetting:
    """One HNSW setting of ``ann.settings`` (config.yaml)."""

    m: int
    ef_construction: int
    ef_search: int

    @property
    def label(self) -> str:
        """``m=16, ef_construction=64, ef_search=40``: the setting as the tables name it."""
        return f"m={self.m}, ef_construction={self.ef_construction}, ef_search={self.ef_search}"

    @property
    def key(self) -> str:
        """``m16-efc64-ef40``: the setting as a key of ``results.json``."""
        return f"m{self.m}-efc{self.ef_construction}-ef{self.ef_search}"


@dataclass(frozen=True)
class RecallRow:
    """A setting on one batch and language: recall of the exact Top-10, over its builds."""

    batch: str
    setting: str  # HnswSetting.label
    language: str
    recall: float = field(metadata=json_key("recall@10 of exact"))  # the mean over the builds
    lowest_build: float = field(metadata=json_key("lowest build"))
    highest_build: float = field(metadata=json_key("highest build"))
    builds: int


@dataclass(frozen=True)
class AnnComparisonRow:
    """HNSW against exact search on one gold metric (a setting on one batch and language): the paired
    difference and its judgement in the notebook's Holm family."""

    batch: str
    setting: str
    language: str
    metric: str
    exact: float
    hnsw: float
    diff: float = field(metadata=json_key("hnsw − exact"))
    ci95: tuple[float, float]
    ci_text: str = field(metadata=json_key("95% CI"))
    p: float
    diffs: list[float]  # per question, averaged over the builds
    changed: int
    in_family: bool
    p_holm: float | None
    adjusted: tuple[float, float] | None
    adjusted_confidence: float | None
    adjusted_cell: str = field(metadata=json_key("adjusted (Holm)"))

    def judgement(self, alpha: float) -> Judgement:
        """The row's judgement: the setting as subject, "batch, language" as scope."""
        return Judgement(subject=self.setting, scope=f"{self.batch}, {self.language}", metric=self.metric,
                         diff=self.diff, changed=self.changed, in_family=self.in_family, p_holm=self.p_holm,
                         adjusted=self.adjusted, adjusted_confidence=self.adjusted_confidence, alpha=alpha)


@dataclass(frozen=True)
class AnnQ7Row(PieceColumns[str]):
    """Q7's first ranks under a setting (or exact search) on one batch and language: a rank, or its span over
    the builds ("–": no build returned the piece)."""

    batch: str
    setting: str  # HnswSetting.label, or "exact"
    language: str
    C1: str
    C2: str
    C3: str
    C4: str


@dataclass(frozen=True)
class AnnSettings:
    """``ann`` of config.yaml: the batches, how often each setting's index is built, the settings."""

    batches: list[str]
    builds: int
    settings: list[HnswSetting]


@dataclass(frozen=True)
class AnnProvenance:
    retriever: str
    embedder: ModelDescription
    n_boot: int
    seed: int
    claims: FamilySummary
    ann: AnnSettings
    store: str  # the Postgres and pgvector versions
    recall_k: int
    hnsw_returns: str


@dataclass(frozen=True)
class AnnResult(ExperimentResult):
    """``13_ann``: HNSW recall and metric cost against exact search, per setting and batch.

    Returned by :func:`rag_lib.experiments.ann.run_ann`.
    """

    languages: list[str]
    settings: list[HnswSetting]
    batches: list[str]
    rows: list[RecallRow]
    comparison_rows: list[AnnComparisonRow]
    q7_rows: list[AnnQ7Row]
    by_setting: dict[str, dict[str, dict[str, float]]]  # batch -> HnswSetting.key -> language -> recall
    provenance: AnnProvenance


EXPERIMENT = Experiment(
    "13_ann", AnnResult,
    checked={
        "by_setting.cloudflare-docs-2026-11-30.m4-efc16-ef10.zh": 0.05,
        "by_setting.cloudflare-docs-2026-11-30.m4-efc16-ef10.en": 0.05,
        "by_setting.cloudflare-docs-2026-11-30.m8-efc32-ef20.zh": 0.02,
        "by_setting.cloudflare-docs-2026-11-30.m8-efc32-ef20.en": 0.02,
        "by_setting.cloudflare-docs-2026-11-30.m16-efc64-ef40.zh": 0.005,
        "by_setting.cloudflare-docs-2026-11-30.m16-efc64-ef40.en": 0.005,
        "by_setting.cloudflare-docs-2026-11-30.m16-efc64-ef100.zh": 0,
        "by_setting.cloudflare-docs-2026-11-30.m16-efc64-ef100.en": 0,
        "by_setting.cloudflare-docs-wide-2026-11-30.m4-efc16-ef10.zh": 0.05,
        "by_setting.cloudflare-docs-wide-2026-11-30.m4-efc16-ef10.en": 0.05,
        "by_setting.cloudflare-docs-wide-2026-11-30.m8-efc32-ef20.zh": 0.02,
        "by_setting.cloudflare-docs-wide-2026-11-30.m8-efc32-ef20.en": 0.02,
        "by_setting.cloudflare-docs-wide-2026-11-30.m16-efc64-ef40.zh": 0.005,
        "by_setting.cloudflare-docs-wide-2026-11-30.m16-efc64-ef40.en": 0.005,
        "by_setting.cloudflare-docs-wide-2026-11-30.m16-efc64-ef100.zh": 0,
        "by_setting.cloudflare-docs-wide-2026-11-30.m16-efc64-ef100.en": 0,
    },
)
