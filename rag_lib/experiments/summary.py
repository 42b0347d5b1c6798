"""The summary: the casebook's side-by-side table and a whole-benchmark table, read from the
other experiments' ``results.json`` through their typed results (:class:`SummaryInputs`, read once
per run); nothing is measured again.

Every mechanism comparison carries its bootstrap interval and, in one Holm family over all the
comparisons in the table (their number is stated; those in which no question changed are left out and
marked), its adjusted p and adjusted interval (:mod:`rag_lib.evaluation.claims`), so the ~100
intervals are not read as ~100 independent findings; verdicts and Findings use the adjusted figures.
The label-dependent figures of the previous label version are shown beside the current ones
(:mod:`rag_lib.presentation.label_archive`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from rag_lib.benchmark.questions import Q7_PIECES
from rag_lib.casebook import halo, published
from rag_lib.config import RunConfig, results_dir
from rag_lib.errors import WorkbookError
from rag_lib.evaluation import hit_name
from rag_lib.evaluation.claims import ALPHA, Family, Judgement, Verdict, judge
from rag_lib.evaluation.stats import effect_text
from rag_lib.presentation.headline import headline_findings
from rag_lib.presentation.label_archive import relabel_rows
from rag_lib.presentation.side_by_side import BOLD_WITHIN
from rag_lib.results.bakeoff import BakeoffResult
from rag_lib.results.baseline import bakeoff_q7, baseline_label
from rag_lib.results.chunking import ChunkingResult
from rag_lib.results.local_llm import LocalLLMResult
from rag_lib.results.mechanism import FailedCalls, MechanismResult, mechanism_metrics, mechanism_results
from rag_lib.results.provenance import model_name
from rag_lib.results.q7_diagnosis import Q7DiagnosisResult
from rag_lib.results.recovery import RecoveryExperimentResult
from rag_lib.results.store import MissingResult
from rag_lib.results.summary import (
    CasebookRow,
    ComparisonRow,
    HaloRow,
    LocalLLMSummary,
    Multiplicity,
    Q7EveryPhrasing,
    Q7Note,
    Q7Ranks,
    Q7TiedRanks,
    Relabel,
    Relabelled,
    SideBySideRow,
    SummaryResult,
)
from rag_lib.results.typed_json import Scalar, decode, encode

# The compared metrics are mechanism_metrics(k) of the runs' k; coverage@evidence: pieces inside the evidence
# the variant sends to generation (Top-5, or Top-k for the top-k variants), the one metric a larger k changes.
# BOLD_WITHIN: the Top-10 cut of the Q7 tables (rag_lib.presentation.side_by_side), not the retrieval k.


@dataclass(frozen=True)
class SummaryInputs:
    """The results the summary reads, each read once: the declared mechanism runs (06) and 01, 07, 10, 11.

    Parameters
    ----------
    mechanisms : list of MechanismResult
        The declared mechanism runs that have results, in run-name order.
    missing : list of str
        The runs the summary reads that have no results (shown in the notebook, never guessed).
    """

    mechanisms: list[MechanismResult]
    missing: list[str]
    bakeoff: BakeoffResult | None
    recovery: RecoveryExperimentResult | None
    chunking: ChunkingResult | None
    local_llm: LocalLLMResult | None
    diagnosis: Q7DiagnosisResult | None = None  # 05: the baseline's margins to the Top-10 cut

    @classmethod
    def read(cls, root: Path | None = None) -> Self:
        """Every input found under ``root`` (``RAG_RESULTS_DIR``)."""
        root = root or results_dir()
        found, missing_mechanisms = mechanism_results(root)
        bakeoff = BakeoffResult.find("01_embedding_bakeoff", root)
        recovery = RecoveryExperimentResult.find("07_recovery_loop", root)
        local_llm = LocalLLMResult.find("10_local_llm", root)
        chunking = ChunkingResult.find("11_chunking", root)
        diagnosis = Q7DiagnosisResult.find("05_q7_diagnosis", root)
        ran = {"01_embedding_bakeoff": bakeoff is not None, "05_q7_diagnosis": diagnosis is not None,
               "07_recovery_loop": recovery is not None, "10_local_llm": local_llm is not None,
               "11_chunking": chunking is not None}
        return cls(mechanisms=list(found.values()),
                   missing=[name for name, done in ran.items() if not done] + missing_mechanisms,
                   bakeoff=bakeoff, recovery=recovery, chunking=chunking, local_llm=local_llm, diagnosis=diagnosis)


def baseline_embedder(bakeoff: BakeoffResult | None) -> str | None:
    """The baseline's embedder as prose names it, from 01's stored provenance of the baseline configuration
    (``None`` when 01 has no results)."""
    if bakeoff is None:
        return None
    embedder = bakeoff.provenance[baseline_label()].embedder
    if embedder is None:
        raise MissingResult(f"01_embedding_bakeoff stores no embedder for {baseline_label()}; re-run it.")
    return model_name(embedder)


def side_by_side(lang: str, inputs: SummaryInputs) -> list[SideBySideRow]:
    """Rows: baseline, each mechanism variant, each recovery suggestion; columns: first rank of C1–C4."""
    rows: list[SideBySideRow] = []
    if inputs.bakeoff is not None:
        baseline = bakeoff_q7(inputs.bakeoff, baseline_label()).get("original", {}).get(lang)
        if baseline is None:
            raise KeyError(f"01_embedding_bakeoff has no Q7 row for the default embedder ({lang}); re-run it")
        rows.append(Q7TiedRanks("baseline (dense, default embedder, original question)", **baseline,
                                ties=baseline_ties(inputs.diagnosis, lang)))
    for result in inputs.mechanisms:
        if not result.ran:
            rows.append(Q7Note(f"{result.mechanism}: not run ({result.status})"))
            continue
        for variant in result.variants:
            label = variant.label(result.mechanism)
            failed = variant.q7_failures.get("original", {}).get(lang)
            ranks = variant.q7.get("original", {}).get(lang)
            if failed:
                rows.append(Q7Note(f"{label}: failed ({failed})"))
            elif ranks:
                rows.append(Q7TiedRanks(label, **{p: ranks.get(p) for p in Q7_PIECES},
                                        ties=variant.q7_ties.get("original", {}).get(lang, [])))
    recovery = inputs.recovery
    if recovery and lang in recovery.q7:
        for source, block in recovery.q7[lang].items():
            if block.status not in ("ok", "no_split"):  # e.g. only the prompt's example copied
                rows.append(Q7Note(f"recovery ({source}): no usable suggestion ({block.status})"))
            for i, entry in enumerate(block.ranks, 1):
                label = f"recovery ({source}) S{i}: {entry['suggestion']}"
                rows.append(Q7Ranks(label, **{p: entry.get(p) for p in Q7_PIECES}))
    return rows


def baseline_ties(diagnosis: Q7DiagnosisResult | None, lang: str) -> list[str]:
    """The baseline's pieces tied at the Top-10 cut (05's margins against its median neighbour gap)."""
    case = diagnosis.cases.get("original", {}).get(lang) if diagnosis else None
    if case is None or case.top10_median_gap is None:
        return []
    return [p for p, m in case.top10_margins.items() if m is not None and abs(m) < case.top10_median_gap]


def mechanisms_k(mechanisms: Sequence[MechanismResult]) -> int:
    """The top-k the mechanism runs that ran compared at (each stores it, ``provenance.baseline.k``);
    the workbook's ``retrieval.top_k`` when none ran (nothing is then compared).

    Raises
    ------
    WorkbookError
        When runs compared at different k: their metrics (hit@k) would not share one column.
    """
    ks = sorted({r.k for r in mechanisms if r.ran})
    if len(ks) > 1:
        raise WorkbookError(f"the mechanism runs compared at different k ({ks}); re-run them with one "
                            "retrieval.top_k.")
    return ks[0] if ks else RunConfig.from_settings().k


def more_context_variants(mechanisms: Sequence[MechanismResult]) -> set[str]:
    """Row labels of the variants that send more chunks than their run's k (the top-k mechanism)."""
    return {f"{r.mechanism}: {v.name}" for r in mechanisms for v in r.variants
            if v.evidence_k > r.k}


def evidence_sizes(mechanisms: Sequence[MechanismResult]) -> dict[str, int]:
    """Row label → evidence size, for the mechanism variants that send more than the Top-10."""
    return {f"{r.mechanism}: {v.name}": v.evidence_k for r in mechanisms
            for v in r.variants if v.evidence_k > BOLD_WITHIN}


FAMILY_NAME = "every mechanism run (variants × languages × metrics)"


def comparisons(mechanisms: Sequence[MechanismResult], alpha: float = ALPHA) -> list[ComparisonRow]:
    """Every (variant, language, metric) comparison, judged in one Holm family over all of them.

    Each row holds the stored figures (``baseline``, ``value``, ``diff``, ``ci95``, ``p``) and its judgement
    (:data:`~rag_lib.evaluation.claims.STORED_KEYS`: ``in_family`` False where no question changed,
    ``p_holm``, ``adjusted``); read it back with :func:`judgement`.
    """
    rows: list[dict[str, Any]] = []
    items = []
    for result in mechanisms:
        n_boot, seed = result.provenance.n_boot, result.provenance.seed
        for variant in result.variants if result.ran else []:
            label = variant.label(result.mechanism)
            for lang, metrics in sorted(variant.benchmark.items()):
                for metric in mechanism_metrics(result.k):
                    m = metrics.get(metric)
                    if m:
                        rows.append({"variant": label, "language": lang,
                                     "questions": variant.compared_on.get(lang, result.n_answerable),
                                     "metric": metric, "baseline": m.baseline, "value": m.mechanism,
                                     "diff": m.diff, "ci95": list(m.ci95), "p": m.p})
                        items.append(m.comparison(label, lang, metric, n_boot, seed))
    judged = judge(items, FAMILY_NAME, alpha).judgements
    return [decode(ComparisonRow, row | j.stored()) for row, j in zip(rows, judged, strict=True)]


def judgement(c: ComparisonRow, alpha: float = ALPHA) -> Judgement:
    """One row of :func:`comparisons` as a :class:`~rag_lib.evaluation.claims.Judgement`."""
    return Judgement.read(c.variant, c.language, c.metric, encode(c), alpha)


def family_of(compared: Sequence[ComparisonRow], alpha: float = ALPHA) -> Family:
    """The family :func:`comparisons` judged, read back from its rows."""
    return Family(FAMILY_NAME, tuple(judgement(c, alpha) for c in compared), alpha)


def failures(mechanisms: Sequence[MechanismResult]) -> dict[tuple[str, str], FailedCalls]:
    """(variant label, language) → the variant's failed LLM calls there, for the variants that had any."""
    return {(variant.label(result.mechanism), lang): failure
            for result in mechanisms if result.ran
            for variant in result.variants
            for lang, failure in sorted(variant.failures.items())}


def benchmark_rows(compared: Sequence[ComparisonRow], failed: dict[tuple[str, str], FailedCalls]
                   ) -> list[dict[str, str]]:
    """One row per mechanism variant and language: change vs baseline, 95% interval, Holm-adjusted p;
    a variant whose LLM calls failed for some questions says so in ``failed`` (never as a figure).

    ``compared`` and ``failed`` are :func:`comparisons` and :func:`failures` of the same runs."""
    rows: dict[tuple[str, str], dict[str, str]] = {
        (label, lang): {"mechanism": label, "language": lang,
                        "failed": f"{failure.failed}/{failure.of} ({failure.kinds_text})"}
        for (label, lang), failure in failed.items()}
    for c in compared:
        row = rows.setdefault((c.variant, c.language), {"mechanism": c.variant, "language": c.language})
        j = judgement(c)
        if j.in_family and j.adjusted is not None:
            lo, hi = j.adjusted
            judged = f"{effect_text(encode(c), 'no change')}; adjusted [{lo:+.3f}, {hi:+.3f}], p_Holm {j.p_holm:.3f}"
        else:
            judged = "no change; fixed, outside the family"
        row[c.metric] = f"{c.baseline:.3f} → {c.value:.3f} ({judged})"
    return list(rows.values())


_VERDICT_ORDER = {"helps": 0, "mixed": 1, "no clear effect": 2, "nothing moved": 3, "hurts": 4}
# Ranked by the share of gold pieces in the evidence sent to generation: what an incomplete answer lacks.
RANK_METRIC = "coverage@evidence"


MORE_CONTEXT = "more context"


def is_more_context(row: Mapping[str, Scalar]) -> bool:
    """A :func:`what_helps` row of a top-k variant: shown after the mechanisms, never ranked among them."""
    return str(row["verdict"]).startswith(MORE_CONTEXT)


def what_helps(compared: Sequence[ComparisonRow], failed: dict[tuple[str, str], FailedCalls],
               more_context: Collection[str] = (), *, k: int) -> list[dict[str, Scalar]]:
    """Every mechanism variant and language, ranked: clear gains first (some metric's Holm-adjusted
    interval excludes 0 with a positive difference and none negative; :class:`~rag_lib.evaluation.claims.Verdict`),
    then mixed, no clear effect, no question changed, and clear losses; within a group by the difference in
    :data:`RANK_METRIC`. A variant whose LLM calls failed on some questions is "incomplete" and ranked last,
    whatever its figures on the rest. The variants in ``more_context`` (a larger evidence k: coverage of the
    evidence cannot fall by construction) are not ranked among mechanisms: they follow, unranked, with the
    verdict "more context: …". Cells are "difference [adjusted interval]", one per metric the runs at top-``k``
    compare; ``compared`` and ``failed`` as for :func:`benchmark_rows`."""
    grouped: dict[tuple[str, str], dict[str, ComparisonRow]] = {}
    for c in compared:
        grouped.setdefault((c.variant, c.language), {})[c.metric] = c
    rows = []
    for (variant, lang), metrics in grouped.items():
        failure = failed.get((variant, lang))
        judged = {metric: judgement(c) for metric, c in metrics.items()}
        verdict = (f"incomplete: {failure.failed} of {failure.of} questions failed" if failure
                   else Verdict(tuple(judged.values())).kind)
        extra = variant in more_context
        row: dict[str, Any] = {"mechanism": variant, "language": lang,
                               "questions": next(iter(metrics.values())).questions,
                               "verdict": f"{MORE_CONTEXT}: {verdict}" if extra else verdict}
        row.update({metric: judged[metric].cell(p_holm=False) if metric in judged else None
                    for metric in mechanism_metrics(k)})
        row["_sort"] = (extra, _VERDICT_ORDER.get(verdict, len(_VERDICT_ORDER)),
                        -metrics[RANK_METRIC].diff if RANK_METRIC in metrics else 0)
        rows.append(row)
    rows.sort(key=lambda r: r.pop("_sort"))
    ranked = [r for r in rows if not is_more_context(r)]
    return [{"rank": i, **r} for i, r in enumerate(ranked, 1)] + [{"rank": "—", **r} for r in rows[len(ranked):]]


def q7_inside(rows: Sequence[SideBySideRow], evidence_k: dict[str, int],
              pieces: tuple[str, ...] = ("C1", "C2", "C3"), k: int = BOLD_WITHIN) -> list[str]:
    """The side-by-side rows that rank every one of ``pieces`` inside the Top-``k`` (or the row's larger evidence)."""
    out = []
    for row in rows:
        if not isinstance(row, Q7Ranks):
            continue  # a row without ranks
        cut = max(k, evidence_k.get(row.row, k))
        tied = row.tied if cut == k else []  # a tie at the Top-k cut is neither in nor out
        if all((rank := row.rank(p)) is not None and rank <= cut and p not in tied for p in pieces):
            out.append(row.row)
    return out


def q7_every_phrasing(mechanisms: Sequence[MechanismResult], k: int = BOLD_WITHIN) -> Q7EveryPhrasing:
    """Q7's mechanism rows over every phrasing (not only the original): how many, and which put all pieces
    inside the Top-``k`` (a piece tied at the cut does not count as inside)."""
    rows, complete = 0, []
    for result in mechanisms:
        for variant in result.variants if result.ran else []:
            for phrasing, by_lang in variant.q7.items():
                for lang, ranks in sorted(by_lang.items()):
                    if not ranks or all(r is None for r in ranks.values()):
                        continue  # a failed phrasing has no ranks to judge
                    rows += 1
                    tied = variant.q7_ties.get(phrasing, {}).get(lang, [])  # neither in nor out
                    if all(r is not None and r <= k and p not in tied for p, r in ranks.items()):
                        complete.append(f"{variant.label(result.mechanism)}, {phrasing} phrasing ({lang})")
    return Q7EveryPhrasing(rows=rows, complete=complete, k=k)


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
               "variants ran on a stated subset of questions (see `questions`), and labels are this benchmark's own.")
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
                   "(variants x languages x metrics); p from the same paired bootstrap as the interval, "
                   "two-sided; adjusted intervals at the level Holm tests each comparison at"),
        what_helps=ranked,
        relabel=decode(Relabelled | Relabel, relabel_rows(inputs.bakeoff)),
        halo_rows=halo_claims,
        casebook_rows=casebook_rows,
        headline_findings=headline_findings(tables, q7_inside(tables.get("zh", []), evidence_k),
                                            [r for r in ranked if not is_more_context(r)], family.size, compared,
                                            local, baseline_embedder(inputs.bakeoff), root),
    )


def _verdict_named(row: Mapping[str, Scalar], family: Family | None) -> str:
    """A what-helps row's verdict, with the metrics that earned it (hit@5 alone may not have)."""
    if family is None or row["verdict"] not in ("helps", "hurts", "mixed"):
        return str(row["verdict"])
    earned = family.verdict(str(row["mechanism"]), str(row["language"])).effects
    return f"{row['verdict']} on {', '.join(j.metric for j in earned)}"


def halo_rows(ranked: list[dict[str, Scalar]], chunking: ChunkingResult | None, k: int, family: Family | None = None
              ) -> list[HaloRow]:
    """Halo's ranked claims (theirs) beside our figures for the same change, per language.

    Ours: hit@``k`` differences (hit@5 at the workbook's k) with Holm-adjusted intervals from 11_chunking
    (structural − each strategy, 11's family) and from the 06 mechanism runs (reranker, hybrid overall and on
    the identifier subset; the summary's family), and the Top-5 / Top-20 context cost from 11_chunking
    (``chunking``); "not run" where the notebook has no results.
    """
    theirs = halo()
    hit = hit_name(k)
    out = []
    for lang in ("zh", "en"):
        if chunking:  # 11's own Holm family: its adjusted intervals, as its Findings quote them
            chunking_hit = hit_name(chunking.k)  # 11's hit rate, at the k 11 ran with
            alpha = chunking.provenance.claims.alpha
            parts = [f"vs {r.strategy}: " + r.judgement(alpha).text(scoped=False)
                     for r in chunking.comparison_rows if r.language == lang and r.metric == chunking_hit]
            ours = "structural − strategy (adjusted over 11's comparisons): " + "; ".join(parts)
        else:
            ours = "not run (11_chunking has no results)"
        out.append(HaloRow("structural chunking", lang, f"+{theirs['chunking']['structural_hit_rate_points']} points",
                           ours))
        for change, prefix, claim in (
            ("reranker", "reranker:", f"+{theirs['reranker']['hit_rate_points']} points"),
            ("hybrid search, all questions", "hybrid: hybrid", f"+{theirs['hybrid']['hit_rate_points']} points"),
            ("hybrid search, identifier questions", "hybrid: hybrid · identifier questions", "far more"),
        ):
            rows = [r for r in ranked if r["language"] == lang and (
                str(r["mechanism"]).startswith(prefix) if prefix.endswith(":") else r["mechanism"] == prefix)]
            ours = "; ".join(f"{r['mechanism']} {hit} {r[hit]} ({r['questions']} questions, "
                             f"{_verdict_named(r, family)})"
                             for r in rows) or "not run"
            out.append(HaloRow(change, lang, claim, ours))
        if chunking:
            small, large, cut = chunking.context_cut(lang)
            ours = (f"Top-5 {small.tokens:.0f} vs Top-20 {large.tokens:.0f} tokens per "
                    f"question ({cut:.0%} less); coverage {small.coverage:.3f} vs {large.coverage:.3f}; "
                    "answers not compared")
        else:
            ours = "not run (11_chunking has no results)"
        out.append(HaloRow("Top-5 instead of Top-20", lang, f"cost cut by {theirs['context']['cost_cut']}", ours))
    return out


def _end_sentence(text: str) -> str:
    """``text`` closed with a full stop, unless it already ends a sentence (a row label may end with "?")."""
    return text if text.endswith(("?", ".", "!")) else text + "."
