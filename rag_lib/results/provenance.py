"""Provenance shapes that several results store: what ranked (retriever, embedder), which LLM, a Holm family."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_lib.results.typed_json import Scalar, optional_key

# A model's description as its backend gives it (``Embedder.describe()``, a reranker's ``provenance``): free-form,
# its keys depend on the backend (an engine, a tokenizer …); a reranker nests its local model's description.
ModelDescription = dict[str, Scalar]
NestedModelDescription = dict[str, Scalar | dict[str, Scalar]]


@dataclass(frozen=True)
class RetrieverProvenance:
    """What produced a ranking (``Workbench.provenance``): the retriever and, for dense and hybrid, the embedder."""

    retriever: str
    embedder: ModelDescription | None = field(default=None, metadata=optional_key())


@dataclass(frozen=True)
class LLMDescription:
    """An LLM as a query operation or a run names it (``QueryLLM.describe()``)."""

    backend: str
    model: str
    model_version: str | None
    prompts_version: int


@dataclass(frozen=True)
class ClaimsSummary:
    """A Holm family as stored beside its comparisons (``Family.summary()``)."""

    name: str
    comparisons: int
    fixed: int
    alpha: float
    effects: int
    method: str
