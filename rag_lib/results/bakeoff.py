"""``01_embedding_bakeoff``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class BakeoffResult(ExperimentResult):
    """``01_embedding_bakeoff``: means per configuration and language, Q7 piece ranks, layer counts.

    Returned by :func:`rag_lib.experiments.bakeoff.run_bakeoff`.
    """

    k: int
    languages: list[str]
    n_answerable: int
    configurations: list[str]
    configurations_text: str
    unavailable: dict[str, Any]
    unavailable_text: str
    provenance: dict[str, Any]
    summary_rows: list[dict[str, Any]]
    summary_table: str
    plot: dict[str, Any]
    q7_rows: list[dict[str, Any]]
    q7_table: str
    layers: dict[str, Any]
    per_question: dict[str, Any]  # "<configuration> [<lang>]" -> question id -> measure -> value (full precision)
    worst_ranks: dict[str, Any]  # "<configuration> [<lang>]" -> question id -> its worst piece's first rank (None: a
    # piece has no chunk)
    inputs_sha256: str  # the chunks and labels measured (Workbench.inputs_sha256), checked by runs that reuse them
