"""``W2_compare``'s stored result: each workbook's layer counts per configuration and language, long.

The comparison (shares, differences, their adjusted intervals, the Findings) is derived when the report is
rendered (:mod:`rag_lib.presentation.compare`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.results.runs import Experiment
from rag_lib.results.store import ExperimentResult


@dataclass(frozen=True)
class LayerCount:
    workbook: str
    configuration: str  # short: bm25, dense, hybrid
    language: str
    layer: str
    count: int
    of: int  # the answerable questions of that workbook, configuration and language


@dataclass(frozen=True)
class WorkbookComparisonResult(ExperimentResult):
    workbooks: list[str]  # this workbook first
    titles: dict[str, str]
    k: int
    counts: list[LayerCount]


EXPERIMENT = Experiment("W2_compare", WorkbookComparisonResult, reads=("W1_diagnosis",), per_workbook=True)
