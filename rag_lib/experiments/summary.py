"""The summary: the casebook's side-by-side table and a whole-benchmark table, read from the
other experiments' ``results.json`` (never recomputed, never typed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rag_lib.casebook import published
from rag_lib.config import RESULTS_DIR, results_dir
from rag_lib.io import write_json
from rag_lib.embedding.registry import default_embedder_name
from rag_lib.report import markdown_table

PIECES = ("C1", "C2", "C3", "C4")
METRICS = ("hit@5", "coverage@10", "mrr")
# Figures of an earlier label version, copied from the results.json files a run produced with it
# (see :func:`archive_label_version`); 08 shows them beside the current ones.
LABEL_ARCHIVE = RESULTS_DIR / "archive" / "labels-v1.json"


def _load(name: str, root: Path) -> dict[str, Any] | None:
    path = root / name / "results.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _mechanism_results(root: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(root.glob("06_q7_mechanism-*/results.json"))]


def _baseline_q7(bakeoff: dict[str, Any], lang: str) -> dict[str, Any]:
    label = f"dense:{default_embedder_name()}"
    for row in bakeoff["q7_rows"]:
        if row["configuration"] == label and row["phrasing"] == "original" and row["language"] == lang:
            return {p: row.get(p) for p in PIECES}
    raise KeyError(f"01_embedding_bakeoff has no Q7 row for {label} ({lang}); re-run it")


def side_by_side(lang: str, root: Path | None = None) -> list[dict[str, Any]]:
    """Rows: baseline, each mechanism variant, each recovery suggestion; columns: first rank of C1–C4."""
    root = root or results_dir()
    rows: list[dict[str, Any]] = []
    bakeoff = _load("01_embedding_bakeoff", root)
    if bakeoff:
        rows.append({"row": "baseline (dense, default embedder, original question)", **_baseline_q7(bakeoff, lang)})
    for result in _mechanism_results(root):
        if result.get("status") != "ran":
            rows.append({"row": f"{result['mechanism']}: not run ({result.get('status')})"})
            continue
        for variant in result["variants"]:
            ranks = variant.get("q7", {}).get("original", {}).get(lang)
            if ranks:
                rows.append({"row": f"{result['mechanism']}: {variant['name']}", **{p: ranks.get(p) for p in PIECES}})
    recovery = _load("07_recovery_loop", root)
    if recovery and lang in recovery.get("q7", {}):
        for source, block in recovery["q7"][lang].items():
            for i, entry in enumerate(block.get("ranks", []), 1):
                label = f"recovery ({source}) S{i}: {entry['suggestion']}"
                rows.append({"row": label, **{p: entry.get(p) for p in PIECES}})
    return rows


def benchmark_rows(root: Path | None = None) -> list[dict[str, Any]]:
    """One row per mechanism variant and language: change vs baseline with its 95% interval."""
    root = root or results_dir()
    rows = []
    for result in _mechanism_results(root):
        for variant in result.get("variants", []) if result.get("status") == "ran" else []:
            for lang, metrics in sorted(variant.get("benchmark", {}).items()):
                row: dict[str, Any] = {"mechanism": f"{result['mechanism']}: {variant['name']}", "language": lang}
                for metric in METRICS:
                    m = metrics.get(metric)
                    if m:
                        lo, hi = m["ci95"]
                        change = f"{m['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                        row[metric] = f"{m['baseline']:.3f} → {m['mechanism']:.3f} ({change})"
                rows.append(row)
    return rows


def highlight(rows: list[dict[str, Any]], k: int = 10) -> list[dict[str, Any]]:
    """Mark ranks inside the Top-k in bold (the casebook's green cells)."""
    out = []
    for row in rows:
        marked = dict(row)
        for p in PIECES:
            value = row.get(p)
            if isinstance(value, int) and value <= k:
                marked[p] = f"**{value}**"
            elif value is None and p in row:
                marked[p] = "—"
        out.append(marked)
    return out


def run_summary(languages: tuple[str, ...] = ("zh", "en"), root: Path | None = None) -> dict[str, Any]:
    """Everything the summary notebook shows, as JSON-ready data."""
    root = root or results_dir()
    theirs = published()
    tables = {lang: side_by_side(lang, root) for lang in languages}
    bench = benchmark_rows(root)
    missing = [name for name in ("01_embedding_bakeoff", "05_q7_diagnosis", "07_recovery_loop")
               if not (root / name / "results.json").is_file()]
    if not _mechanism_results(root):
        missing.append("06_q7_mechanism-*")
    casebook_rows = [
        {"figure": "Q7 C1 / C2 / C3 first rank (bge-m3)", "casebook (theirs)":
         " / ".join(str(theirs["q7"]["piece_ranks"][p]) for p in ("C1", "C2", "C3"))},
        {"figure": "Q7 coverage of the 4 pieces in the Top-10", "casebook (theirs)": theirs["q7"]["coverage_top10"]},
        {"figure": "Recovery S2: C3 rank before → after", "casebook (theirs)":
         f"{theirs['recovery']['s2_c3_rank']['before']} → {theirs['recovery']['s2_c3_rank']['after']}"},
        {"figure": "Q8 coverage k=5 → k=6",
         "casebook (theirs)": f"{theirs['q8']['coverage']['k5']} → {theirs['q8']['coverage']['k6']}"},
    ]
    headline_lang = languages[0]
    return {
        "languages": list(languages),
        "missing_inputs": missing,
        "side_by_side": tables,
        "side_by_side_tables": {
            lang: markdown_table(highlight(rows), ["row", *PIECES]) for lang, rows in tables.items()
        },
        "benchmark_rows": bench,
        "benchmark_table": (
            markdown_table(bench, ["mechanism", "language", *METRICS]) if bench else "_(no mechanism results)_"
        ),
        "casebook_rows": casebook_rows,
        "casebook_table": markdown_table(casebook_rows),
        "headline_table": markdown_table(highlight(tables[headline_lang]), ["row", *PIECES]),
    }


def archive_label_version(commit: str, note: str, root: Path | None = None,
                          out: Path = LABEL_ARCHIVE) -> dict[str, Any]:
    """Copy the figures that depend on the gold labels out of the current results, before a relabelling.

    Kept: the baseline rows of 01 (every configuration, both languages), the Q7 rows of 01, and the
    Q7 side-by-side tables of 08. ``commit`` names the commit whose results these are; ``note`` says
    which label version produced them. Nothing is recomputed or typed: values are copied verbatim.
    """
    root = root or results_dir()
    bakeoff, summary = _load("01_embedding_bakeoff", root), _load("08_summary", root)
    if bakeoff is None or summary is None:
        raise FileNotFoundError(f"{root}: 01_embedding_bakeoff and 08_summary results are needed; run them first")
    payload = {"commit": commit, "note": note, "summary_rows": bakeoff["summary_rows"],
               "q7_rows": bakeoff["q7_rows"], "side_by_side": summary["side_by_side"]}
    write_json(out, payload)
    return payload
