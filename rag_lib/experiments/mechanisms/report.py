"""A mechanism run in words and tables: findings generated from its numbers, and the report tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_lib.config import TOP_K
from rag_lib.evaluation import HIT, effect_text
from rag_lib.evaluation.stats import no_question_changed
from rag_lib.workbook.mechanism_results import MechanismResult
from rag_lib.workbook.report import kinds_text, markdown_table

FINDING_METRICS = (HIT.name, "coverage@10")


def _q7_findings(result: MechanismResult, within: int = 10) -> list[str]:
    """Per variant, Q7's original phrasing: pieces in the Top-``within`` before → after, and the pieces that moved."""
    base = result.baseline.get("q7", {}).get("original", {})
    order = list(result.provenance.get("languages") or [])
    out = []
    for v in result.variants:
        after = v.get("q7", {}).get("original", {})
        parts = []
        for lang in sorted(after, key=lambda x: order.index(x) if x in order else len(order)):
            ranks = after[lang]
            before = base.get(lang)
            if not before or all(r is None for r in ranks.values()):
                continue
            inside = [sum(r is not None and r <= within for r in side.values()) for side in (before, ranks)]
            moved = ", ".join(f"{p} {before[p]} → {r}" for p, r in ranks.items() if r != before.get(p))
            parts.append(f"{lang} {inside[0]}/{len(ranks)} → {inside[1]}/{len(ranks)} in the Top-{within}"
                         + (f" ({moved})" if moved else " (no piece moved)"))
        if parts:
            out.append(f"{v['name']} on Q7 (original phrasing): {'; '.join(parts)}.")
    return out


def findings(result: MechanismResult) -> list[str]:
    """Sentences generated from a mechanism's numbers: per variant, its effect on hit@5 and
    coverage@10 (and coverage@evidence when it sends more evidence) per language with the interval,
    whether any interval excludes 0, and the questions it failed on."""
    if not result.ran:
        return [f"Not run: {result.reason or 'no variant is available on this machine'}"]
    order = list(result.provenance.get("languages") or [])
    out: list[str] = []
    for v in result.variants:
        failures = v.get("failures", {})
        if not v["benchmark"] and not failures:
            continue  # Q7-only variants (e.g. the casebook's aligned phrasing) have no benchmark figure
        metrics_shown = FINDING_METRICS + (("coverage@evidence",) if v["evidence_k"] != TOP_K else ())
        parts, clear = [], []
        for lang in sorted(set(v["benchmark"]) | set(failures), key=lambda x: order.index(x) if x in order else 9):
            failure, metrics = failures.get(lang), v["benchmark"].get(lang)
            if metrics is None:
                parts.append(f"{lang}: failed on all {failure['of']} questions ({kinds_text(failure)}), no figure")
                continue
            n = v.get("compared_on", {}).get(lang)
            note = f" (on the {n} questions it ranked; {failure['failed']} failed: {kinds_text(failure)})" if failure \
                else (f" ({n} questions)" if n else "")
            parts.append(f"{lang}{note}: " + ", ".join(f"{m} {effect_text(metrics[m])}" for m in metrics_shown
                                                       if m in metrics))
            clear += [f"{m} {lang} {'up' if metrics[m]['diff'] > 0 else 'down'}" for m in metrics_shown
                      if m in metrics and (metrics[m]["ci95"][0] > 0 or metrics[m]["ci95"][1] < 0)]
        if not v["benchmark"]:
            verdict = "the variant failed, so there is no result"
        elif clear:
            verdict = f"the 95% interval excludes 0 for {', '.join(clear)}"
        else:
            verdict = "no interval excludes 0: no effect is shown on this benchmark"
        out.append(f"{v['name']}: " + "; ".join(parts) + f" — {verdict}.")
    out += _q7_findings(result)
    if out:
        out.append("Intervals are paired bootstrap 95% intervals over questions, one per comparison and not "
                   "adjusted for the many comparisons made (08 adds Holm-adjusted p-values); labels are this "
                   "benchmark's, and the embedder is the offline default, not the casebook's bge-m3.")
    return out


def tables(variants: Sequence[dict[str, Any]], baseline_q7: dict[str, Any]) -> dict[str, Any]:
    """Markdown tables (and flat rows) for the report, built from the variants' entries and the baseline's Q7
    ranks."""
    q7_rows = []
    sources = [("baseline", baseline_q7, TOP_K, {})]
    sources += [(v["name"], v["q7"], v["evidence_k"], v.get("q7_failures", {})) for v in variants]
    for name, q7, evidence_k, failures in sources:
        for phrasing, by_lang in q7.items():
            for lang, ranks in by_lang.items():
                failed = failures.get(phrasing, {}).get(lang)
                in10 = sum(r is not None and r <= 10 for r in ranks.values())
                in_evidence = sum(r is not None and r <= evidence_k for r in ranks.values())
                row = {"variant": name, "phrasing": phrasing, "language": lang, **ranks,
                       "in top 10": f"{in10}/{len(ranks)}", "evidence k": evidence_k,
                       "in evidence": f"{in_evidence}/{len(ranks)}"}
                if failed:
                    row.update({"in top 10": f"failed ({failed})", "in evidence": f"failed ({failed})"})
                q7_rows.append(row)
    bench_rows = []
    for v in variants:
        for lang, failure in v.get("failures", {}).items():
            bench_rows.append({"variant": v["name"], "language": lang, "metric": "failed calls",
                               "baseline": None, "mechanism": None, "diff": None,
                               "95% CI": f"{failure['failed']}/{failure['of']} questions failed "
                                         f"({kinds_text(failure)})"})
        for lang, metrics in v["benchmark"].items():
            subset = v.get("compared_on", {}).get(lang)
            for metric, c in metrics.items():
                bench_rows.append({"variant": v["name"] + (f" ({subset} questions)" if subset else ""),
                                   "language": lang, "metric": metric,
                                   "baseline": c["baseline"], "mechanism": c["mechanism"], "diff": c["diff"],
                                   "95% CI": "no question changed" if no_question_changed(c) else
                                   f"[{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}]"})
    return {
        "q7_rows": q7_rows,
        "q7_table": markdown_table(q7_rows),
        "benchmark_rows": bench_rows,
        "benchmark_table": markdown_table(bench_rows),
        "variants_text": ", ".join(v["name"] for v in variants) or "none",
    }
