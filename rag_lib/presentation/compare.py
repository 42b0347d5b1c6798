"""``W2_compare``'s report, derived from the stored layer counts: each workbook's layer shares side by side, and
the difference in the share of questions with every piece in the Top-k, with intervals adjusted for how many
such differences the page states.

The workbooks hold different questions, so each difference is between two independent proportions: Newcombe's
hybrid score interval (from the two Wilson intervals), Bonferroni-adjusted over every (configuration, language,
other workbook) difference shown. It says where failures are more common, not why: the corpora, the questions
and their labellers all differ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any

from rag_lib.core.text import LANGUAGE_NAMES
from rag_lib.evaluation.stats import count_text, signed_text, wilson
from rag_lib.presentation.figures.gates import where_it_failed
from rag_lib.presentation.workbook import LAYER_COLOURS, LAYERS
from rag_lib.results.compare import LayerCount, WorkbookComparisonResult
from rag_lib.results.local_llm_choice import FailureRow

ALPHA = 0.05


def _count(result: WorkbookComparisonResult, workbook: str, configuration: str, lang: str,
           layer: str = LAYERS[0]) -> LayerCount | None:
    return next((c for c in result.counts if (c.workbook, c.configuration, c.language, c.layer)
                 == (workbook, configuration, lang, layer)), None)


def newcombe(a: LayerCount, b: LayerCount, z: float) -> tuple[float, float, float]:
    """``a``'s share − ``b``'s, with Newcombe's hybrid score interval at ``z``."""
    p1, p2 = a.count / a.of, b.count / b.of
    (l1, u1), (l2, u2) = wilson(a.count, a.of, z), wilson(b.count, b.of, z)  # type: ignore[misc]
    diff = p1 - p2
    return diff, diff - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), diff + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def difference_rows(result: WorkbookComparisonResult) -> list[dict[str, Any]]:
    """For each configuration and language both workbooks ran: every piece in the Top-k, here − there."""
    this, others = result.workbooks[0], result.workbooks[1:]
    keys = sorted({(c.configuration, c.language) for c in result.counts if c.workbook == this})
    pairs = [(other, cfg, lang) for other in others for cfg, lang in keys
             if _count(result, this, cfg, lang) and _count(result, other, cfg, lang)]
    z = NormalDist().inv_cdf(1 - ALPHA / (2 * max(1, len(pairs))))
    rows = []
    for other, cfg, lang in pairs:
        mine, theirs = _count(result, this, cfg, lang), _count(result, other, cfg, lang)
        assert mine is not None and theirs is not None
        diff, low, high = newcombe(mine, theirs, z)
        rows.append({"configuration": cfg, "language": lang, this: count_text(mine.count, mine.of),
                     other: count_text(theirs.count, theirs.of), f"{this} − {other}": signed_text(diff),
                     "adjusted 95% interval": f"[{signed_text(low)}, {signed_text(high)}]",
                     "differs": low > 0 or high < 0})
    return rows


def findings(result: WorkbookComparisonResult) -> list[str]:
    if len(result.workbooks) < 2:
        return [f"{result.titles[result.workbooks[0]]} has no other workbook to compare with (compare_with in its "
                "workbook.yaml)."]
    this, rows = result.workbooks[0], difference_rows(result)
    out = []
    for row in rows:
        other = next(k for k in row if k in result.workbooks and k != this)
        lower = row[f"{this} − {other}"].startswith("-")
        verdict = ("about as often (the interval includes 0) on {a} as on {b}" if not row["differs"] else
                   ("less" if lower else "more") + " often on {a} than on {b}")
        shown = verdict.format(a=f"{result.titles[this]} ({row[this]})", b=f"{result.titles[other]} ({row[other]})")
        out.append(f"{row['configuration']}, {LANGUAGE_NAMES[row['language']]} questions: every gold piece reaches the "
                   f"Top-{result.k} {shown}: {row[f'{this} − {other}']} {row['adjusted 95% interval']} (Newcombe, "
                   f"Bonferroni over {len(rows)} differences).")
    out.append("Caveat: different corpora, questions and labellers, so a difference says where failures are more "
               "common, not why; each workbook has a few dozen answerable questions, so the intervals are wide.")
    return out


def layers_figure(result: WorkbookComparisonResult, path: Path) -> Path:
    rows = [FailureRow(c.workbook, c.language, c.configuration, c.layer, c.count, c.of) for c in result.counts]
    return where_it_failed(rows, LAYERS, path, title="Where retrieval fails, corpus beside corpus",
                           xlabel="share of the answerable questions, by their worst piece's rank",
                           colours=LAYER_COLOURS)


def report_markdown(result: WorkbookComparisonResult, findings: Sequence[str]) -> str:
    from rag_lib.presentation.tables import Table

    lines = [f"# W2 · Where retrieval fails: {' beside '.join(result.titles[w] for w in result.workbooks)}", "",
             "## Findings", "", *[f"- {line}" for line in findings], "",
             "![Layer shares per workbook](layers.png)"]
    if len(result.workbooks) > 1:
        lines += ["", f"## Every piece in the Top-{result.k}, corpus against corpus", "",
                  Table(difference_rows(result)).to_markdown()]
    return "\n".join(lines) + "\n"
