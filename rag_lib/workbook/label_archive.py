"""Figures of an earlier label version, kept so a relabelling can be read as "before → after".

Before the gold labels change, :func:`archive_label_version` copies the label-dependent figures out of
the current results (01's rows, 08's Q7 tables) into :data:`LABEL_ARCHIVE`; afterwards
:func:`relabel_rows` shows them beside the new run's (08's "before and after the relabelling").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rag_lib.config import RESULTS_DIR, results_dir
from rag_lib.evaluation import HIT
from rag_lib.io import write_json
from rag_lib.workbook.baseline import baseline_label
from rag_lib.workbook.experiment_results import BakeoffResult, SummaryResult
from rag_lib.workbook.report import markdown_table
from rag_lib.workbook.results import PIECES

# Figures of label version 1, copied from the results.json files a run produced with it.
LABEL_ARCHIVE = RESULTS_DIR / "archive" / "labels-v1.json"


def _arrow(before: Any, after: Any) -> str:
    return f"{after}" if before == after else f"{before} → {after}"


def relabel_rows(bakeoff: BakeoffResult | None, archive: Path = LABEL_ARCHIVE) -> dict[str, Any]:
    """Label-dependent figures before (the archived label version) and after (the current results).

    ``metrics``: hit@5 and coverage@10 of every bake-off configuration per language; ``q7``: the
    first rank of each Q7 piece per configuration, phrasing and language; ``closing``: the default
    configuration's rows per language. Both sides are read from results.json files a run produced;
    ``bakeoff`` is 01's (``None`` when it has not run).
    """
    if bakeoff is None or not archive.is_file():
        return {"available": False, "archive": archive.name}
    before = json.loads(archive.read_text(encoding="utf-8"))

    def key(r: dict[str, Any]) -> tuple[str, str, str]:
        return r["configuration"], r.get("phrasing", ""), r["language"]

    old_metrics = {key(r): r for r in before["summary_rows"]}
    metrics = [{"configuration": r["configuration"], "language": r["language"],
                **{m: _arrow(f"{old_metrics[key(r)][m]:.3f}" if key(r) in old_metrics else "—", f"{r[m]:.3f}")
                   for m in (HIT.name, "coverage@10")}} for r in bakeoff.summary_rows]
    old_q7 = {key(r): r for r in before["q7_rows"]}
    q7 = [{"configuration": r["configuration"], "phrasing": r["phrasing"], "language": r["language"],
           **{p: _arrow(old_q7.get(key(r), {}).get(p, "—"), r.get(p)) for p in PIECES}} for r in bakeoff.q7_rows]
    default = baseline_label()
    closing = {lang: {"baseline": next(m for m in metrics if m["configuration"] == default and m["language"] == lang),
                      "q7": {r["phrasing"]: r for r in q7 if r["configuration"] == default and r["language"] == lang}}
               for lang in sorted({r["language"] for r in metrics})}
    return {"available": True, "archive": archive.name, "before_commit": before["commit"],
            "before_note": before["note"], "metrics": metrics, "q7": q7, "closing": closing,
            "metrics_table": markdown_table(metrics), "q7_table": markdown_table(q7)}


def archive_label_version(commit: str, note: str, root: Path | None = None,
                          out: Path = LABEL_ARCHIVE) -> dict[str, Any]:
    """Copy the figures that depend on the gold labels out of the current results, before a relabelling.

    Kept: the baseline rows of 01 (every configuration, both languages), the Q7 rows of 01, and the
    Q7 side-by-side tables of 08. ``commit`` names the commit whose results these are; ``note`` says
    which label version produced them. Nothing is recomputed: values are copied verbatim.
    """
    root = root or results_dir()
    bakeoff, summary = BakeoffResult.find("01_embedding_bakeoff", root), SummaryResult.find("08_summary", root)
    if bakeoff is None or summary is None:
        raise FileNotFoundError(f"{root}: 01_embedding_bakeoff and 08_summary results are needed; run them first")
    payload = {"commit": commit, "note": note, "summary_rows": bakeoff.summary_rows,
               "q7_rows": bakeoff.q7_rows, "side_by_side": summary.side_by_side}
    write_json(out, payload)
    return payload
