"""The summary: the casebook's side-by-side table and a whole-benchmark table, read from the
other experiments' ``results.json`` through their typed results (:class:`~.inputs.SummaryInputs`, read once
per run); nothing is measured again.

Every mechanism comparison carries its bootstrap interval and, in one Holm family over all the
comparisons in the table (their number is stated; those in which no question changed are left out and
marked), its adjusted p and adjusted interval (:mod:`rag_lib.evaluation.claims`), so the ~100
intervals are not read as ~100 independent findings; verdicts and Findings use the adjusted figures.
The label-dependent figures of the previous label version are shown beside the current ones
(:mod:`rag_lib.presentation.label_archive`).

Here: :func:`run_summary` (everything the notebook shows) and :func:`findings`. The inputs and what the
mechanism runs compared at are :mod:`.inputs`; Q7's side-by-side rows :mod:`.q7`; the comparisons in their
Holm family and the whole-benchmark table :mod:`.family`; the what-helps ranking :mod:`.ranking`; Halo's
claims beside our figures :mod:`.halo`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rag_lib.core.casebook import published
from rag_lib.evaluation.claims import Verdict
from rag_lib.evaluation.readers import missed_gold
from rag_lib.experiments.summary.family import benchmark_rows, comparisons, failures, family_of
from rag_lib.experiments.summary.halo import halo_rows
from rag_lib.experiments.summary.inputs import (
    SummaryInputs,
    baseline_embedder,
    evidence_sizes,
    mechanisms_k,
    more_context_variants,
)
from rag_lib.experiments.summary.q7 import q7_every_phrasing, q7_inside, side_by_side
from rag_lib.experiments.summary.ranking import is_more_context, what_helps
from rag_lib.presentation.headline import headline_findings
from rag_lib.presentation.label_archive import relabel_rows
from rag_lib.results.summary import CasebookRow, LocalLLMSummary, Multiplicity, Relabel, Relabelled, SummaryResult
from rag_lib.results.typed_json import Scalar, decode


def findings(summary: SummaryResult) -> list[str]:
    """What actually helps, and by how much: sentences generated from the stored summary, each verdict naming
    the metric that earned it with its Holm-adjusted interval (:mod:`rag_lib.evaluation.claims`)."""
    m = summary.multiplicity
    family = family_of(summary.comparisons, m.alpha)
    out = [f"{m.comparisons} comparisons (variants × languages × metrics) form one Holm family, and "
           f"{m.fixed} more, in which no question changed, are left out and marked fixed; "
           f"{m.significant_holm_05} survive the adjustment ({m.significant_unadjusted_05} have p < {m.alpha} "
           "before it)."]
    ranked = summary.what_helps
    for verdict, verb in (("helps", "Clear gains"), ("hurts", "Clear losses"), ("mixed", "Mixed (a gain and a loss)")):
        rows = [r for r in ranked if r["verdict"] == verdict]
        if rows:
            shown = "; ".join(_earned(family.verdict(r["mechanism"], r["language"]), r) for r in rows[:4])
            more = f"; and {len(rows) - 4} more" if len(rows) > 4 else ""
            out.append(f"{verb}: {shown}{more}.")
    extra = [r for r in ranked if is_more_context(r)]
    if extra:
        shown = "; ".join(f"{r['mechanism']} ({r['language']}): "
                          f"{family.verdict(r['mechanism'], r['language']).text(False)}" for r in extra)
        out.append(f"More context, not ranked among the mechanisms (the same ranking with more chunks sent, so the "
                   f"evidence's coverage cannot fall by construction, and 04 measures its cost in tokens): {shown}.")
    incomplete = [f"{r['mechanism']} ({r['language']}, {r['verdict']})" for r in ranked
                  if r["verdict"].startswith("incomplete")]
    if incomplete:
        out.append(f"Not judged, because LLM calls failed or have no record: {'; '.join(incomplete)}.")
    none = [r for r in ranked if r["verdict"] in ("no clear effect", "nothing moved")]
    if none:
        n = max((r["questions"] or 0) for r in ranked)
        out.append(f"{len(none)} of {len(ranked) - len(extra)} ranked variant × language rows show no effect that "
                   f"survives the adjustment; on {n} questions an interval that includes 0 is not evidence of no "
                   "effect.")
    for lang in summary.languages:
        rows = summary.side_by_side[lang]
        inside = [r for r in q7_inside(rows, summary.evidence_k) if not r.startswith("baseline")]
        named = f": {'; '.join(inside[:5])}" if inside else ""
        out.append(_end_sentence(f"Q7 ({lang}): {len(inside)} of {len(rows) - 1} mechanism and recovery rows put all "
                                 "of C1–C3 inside the Top-10 (or a top-k row's evidence; a rank tied at the cut counts "
                                 f"as neither){named}"))
    every = summary.q7_every_phrasing
    if every.rows:
        named = f": {'; '.join(every.complete)}" if every.complete else ""
        out.append(_end_sentence(f"Q7 over every phrasing the mechanism runs tried: {len(every.complete)} of "
                                 f"{every.rows} rows put all pieces inside the Top-{every.k}{named}"))
    out.append(family.describe())
    out.append("Caveats: a larger k buys coverage with more evidence tokens (04 measures the cost); the embedder "
               "is the offline default (not the casebook's bge-m3), the LLM rows come from a small local Qwen, some "
               "variants ran on a stated subset of questions (see `questions`), and labels are this benchmark's own: "
               f"{missed_gold().caveat()}.")
    return out


def _earned(verdict: Verdict, row: Mapping[str, Scalar]) -> str:
    """``mechanism (language): <the metric that earned the verdict, adjusted interval>`` (+ how many more did)."""
    first, *others = verdict.effects
    more = f" (and {len(others)} more metric{'s' if len(others) > 1 else ''})" if others else ""
    return f"{row['mechanism']} ({row['language']}): {first.text(scoped=False)}{more}"


def run_summary(languages: tuple[str, ...] = ("zh", "en"), root: Path | None = None) -> SummaryResult:
    """Everything the summary notebook shows (metrics named at the k the mechanism runs stored)."""
    inputs = SummaryInputs.read(root)
    k = mechanisms_k(inputs.mechanisms)
    theirs = published()
    tables = {lang: side_by_side(lang, inputs) for lang in languages}
    compared, failed = comparisons(inputs.mechanisms), failures(inputs.mechanisms)
    bench = benchmark_rows(compared, failed)
    evidence_k = evidence_sizes(inputs.mechanisms)
    ranked = what_helps(compared, failed, more_context_variants(inputs.mechanisms), k=k)
    family = family_of(compared)
    tested = [c for c in compared if c.in_family]
    casebook_rows = [
        CasebookRow("Q7 C1 / C2 / C3 first rank (bge-m3)",
                    " / ".join(str(theirs["q7"]["piece_ranks"][p]) for p in ("C1", "C2", "C3"))),
        CasebookRow("Q7 coverage of the 4 pieces in the Top-10", theirs["q7"]["coverage_top10"]),
        CasebookRow("Recovery S2: C3 rank before → after",
                    f"{theirs['recovery']['s2_c3_rank']['before']} → {theirs['recovery']['s2_c3_rank']['after']}"),
        CasebookRow("Q8 coverage k=5 → k=6", f"{theirs['q8']['coverage']['k5']} → {theirs['q8']['coverage']['k6']}"),
    ]
    halo_claims = halo_rows(ranked, inputs.chunking, k, family)
    local = inputs.local_llm
    return SummaryResult(
        local_llm=LocalLLMSummary(local.tasks, local.answer_rows, local.judge_rows) if local else None,
        languages=list(languages),
        k=k,
        missing_inputs=inputs.missing,
        missing_text=", ".join(inputs.missing) or "none",
        side_by_side=tables,
        evidence_k=evidence_k,
        benchmark_rows=bench,
        comparisons=compared,
        q7_every_phrasing=q7_every_phrasing(inputs.mechanisms),
        multiplicity=Multiplicity(
            comparisons=family.size, fixed=family.fixed, alpha=family.alpha, ci_percent=95, chance="about 1 in 20",
            significant_holm_05=family.effects(), significant_unadjusted_05=sum(c.p < family.alpha for c in tested),
            method="Holm-Bonferroni over every comparison in the table in which some question changed "
                   "(variants x languages x metrics); p two-sided, from McNemar's exact test for binary outcomes "
                   "and from the paired bootstrap (200,000 resamples) that gives the interval otherwise; adjusted "
                   "intervals of each comparison's own test at level alpha * p / p_Holm"),
        what_helps=ranked,
        relabel=decode(Relabelled | Relabel, relabel_rows(inputs.bakeoff)),
        halo_rows=halo_claims,
        casebook_rows=casebook_rows,
        headline_findings=headline_findings(tables, q7_inside(tables.get("zh", []), evidence_k),
                                            [r for r in ranked if not is_more_context(r)], family.size, compared,
                                            local, baseline_embedder(inputs.bakeoff), root),
    )


def _end_sentence(text: str) -> str:
    """``text`` closed with a full stop, unless it already ends a sentence (a row label may end with "?")."""
    return text if text.endswith(("?", ".", "!")) else text + "."
