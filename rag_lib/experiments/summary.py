"""The summary: the casebook's side-by-side table and a whole-benchmark table, read from the
other experiments' ``results.json`` (never recomputed, never typed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rag_lib.casebook import published
from rag_lib.config import results_dir
from rag_lib.embedding.registry import default_embedder_name
from rag_lib.report import markdown_table

PIECES = ("C1", "C2", "C3", "C4")
METRICS = ("hit@5", "coverage@10", "mrr")


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


def variant_label(mechanism: str, variant: dict[str, Any]) -> str:
    """``mechanism: variant``, with the model that produced it for LLM variants."""
    prov = variant.get("provenance", {})
    model = prov.get("llm", {}).get("model") or (prov.get("reranker", {}).get("revision")
                                                 if prov.get("reranker", {}).get("backend") == "llm_yes_no" else None)
    return f"{mechanism}: {variant['name']}" + (f" ({model})" if model else "")


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
            label = variant_label(result["mechanism"], variant)
            failed = variant.get("q7_failures", {}).get("original", {}).get(lang)
            ranks = variant.get("q7", {}).get("original", {}).get(lang)
            if failed:
                rows.append({"row": f"{label}: failed ({failed})"})
            elif ranks:
                rows.append({"row": label, **{p: ranks.get(p) for p in PIECES}})
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
            label = variant_label(result["mechanism"], variant)
            for lang, failure in sorted(variant.get("failures", {}).items()):
                rows.append({"mechanism": label, "language": lang, **{m: "—" for m in METRICS},
                             "failed": f"{failure['failed']}/{failure['of']} {failure['by_kind']}"})
            for lang, metrics in sorted(variant.get("benchmark", {}).items()):
                row: dict[str, Any] = {"mechanism": label, "language": lang}
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
    missing = [name for name in ("01_embedding_bakeoff", "05_q7_diagnosis", "07_recovery_loop", "10_local_llm")
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
    local = _load("10_local_llm", root)
    return {
        "local_llm": {"tasks": local["tasks"], "answer_table": local["answer_table"],
                      "judge_table": local["judge_table"]} if local else None,
        "local_llm_text": (f"Models per task: {local['tasks']}.\n\nAnswers (rates leave out calls without a record, "
                           f"counted as `missing`):\n\n{local['answer_table']}\n\nThe LLM judge beside "
                           f"floor+aspects:\n\n{local['judge_table']}") if local
        else "_(10_local_llm has not run)_",
        "languages": list(languages),
        "missing_inputs": missing,
        "side_by_side": tables,
        "side_by_side_tables": {
            lang: markdown_table(highlight(rows), ["row", *PIECES]) for lang, rows in tables.items()
        },
        "benchmark_rows": bench,
        "benchmark_table": (
            markdown_table(bench, ["mechanism", "language", *METRICS, *(["failed"] if any("failed" in r for r in bench)
                                                                      else [])])
            if bench else "_(no mechanism results)_"
        ),
        "casebook_rows": casebook_rows,
        "casebook_table": markdown_table(casebook_rows),
        "headline_table": markdown_table(highlight(tables[headline_lang]), ["row", *PIECES]),
    }
