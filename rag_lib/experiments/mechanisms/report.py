"""A mechanism run in words and tables: findings generated from its numbers, and the report tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_lib.evaluation.claims import ALPHA, Comparison, Family, Judgement, judge
from rag_lib.evaluation.stats import interval_text, no_question_changed
from rag_lib.presentation.report import kinds_text, markdown_table
from rag_lib.results.mechanism import MechanismResult

# Every metric the benchmark table reports is judged (coverage@evidence included): a verdict reads them all.
FAMILY_NAME = "this run (variants × languages × metrics)"


def judge_variants(variants: Sequence[dict[str, Any]], n_boot: int, seed: int, alpha: float = ALPHA) -> Family:
    """Holm over every benchmark comparison of one run, the variant's name as subject and the language as scope;
    each stored comparison gains its judgement (:data:`~rag_lib.evaluation.claims.STORED_KEYS`), in place."""
    stored = [(v["name"], lang, metric, c) for v in variants for lang, metrics in v["benchmark"].items()
              for metric, c in metrics.items()]
    family = judge((Comparison.from_stored(name, lang, metric, c, n_boot, seed) for name, lang, metric, c in stored),
                   FAMILY_NAME, alpha)
    for (_, _, _, c), j in zip(stored, family.judgements, strict=True):
        c.update(j.stored())
    return family


def stored_family(result: MechanismResult) -> Family:
    """The run's family as stored (each comparison's judgement, :func:`judge_variants`)."""
    alpha = result.provenance.get("claims", {}).get("alpha", ALPHA)
    return Family(FAMILY_NAME, tuple(Judgement.read(v["name"], lang, metric, c, alpha) for v in result.variants
                                     for lang, metrics in v["benchmark"].items() for metric, c in metrics.items()),
                  alpha)


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


def _q7_every_phrasing(result: MechanismResult, within: int = 10) -> list[str]:
    """Q7's rows of every phrasing (not only the original) that put all pieces in the Top-``within``."""
    rows, complete = 0, []
    for v in result.variants:
        for phrasing, by_lang in v.get("q7", {}).items():
            for lang, ranks in by_lang.items():
                if not ranks or all(r is None for r in ranks.values()):
                    continue  # a failed phrasing has no ranks to judge
                rows += 1
                if all(r is not None and r <= within for r in ranks.values()):
                    complete.append(f"{v['name']}, {phrasing} phrasing ({lang})")
    if not rows:
        return []
    return [f"Q7 over every phrasing: {len(complete)} of {rows} variant × phrasing × language rows put all pieces in "
            f"the Top-{within}" + (f": {'; '.join(complete)}" if complete else "") + "."]


def findings(result: MechanismResult) -> list[str]:
    """Sentences generated from a mechanism's numbers: per variant and language, the verdict over every metric of
    the benchmark table after the run's Holm adjustment, naming the metric(s) that earned it with their adjusted
    intervals (:mod:`rag_lib.evaluation.claims`), and the questions it failed on; then Q7's pieces."""
    if not result.ran:
        return [f"Not run: {result.reason or 'no variant is available on this machine'}"]
    family = stored_family(result)
    order = list(result.provenance.get("languages") or [])
    out: list[str] = []
    for v in result.variants:
        failures = v.get("failures", {})
        if not v["benchmark"] and not failures:
            continue  # Q7-only variants (e.g. the casebook's aligned phrasing) have no benchmark figure
        parts = []
        for lang in sorted(set(v["benchmark"]) | set(failures), key=lambda x: order.index(x) if x in order else 9):
            failure = failures.get(lang)
            if lang not in v["benchmark"]:
                parts.append(f"{lang}: failed on all {failure['of']} questions ({kinds_text(failure)}), no figure")
                continue
            n = v.get("compared_on", {}).get(lang)
            note = f" (on the {n} questions it ranked; {failure['failed']} failed: {kinds_text(failure)})" if failure \
                else (f" ({n} questions)" if n else "")
            parts.append(f"{lang}{note}: {family.verdict(v['name'], lang).text(scoped=False)}")
        if not v["benchmark"]:
            parts.append("the variant failed, so there is no result")
        out.append(f"{v['name']}: " + "; ".join(parts) + ".")
    out += _q7_findings(result) + _q7_every_phrasing(result)
    if out:
        out.append(family.describe() + " 08 adjusts over every mechanism run together, so its verdicts can be "
                   "stricter; labels are this benchmark's, and the embedder is the offline default, not the "
                   "casebook's bge-m3.")
    return out


def tables(variants: Sequence[dict[str, Any]], baseline_q7: dict[str, Any], k: int) -> dict[str, Any]:
    """Markdown tables (and flat rows) for the report, built from the variants' entries and the baseline's Q7
    ranks (its evidence: the run's top-``k``)."""
    q7_rows = []
    sources = [("baseline", baseline_q7, k, {})]
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
                                         f"({kinds_text(failure)})", "adjusted (Holm)": None})
        for lang, metrics in v["benchmark"].items():
            subset = v.get("compared_on", {}).get(lang)
            for metric, c in metrics.items():
                judged = Judgement.read(v["name"], lang, metric, c) if "in_family" in c else None
                fixed = judged is not None and not judged.in_family
                bench_rows.append({"variant": v["name"] + (f" ({subset} questions)" if subset else ""),
                                   "language": lang, "metric": metric,
                                   "baseline": c["baseline"], "mechanism": c["mechanism"], "diff": c["diff"],
                                   "95% CI": "no question changed" if fixed or no_question_changed(c) else
                                   interval_text(c["ci95"]),
                                   "adjusted (Holm)": judged.cell() if judged else None})
    return {
        "q7_rows": q7_rows,
        "q7_table": markdown_table(q7_rows),
        "benchmark_rows": bench_rows,
        "benchmark_table": markdown_table(bench_rows),
        "variants_text": ", ".join(v["name"] for v in variants) or "none",
    }
