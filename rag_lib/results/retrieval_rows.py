"""Stored rows of one ranking, shared by the runs that show it: its Top-k and what produced it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_lib.results.typed_json import Scalar


@dataclass(frozen=True)
class TopRow:
    """One chunk of a Top-k, as ``Workbench.top_rows`` gives it: rank, chunk id, page, heading path, cosine."""

    rank: int
    chunk: str
    page: str
    heading: str  # "A > B", "" for a page's lead
    score: float


@dataclass(frozen=True)
class RetrievalProvenance:
    """What produced a ranking (``Workbench.provenance``): the retriever and, for a dense or hybrid one, the
    embedder as it describes itself (free-form: each backend names its own settings)."""

    embedder: dict[str, Scalar] | None  # None: a retriever without an embedder (bm25)
    retriever: str

    @classmethod
    def of(cls, described: Mapping[str, Any]) -> RetrievalProvenance:
        """From ``Workbench.provenance(key)``, which names an embedder only when the retriever has one."""
        return cls(embedder=described.get("embedder"), retriever=described["retriever"])
