"""``11_chunking``'s stored result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_lib.results.store import ExperimentResult, MissingResult


@dataclass(frozen=True)
class ChunkingResult(ExperimentResult):
    """``11_chunking``: each strategy against the structural baseline, and the context cut.

    Returned by :func:`rag_lib.experiments.chunking.run_chunking`.
    """

    tables: dict[str, Any]
    languages: list[str]
    strategies: list[dict[str, Any]]
    metric_rows: list[dict[str, Any]]
    comparison_rows: list[dict[str, Any]]
    q7_rows: list[dict[str, Any]]
    gold_span_differences: int
    n_answerable: int
    context_rows: list[dict[str, Any]]
    priced_model: str
    price: dict[str, Any]
    halo: dict[str, Any]
    provenance: dict[str, Any]

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
            raise MissingResult(f"the results of 11_chunking hold {hits or 'no'} hit@k column(s) in metric_rows, "
                                "not one; re-run 11_chunking.")
        return int(hits[0].removeprefix("hit@"))

    def context_cut(self, lang: str) -> tuple[dict[str, Any], dict[str, Any], float]:
        """The Top-5 and Top-20 context rows of ``lang`` and the share of tokens the Top-5 saves (read by
        11's findings and by the summary)."""
        small, large = (next(r for r in self.context_rows if r["language"] == lang and r["k"] == k) for k in (5, 20))
        return small, large, 1 - small["tokens per question"] / large["tokens per question"]
