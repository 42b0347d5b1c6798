"""Provenance shapes that several results store: what ranked (retriever, embedder), which LLM, a Holm family."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rag_lib.results.typed_json import Scalar, decode, optional_key

# A model's description as its backend gives it (``Embedder.describe()``, a reranker's ``provenance``): free-form,
# its keys depend on the backend (an engine, a tokenizer …); a reranker nests its local model's description.
ModelDescription = dict[str, Scalar]
NestedModelDescription = dict[str, Scalar | dict[str, Scalar]]


@dataclass(frozen=True)
class RetrieverProvenance:
    """What produced a ranking (``Workbench.provenance``): the retriever and, for dense and hybrid, the embedder."""

    retriever: str
    # absent for a retriever without an embedder (bm25), so a stored BM25 provenance is {"retriever": "bm25"}
    embedder: ModelDescription | None = field(default=None, metadata=optional_key())


def model_name(description: ModelDescription) -> str:
    """A model as the reports name it in prose: its Hugging Face id without the organisation
    (``intfloat/multilingual-e5-small`` -> ``multilingual-e5-small``)."""
    return str(description["hf_id"]).rsplit("/", 1)[-1]


def retriever_provenance(described: Mapping[str, Any]) -> RetrieverProvenance:
    """``Workbench.provenance(key)`` typed; raises :class:`~rag_lib.results.typed_json.ShapeError` on another
    shape, as reading a stored one would."""
    return decode(RetrieverProvenance, dict(described), "provenance")


@dataclass(frozen=True)
class LLMDescription:
    """An LLM as a query operation or a run names it (``QueryLLM.describe()``)."""

    backend: str
    model: str
    model_version: str | None
    prompts_version: int

