"""``W4_mechanisms``'s report, derived from its stored per-question measurements when it is rendered: each
variant's paired comparison with the dense baseline on the questions it ran on (McNemar's exact test for hit@k,
the paired bootstrap otherwise), the run's Holm family over every variant, language and metric with adjusted
intervals (:mod:`rag_lib.evaluation.claims`), each variant's verdict, the Findings and the forest figure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rag_lib.core.text import LANGUAGE_NAMES
from rag_lib.evaluation.claims import Comparison, Family, Judgement, judge
from rag_lib.evaluation.metrics import hit_name
from rag_lib.evaluation.stats import PairedDifference, compare
from rag_lib.presentation.figures.metrics import forest
from rag_lib.results.mechanism import mechanism_metrics
from rag_lib.results.workbook_mechanisms import BASELINE, VariantRun, WorkbookMechanismsResult

FAMILY_NAME = "this run (variants × languages × metrics)"


def _values(result: WorkbookMechanismsResult) -> dict[tuple[str, str, str], dict[str, float]]:
    """(variant, language, metric) → question → value."""
    out: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for m in result.measurements:
        out[(m.configuration, m.language, m.measure)][m.question] = m.value
    return out


def paired(result: WorkbookMechanismsResult) -> Iterator[tuple[VariantRun, str, str, PairedDifference]]:
    """Every variant, language and metric: the variant's values against the baseline's on the same questions."""
    values = _values(result)
    for v in result.variants:
        for lang in v.languages:
            for metric in mechanism_metrics(result.k):
                mine = values[(v.name, lang, metric)]
                base = values[(BASELINE, lang, metric)]
                ids = sorted(mine)
                yield v, lang, metric, compare([mine[q] for q in ids], [base[q] for q in ids], result.n_boot,
                                               result.seed)


def family(result: WorkbookMechanismsResult) -> Family:
    """One Holm family over every comparison of the run (the variant as subject, the language as scope)."""
    return judge((Comparison(v.name, lang, metric, d.diff, d.p, d.diffs, result.n_boot, result.seed)
                  for v, lang, metric, d in paired(result)), FAMILY_NAME)


def comparison_rows(result: WorkbookMechanismsResult, judged: Family | None = None) -> list[dict[str, Any]]:
    """One row per variant, language and metric: questions, baseline and variant means, the difference with its
    Holm-adjusted interval and p."""
    judged = judged or family(result)
    rows = []
    for v, lang, metric, d in paired(result):
        j = judged.get(v.name, lang, metric)
        rows.append({"mechanism": v.mechanism, "variant": v.name, "language": lang, "metric": metric,
                     "questions": len(d.diffs), "baseline": d.baseline, "variant mean": d.mechanism,
                     "changed": j.changed, "difference [adjusted interval]; p_Holm": j.cell()})
    return rows


def verdict_rows(result: WorkbookMechanismsResult, judged: Family | None = None) -> list[dict[str, Any]]:
    """One row per variant and language: its verdict over the metrics, in words with the intervals that earned it."""
    judged = judged or family(result)
    return [{"mechanism": v.mechanism, "variant": v.name, "language": lang, "evidence chunks": v.evidence_k,
             "verdict": judged.verdict(v.name, lang).text(scoped=False)}
            for v in result.variants for lang in v.languages]


def _strongest(judgements: list[Judgement]) -> list[Judgement]:
    """Each variant's strongest effect (smallest adjusted p, then largest difference), strongest variants first."""
    best: dict[str, Judgement] = {}
    for j in sorted(judgements, key=lambda j: (j.p_holm, -abs(j.diff))):
        best.setdefault(j.subject, j)
    return list(best.values())


def findings(result: WorkbookMechanismsResult) -> list[str]:
    """Per language: the variants that put more (or less) of the gold evidence in front of the model than dense
    retrieval, by hit@k or coverage@evidence beyond the family's adjustment, each with its strongest effect (or the
    closest comparison when none moves); then the caveat."""
    judged = family(result)
    hit = hit_name(result.k)
    out = []
    for lang in result.languages:
        effects = [j for j in judged.judgements
                   if j.scope == lang and j.effect and j.metric in (hit, "coverage@evidence")]
        who = f"{LANGUAGE_NAMES[lang]} questions on {result.title}, against dense retrieval"
        parts = [f"{verb}: " + "; ".join(f"{j.subject} ({j.text(scoped=False)})" for j in _strongest(group))
                 for verb, group in (("more gold evidence", [j for j in effects if j.diff > 0]),
                                     ("less", [j for j in effects if j.diff < 0])) if group]
        if parts:
            out.append(f"{who}: " + "; ".join(parts) + ".")
            continue
        tested = [j for j in judged.judgements if j.scope == lang and j.in_family and j.metric == hit]
        closest = min(tested, key=lambda j: (j.p_holm, -abs(j.diff))) if tested else None
        out.append(f"{who}: no variant moves {hit} or coverage@evidence beyond the adjustment"
                   + (f" (closest: {closest.subject}, {closest.text(scoped=False)})." if closest else "."))
    left = defaultdict(list)
    for n in result.not_run:
        mechanism, _, variant = n.name.partition(": ")
        left[mechanism].append(variant)
    said = "; ".join(f"{m} ({', '.join(v)})" if any(v) else m for m, v in left.items())
    out.append(f"Caveat: {result.questions} answerable questions and one Holm family of {judged.size} comparisons "
               f"({judged.fixed} fixed), so only large effects survive; {hit} counts a question when any gold chunk is "
               "in the Top-k, coverage@evidence the share of its pieces in the chunks the variant sends"
               + (f"; not run here (reasons in the report): {said}" if said else "") + ".")
    return out


def forest_figure(result: WorkbookMechanismsResult, path: Path, judged: Family | None = None) -> Path:
    judged = judged or family(result)
    rows = [{"variant": j.subject, "language": j.scope, "metric": j.metric, "diff": j.diff, "adjusted": j.adjusted}
            for j in judged.judgements]
    return forest(rows, "coverage@evidence", path,
                  title=f"Each variant against dense retrieval, every answerable question: {result.title}")


def report_markdown(result: WorkbookMechanismsResult, findings: Sequence[str]) -> str:
    from rag_lib.presentation.tables import Table

    judged = family(result)
    lines = [f"# W4 · What changes retrieval: {result.title}", "", "## Findings", "",
             *[f"- {line}" for line in findings], "", "![Each variant against the baseline](forest.png)", "",
             "## Each variant's verdict", "", Table(verdict_rows(result, judged)).to_markdown(), "",
             "## Every comparison", "", Table(comparison_rows(result, judged)).to_markdown(), "", "## Setup", "",
             f"- baseline: {result.baseline}, {result.baseline_model}; Top-{result.k}",
             *[f"- not run: {n.name}: {n.reason}" for n in result.not_run]]
    return "\n".join(lines) + "\n"
