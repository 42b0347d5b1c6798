"""Declaring a mechanism: its variants, the context its builder gets, and the registry of declared names."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_lib.benchmark import Q7_PHRASINGS
from rag_lib.core.config import RunConfig, settings
from rag_lib.core.errors import WorkbookError
from rag_lib.generation import get_task_generator
from rag_lib.generation.query_ops import QueryLLM, QueryOutcome
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.mechanism import LLMCalls, LLMSettings, Parameter, QueryOutput, VariantProvenance
from rag_lib.retrieval import Ranking


class RankFailed(WorkbookError):
    """A variant could not rank a question (an LLM call failed or has no record): reported as failed,
    never replaced by the baseline's ranking."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Variant:
    """One way a mechanism changes retrieval.

    ``rank`` maps a question text to a full ranking; ``evidence_k`` is how many chunks of it go
    to generation (``None``: the workbench's ``config.k``, resolved when the variant is measured);
    ``languages`` limits the benchmark comparison (``None``: every language run);
    ``q7_phrasings`` are the Q7 phrasings it is applied to.
    """

    name: str
    description: str
    rank: Callable[[str], Ranking]
    evidence_k: int | None = None
    languages: tuple[str, ...] | None = None
    q7_phrasings: tuple[str | None, ...] = Q7_PHRASINGS
    notes: list[str] = field(default_factory=list)
    provenance: VariantProvenance | None = None
    llm: LLMQueries | None = None
    question_ids: frozenset[str] | None = None  # a stated subset of the benchmark (None: every question)


class LLMQueries:
    """Turns a question into queries with an LLM task, remembering every outcome (for the report).

    A failed call (non-JSON, schema-invalid, backend error, no record) raises :class:`RankFailed`:
    the question is reported as failed for this variant, never ranked as the original question.
    """

    def __init__(self, qllm: QueryLLM, task: str) -> None:
        self.qllm = qllm
        self.task = task
        self.outcomes: dict[str, QueryOutcome] = {}

    def __call__(self, text: str) -> list[str]:
        if text not in self.outcomes:
            self.outcomes[text] = self.qllm.run(self.task, text)
        outcome = self.outcomes[text]
        if outcome.status != "ok":
            raise RankFailed(str(outcome.error_kind), str(outcome.error))
        return list(outcome.queries)

    def summary(self) -> LLMCalls:
        kinds: dict[str, int] = {}
        for o in self.outcomes.values():
            key = "ok" if o.status == "ok" else str(o.error_kind)
            kinds[key] = kinds.get(key, 0) + 1
        return LLMCalls(calls=len(self.outcomes), by_status=dict(sorted(kinds.items())))

    def outputs(self, texts: Sequence[str]) -> dict[str, QueryOutput]:
        """The outcome of each of ``texts`` that was asked.

        ``replayed`` is left out: it says how this run got the reply, not what the reply was, and
        keeping it would make a replayed re-run differ from the recording run.
        """
        return {t: QueryOutput(task=o.task, question=o.question, status=o.status, queries=list(o.queries),
                               call_key=o.call_key, raw_output=o.raw_output, error_kind=o.error_kind, error=o.error)
                for t in dict.fromkeys(texts) if (o := self.outcomes.get(t)) is not None}


@dataclass(frozen=True)
class FromSettings:
    """A mechanism parameter read from ``config.yaml`` when the mechanism runs (``"retrieval.rrf_k"``).

    A path that is a field of :class:`~rag_lib.core.config.RunConfig` is read from the run's configuration
    (the workbench's), so an override of it reaches the mechanism too.
    """

    path: str

    def resolve(self, config: RunConfig | None = None) -> Any:
        field_name = RUN_CONFIG_PATHS.get(self.path)
        if field_name is not None:
            return getattr(config if config is not None else RunConfig.from_settings(), field_name)
        node: Any = settings()
        for part in self.path.split("."):
            node = node[part]
        return node


# config.yaml paths that RunConfig holds -> its field (the run's value wins over the file's)
RUN_CONFIG_PATHS = {"retrieval.top_k": "k", "retrieval.rrf_k": "rrf_k",
                    "retrieval.rerank_candidates": "rerank_candidates", "embedding.default": "embedder"}


@dataclass
class BuildContext:
    """What a mechanism's builder gets: the workbench and the baseline; it notes there the LLM its variants use
    and which rerankers are on this machine (both go into the run's provenance)."""

    wb: Workbench
    base: BaselineDense
    use_llm: bool
    llm_languages: Sequence[str]
    llm: LLMSettings | None = None
    rerankers: dict[str, bool] | None = None


Builder = Callable[..., tuple[list["Variant"], dict[str, str]]]


@dataclass(frozen=True)
class MechanismSpec:
    """A declared mechanism: its builder and the parameters it is built with (recorded in provenance)."""

    name: str
    description: str
    build: Builder
    parameters: dict[str, Any]
    casebook: bool = True  # notebook 06 runs it on the casebook (False: it needs what only an imported corpus has)

    def resolved_parameters(self, config: RunConfig | None = None) -> dict[str, Parameter]:
        """The parameters with settings read (from ``config`` where it holds them) and tuples as lists (as
        they appear in ``results.json``)."""
        return {k: (v.resolve(config) if isinstance(v, FromSettings) else list(v) if isinstance(v, tuple) else v)
                for k, v in self.parameters.items()}

    def variants(self, ctx: BuildContext) -> tuple[list[Variant], dict[str, str]]:
        """The variants that can run here, and the reason for each model that cannot."""
        params = {k: (v.resolve(ctx.wb.config) if isinstance(v, FromSettings) else v)
                  for k, v in self.parameters.items()}
        return self.build(ctx, **params)


MECHANISM_REGISTRY: dict[str, MechanismSpec] = {}


def mechanism(name: str, description: str, casebook: bool = True, **parameters: Any) -> Callable[[Builder], Builder]:
    """Declare a mechanism: ``build(ctx, **parameters)`` returns its variants and, per model that is
    not on this machine, why. The parameters are explicit here and go into each run's provenance.

    >>> @mechanism("toy", "the baseline under another name", k=5)       # doctest: +SKIP
    ... def toy(ctx, k): return [Variant("same", "baseline", ctx.base, evidence_k=k)], {}
    """
    def register(build: Builder) -> Builder:
        if name in MECHANISM_REGISTRY:
            raise WorkbookError(f"mechanism {name!r} is declared twice; pick another name.")
        MECHANISM_REGISTRY[name] = MechanismSpec(name, description, build, dict(parameters), casebook)
        return build
    return register


def get_mechanism(name: str) -> MechanismSpec:
    """The declared mechanism ``name``; an unknown name is an error that lists the declared ones."""
    try:
        return MECHANISM_REGISTRY[name]
    except KeyError:
        raise WorkbookError(f"unknown mechanism {name!r}; declared: {', '.join(MECHANISM_REGISTRY)}. "
                            "Declare it in a module of rag_lib/experiments/mechanisms/catalog/ (@mechanism).") from None


class BaselineDense:
    """The baseline (dense, default embedder), with each question's vector and ranking kept.

    Every variant starts from the same few hundred question texts; embedding each once keeps a
    mechanism run to seconds (the rankings are identical either way).
    """

    def __init__(self, wb: Workbench) -> None:
        self.config = wb.config  # the run's choices, for variants built on this baseline
        self.retriever = wb.retriever("dense")
        self.embedder = wb.embedder()
        self._vectors: dict[str, np.ndarray] = {}
        self._rankings: dict[str, Ranking] = {}

    def vector(self, text: str) -> np.ndarray:
        if text not in self._vectors:
            self._vectors[text] = np.asarray(self.embedder.embed_queries([text]), dtype=np.float32).reshape(-1)
        return self._vectors[text]

    def __call__(self, text: str) -> Ranking:
        if text not in self._rankings:
            scores = self.retriever.scores_of_vector(self.vector(text))
            self._rankings[text] = Ranking.from_scores(self.retriever.ids, scores, source=self.retriever.name)
        return self._rankings[text]


def query_llm(ctx: BuildContext, task: str, max_tokens: int) -> QueryLLM | None:
    """The LLM for ``task`` (``generation.llm_tasks``), noted in provenance; ``None`` when LLMs are off."""
    if not ctx.use_llm:
        return None
    qllm = QueryLLM(get_task_generator(task, max_tokens=max_tokens))  # type: ignore[arg-type]
    ctx.llm = LLMSettings(**qllm.describe(), max_tokens=max_tokens, temperature=qllm.generator.temperature)
    return qllm
