"""``W2_compare``: where retrieval fails on this workbook's corpus beside other workbooks' (layer counts read from
each one's ``W1_diagnosis``; the comparison is derived when rendered, :mod:`rag_lib.presentation.compare`)."""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.core.config import RESULTS_DIR
from rag_lib.presentation.workbook import LAYERS, layer_counts, short
from rag_lib.results.compare import EXPERIMENT as W2
from rag_lib.results.compare import LayerCount, WorkbookComparisonResult
from rag_lib.results.workbook import EXPERIMENT as W1
from rag_lib.results.workbook import WorkbookDiagnosisResult


def run_comparison(workbook: str, others: Sequence[str]) -> WorkbookComparisonResult:
    """Each workbook's W1 layer counts: this one's from this run's results, the others' from ``results/<other>/``."""
    diagnoses = [WorkbookDiagnosisResult.read(W1.name, needed_by=W2.name)]
    diagnoses += [WorkbookDiagnosisResult.read(W1.name, RESULTS_DIR / other,
                                               needed_by=f"{W2.name} (run `make reproduce WORKBOOK={other}`)")
                  for other in others]
    counts = []
    for d in diagnoses:
        for (configuration, lang), by_layer in sorted(layer_counts(d).items()):
            n = sum(by_layer.values())
            counts += [LayerCount(d.workbook, short(configuration), lang, layer, by_layer[layer], n)
                       for layer in LAYERS]
    ks = {d.k for d in diagnoses}
    if len(ks) > 1:
        raise ValueError(f"the workbooks compared ({[d.workbook for d in diagnoses]}) use different Top-k "
                         f"{sorted(ks)}; a layer is only comparable at the same k: set one k in their workbook.yaml")
    return WorkbookComparisonResult([workbook, *others], {d.workbook: d.title for d in diagnoses}, ks.pop(), counts)
