"""A mechanism run in words and tables: findings generated from its numbers, and the report tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from rag_lib.benchmark.questions import Q7_PIECES
from rag_lib.evaluation.claims import ALPHA, Comparison, Family, judge
from rag_lib.evaluation.stats import PairedDifference, interval_text, signed_text
from rag_lib.results.mechanism import (
    BenchmarkRow,
    MechanismComparison,
    MechanismResult,
    Q7Ranks,
    Q7Row,
    VariantResult,
)

# Every metric the benchmark table reports is judged (coverage@evidence included): a verdict reads them all.
FAMILY_NAME = "this run (variants × languages × metrics)"


class MeasuredVariant(NamedTuple):
    """A variant measured, before the run's Holm family judges its comparisons (:func:`judge_variants`)."""

    variant: VariantResult  # its ``benchmark`` is filled in by the judgement
    paired: dict[str, dict[str, PairedDifference]]  # language -> metric -> comparison with the baseline


def judge_variants(measured: Sequence[MeasuredVariant], n_boot: int, seed: int,
                   alpha: float = ALPHA) -> tuple[list[VariantResult], Family]:
    """Holm over every benchmark comparison of one run, the variant's name as subject and the language as scope;
    each variant comes back with its comparisons and their judgements."""
    family = judge((Comparison(v.name, lang, metric, c.diff, c.p, c.diffs, n_boot, seed) for v, paired in measured
                    for lang, metrics in paired.items() for metric, c in metrics.items()), FAMILY_NAME, alpha)
    judged = iter(family.judgements)  # in the order judged above
    variants = [replace(v, benchmark={lang: {metric: MechanismComparison.judged(c, next(judged))
                                             for metric, c in metrics.items()} for lang, metrics in paired.items()})
                for v, paired in measured]
    return variants, family


def stored_family(result: MechanismResult) -> Family:
    """The run's family as stored (each comparison's judgement, :func:`judge_variants`)."""
    alpha = result.provenance.claims.alpha
    return Family(FAMILY_NAME, tuple(c.judgement(v.name, lang, metric, alpha) for v in result.variants
                                     for lang, metrics in v.benchmark.items() for metric, c in metrics.items()),
                  alpha)


def _q7_findings(result: MechanismResult, within: int = 10) -> list[str]:
    """Per variant, Q7's original phrasing: pieces in the Top-``within`` before → after, and the pieces that moved."""
    base = result.baseline.q7.get("original", {})
    order = result.provenance.languages
    out = []
    for v in result.variants:
        after = v.q7.get("original", {})
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
            out.append(f"{v.name} on Q7 (original phrasing): {'; '.join(parts)}.")
    return out


def _q7_every_phrasing(result: MechanismResult, within: int = 10) -> list[str]:
    """Q7's rows of every phrasing (not only the original) that put all pieces in the Top-``within``."""
    rows, complete = 0, []
    for v in result.variants:
        for phrasing, by_lang in v.q7.items():
            for lang, ranks in by_lang.items():
                if not ranks or all(r is None for r in ranks.values()):
                    continue  # a failed phrasing has no ranks to judge
                rows += 1
                if all(r is not None and r <= within for r in ranks.values()):
                    complete.append(f"{v.name}, {phrasing} phrasing ({lang})")
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
    order = result.provenance.languages
    out: list[str] = []
    for v in result.variants:
        if not v.benchmark and not v.failures:
            continue  # Q7-only variants (e.g. the casebook's aligned phrasing) have no benchmark figure
        parts = []
        for lang in sorted(set(v.benchmark) | set(v.failures), key=lambda x: order.index(x) if x in order else 9):
            failure = v.failures.get(lang)
            if failure is not None and lang not in v.benchmark:
                parts.append(f"{lang}: failed on all {failure.of} questions ({failure.kinds_text}), no figure")
                continue
            n = v.compared_on.get(lang)
            note = f" (on the {n} questions it ranked; {failure.failed} failed: {failure.kinds_text})" if failure \
                else (f" ({n} questions)" if n else "")
            parts.append(f"{lang}{note}: {family.verdict(v.name, lang).text(scoped=False)}")
        if not v.benchmark:
            parts.append("the variant failed, so there is no result")
        out.append(f"{v.name}: " + "; ".join(parts) + ".")
    for v in result.variants:
        rows = v.weighted_back(result.provenance.n_answerable)
        if rows:
            column = f"weighted back to {result.provenance.n_answerable}"
            shown = "; ".join(f"{r['language']} {r['metric']} {signed_text(r['diff on the sample'])} → "
                              f"{signed_text(r[column])}" for r in rows)
            out.append(f"{v.name} ran on a stratified sample of {rows[0]['sample']} answerable questions, "
                       f"{rows[0]['baseline misses in it']} of them baseline misses; its differences weighted back "
                       f"to the {result.provenance.n_answerable} answerable questions (point estimates): {shown}.")
    out += _q7_findings(result) + _q7_every_phrasing(result)
    if out:
        out.append(family.describe() + " 08 adjusts over every mechanism run together, so its verdicts can be "
                   "stricter; labels are this benchmark's, and the embedder is the offline default, not the "
                   "casebook's bge-m3.")
    return out


def tables(variants: Sequence[VariantResult], baseline_q7: Q7Ranks, k: int) -> dict[str, Any]:
    """The report's table rows, built from the variants and the baseline's Q7 ranks (its evidence: the run's
    top-``k``); the report renders them."""
    q7_rows = []
    sources = [("baseline", baseline_q7, k, {})] + [(v.name, v.q7, v.evidence_k, v.q7_failures) for v in variants]
    for name, q7, evidence_k, failures in sources:
        for phrasing, by_lang in q7.items():
            for lang, ranks in by_lang.items():
                failed = failures.get(phrasing, {}).get(lang)
                in10 = sum(r is not None and r <= 10 for r in ranks.values())
                in_evidence = sum(r is not None and r <= evidence_k for r in ranks.values())
                q7_rows.append(Q7Row(
                    variant=name, phrasing=phrasing, language=lang,
                    **{p: ranks[p] for p in Q7_PIECES},
                    in_top_10=f"failed ({failed})" if failed else f"{in10}/{len(ranks)}", evidence_k=evidence_k,
                    in_evidence=f"failed ({failed})" if failed else f"{in_evidence}/{len(ranks)}"))
    bench_rows = []
    for v in variants:
        for lang, failure in v.failures.items():
            bench_rows.append(BenchmarkRow(
                variant=v.name, language=lang, metric="failed calls", baseline=None, mechanism=None, diff=None,
                ci95=f"{failure.failed}/{failure.of} questions failed ({failure.kinds_text})", adjusted_holm=None))
        for lang, metrics in v.benchmark.items():
            subset = v.compared_on.get(lang)
            for metric, c in metrics.items():
                judged = c.judgement(v.name, lang, metric, ALPHA)
                bench_rows.append(BenchmarkRow(
                    variant=v.name + (f" ({subset} questions)" if subset else ""), language=lang, metric=metric,
                    baseline=c.baseline, mechanism=c.mechanism, diff=c.diff,
                    ci95="no question changed" if not c.in_family or c.no_question_changed else interval_text(c.ci95),
                    adjusted_holm=judged.cell()))
    return {
        "q7_rows": q7_rows,
        "benchmark_rows": bench_rows,
        "variants_text": ", ".join(v.name for v in variants) or "none",
    }


def forest_rows(result: MechanismResult) -> list[dict[str, Any]]:
    """Every variant's comparisons on the whole benchmark as the forest plot reads them: one row per metric and
    variant ("hit@5 · hybrid"), its difference and Holm-adjusted interval, per language."""
    return [{"variant": f"{metric} · {v.name}", "language": lang, "metric": "difference", "diff": c.diff,
             "adjusted": c.adjusted}
            for v in result.variants for lang, by_metric in v.benchmark.items() for metric, c in by_metric.items()]

