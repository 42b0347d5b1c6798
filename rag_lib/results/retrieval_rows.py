"""A stored row of one ranking, shared by the runs that show it: its Top-k (what produced it:
:class:`rag_lib.results.provenance.RetrieverProvenance`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TopRow:
    """One chunk of a Top-k, as ``Workbench.top_rows`` gives it: rank, chunk id, page, heading path, cosine."""

    rank: int
    chunk: str
    page: str
    heading: str  # "A > B", "" for a page's lead
    score: float
