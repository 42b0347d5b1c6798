"""Running one declared mechanism: every variant on Q7 and on the benchmark, against the baseline."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from rag_lib.benchmark import Q7_PHRASINGS, Question
from rag_lib.evaluation import MRR, HitAt, Measure, PieceCoverage, compare, piece_ranks
from rag_lib.evaluation.margins import at_the_cut
from rag_lib.evaluation.stats import MIN_RESAMPLES, PairedDifference
from rag_lib.experiments.mechanisms.registry import (
    BaselineDense,
    BuildContext,
    RankFailed,
    Variant,
    get_mechanism,
)
from rag_lib.experiments.mechanisms.report import MeasuredVariant, judge_variants, tables
from rag_lib.pipeline.workbench import RunKey, Workbench
from rag_lib.results.baseline import BaselineMeasures
from rag_lib.results.comparisons import FamilySummary
from rag_lib.results.mechanism import (
    BaselineFigures,
    BaselineProvenance,
    FailedCalls,
    MechanismProvenance,
    MechanismResult,
    Q7Ranks,
    VariantResult,
    mechanism_metrics,
)
from rag_lib.retrieval import Ranking


def q7_piece_ranks(q7: Question, rank: Callable[[str], Ranking], phrasings: Sequence[str | None],
                   languages: Sequence[str], failures: dict[str, dict[str, str]] | None = None,
                   ties: dict[str, dict[str, list[str]]] | None = None,
                   ) -> dict[str, dict[str, dict[str, int | None]]]:
    """``{phrasing: {lang: {"C1": rank, …}}}`` (first rank of each piece).

    A phrasing the variant fails to rank gets no ranks (``None``), and its error kind goes into
    ``failures[phrasing][lang]``: a failure is never shown as the baseline's ranks. The pieces whose rank
    is a tie at the Top-10 cut (:func:`rag_lib.evaluation.margins.at_the_cut`) go into ``ties[phrasing][lang]``.
    """
    out: dict[str, dict[str, dict[str, int | None]]] = {}
    for phrasing in phrasings:
        for lang in languages:
            try:
                ranking = rank(q7.text(lang, phrasing))
                ranks = piece_ranks(q7.pieces, ranking)
            except RankFailed as exc:
                ranks = [None] * len(q7.pieces)
                if failures is not None:
                    failures.setdefault(phrasing or "original", {})[lang] = exc.kind
            else:
                tied = [f"C{i + 1}" for i, r in enumerate(ranks) if at_the_cut(ranking, r)]
                if ties is not None and tied:
                    ties.setdefault(phrasing or "original", {})[lang] = tied
            out.setdefault(phrasing or "original", {})[lang] = {f"C{i + 1}": r for i, r in enumerate(ranks)}
    return out


def _rank_all(rank: Callable[[str], Ranking], questions: Sequence[Question], lang: str,
              ) -> tuple[dict[str, Ranking], dict[str, int]]:
    """Each question's ranking, and how many failed per error kind (left out of the rankings)."""
    runs: dict[str, Ranking] = {}
    failed: dict[str, int] = {}
    for q in questions:
        try:
            runs[q.id] = rank(q.text(lang))
        except RankFailed as exc:
            failed[exc.kind] = failed.get(exc.kind, 0) + 1
    return runs, failed


def _variant_status(q7: Q7Ranks, q7_failures: dict[str, dict[str, str]], failures: dict[str, FailedCalls],
                    langs: Sequence[str], questions: Sequence[Question]) -> str:
    """``ran``; ``partial`` when some calls failed; ``failed`` when nothing could be ranked."""
    q7_total = sum(len(by_lang) for by_lang in q7.values())
    q7_failed = sum(len(by_lang) for by_lang in q7_failures.values())
    bench_failed = sum(f.failed for f in failures.values())
    if not q7_failed and not bench_failed:
        return "ran"
    if q7_failed == q7_total and bench_failed == len(langs) * len(questions):
        return "failed"
    return "partial"


def _measures(k: int, evidence_k: int) -> dict[str, Measure]:
    """What each compared metric is measured with at the run's top-``k`` (coverage@evidence: at the
    variant's own k)."""
    return dict(zip(mechanism_metrics(k), (HitAt(k), PieceCoverage(10), MRR(), PieceCoverage(evidence_k)),
                    strict=True))


def variant_scores(wb: Workbench, rankings: dict[str, Ranking], evidence_k: int) -> dict[str, list[float]]:
    """Each compared metric's per-question values (:func:`rag_lib.results.mechanism.mechanism_metrics`;
    ``coverage@evidence`` at the variant's own ``evidence_k``), questions in id order."""
    measures = _measures(wb.config.k, evidence_k)
    table = wb.evaluate(rankings, tuple(measures.values()))
    return {metric: [float(v) for v in table[m.name]] for metric, m in measures.items()}


def _baseline_scores(baseline: BaselineMeasures, lang: str, question_ids: Sequence[str],
                     k: int) -> dict[str, list[float]]:
    """The baseline's per-question values as 01 measured them at top-``k``, in :func:`_scores`' order (ids
    sorted)."""
    qids = sorted(question_ids)
    return {metric: baseline.scores(lang, qids, m.name) for metric, m in _measures(k, k).items()}


def measure_variant(v: Variant, wb: Workbench, baseline: BaselineMeasures,
                    base_scores: Mapping[str, dict[str, list[float]]], languages: Sequence[str], n_boot: int,
                    seed: int) -> MeasuredVariant:
    """One variant: Q7's piece ranks per phrasing and language, and its paired comparison with the
    baseline on the questions it ranked, per language (failures counted, never scored)."""
    q7 = wb.benchmark.by_casebook("Q7")
    questions = wb.benchmark.questions(answerable=True)
    langs = [lang for lang in languages if v.languages is None or lang in v.languages]
    evidence_k = wb.config.k if v.evidence_k is None else v.evidence_k
    q7_failures: dict[str, dict[str, str]] = {}
    q7_ties: dict[str, dict[str, list[str]]] = {}
    q7_ranks = q7_piece_ranks(q7, v.rank, v.q7_phrasings, languages, q7_failures, q7_ties)
    paired: dict[str, dict[str, PairedDifference]] = {}
    failures: dict[str, FailedCalls] = {}
    compared_on: dict[str, int] = {}
    notes = list(v.notes)
    asked = [q for q in questions if v.question_ids is None or q.id in v.question_ids]
    for lang in langs:
        runs, failed = _rank_all(v.rank, asked, lang)
        if failed:
            failures[lang] = FailedCalls(sum(failed.values()), of=len(asked), by_kind=dict(sorted(failed.items())))
        if not runs:
            continue  # every question failed: nothing to compare, and nothing shown as if it ran
        # Paired comparison on the questions the variant ranked (all of them, unless some failed).
        same = len(runs) == len(questions)
        base = base_scores[lang] if same else _baseline_scores(baseline, lang, list(runs), wb.config.k)
        scores = variant_scores(wb, runs, evidence_k)
        paired[lang] = {m: compare(scores[m], base[m], n_boot, seed) for m in mechanism_metrics(wb.config.k)}
        if not same:
            compared_on[lang] = len(runs)
    if v.llm is not None and langs and not set(languages) <= set(langs):
        notes.append(f"LLM variant compared on the whole benchmark in {', '.join(langs) or 'no language'} only "
                     f"(runtime); Q7 in every language.")
    variant = VariantResult(
        name=v.name, description=v.description, evidence_k=evidence_k, benchmark_languages=langs, notes=notes,
        q7=q7_ranks, q7_ties=q7_ties, benchmark={},
        status=_variant_status(q7_ranks, q7_failures, failures, langs, asked),
        q7_failures=q7_failures, failures=failures, compared_on=compared_on,
        llm_calls=None if v.llm is None else v.llm.summary(),
        q7_llm_outputs=None if v.llm is None else v.llm.outputs(
            [q7.text(lang, ph) for ph in Q7_PHRASINGS for lang in languages]),
        provenance=v.provenance)
    return MeasuredVariant(variant, paired)


def run_mechanism(
    mechanism: str,
    languages: Sequence[str] = ("zh", "en"),
    llm_languages: Sequence[str] = ("zh", "en"),
    use_llm: bool = True,
    n_boot: int = MIN_RESAMPLES,
    seed: int = 0,
    workbench: Workbench | None = None,
    baseline: BaselineMeasures | None = None,
) -> MechanismResult:
    """Run every variant of ``mechanism`` and compare it with the baseline.

    Parameters
    ----------
    mechanism : str
        A declared mechanism (:func:`mechanism`; :data:`MECHANISM_REGISTRY`).
    languages : sequence of str
        Benchmark languages.
    llm_languages : sequence of str
        Languages in which LLM-based variants run on the whole benchmark (they always run on Q7's
        three phrasings in every language); fewer languages keep runtime modest.
    use_llm : bool
        Build the LLM variants (rewrite, LLM split) with ``generation.llm`` from config.yaml.
    baseline : BaselineMeasures, optional
        What the variants are compared with (default: the baseline 01 stored under ``RAG_RESULTS_DIR``,
        measured once there). It must have been measured with this workbench's model and inputs.

    Returns
    -------
    MechanismResult
        ``status`` "ran" or "unavailable" (with the ``reason``); ``variants``: one
        :class:`~rag_lib.results.mechanism.VariantResult` per variant (Q7's ranks per phrasing and language,
        its judged comparison with the baseline per language and metric, …); the ``baseline``, the
        ``provenance`` and the report tables.
    """
    get_mechanism(mechanism)  # an unknown name fails here, before anything is embedded
    wb = workbench or Workbench()
    questions = wb.benchmark.questions(answerable=True)
    base_rank = BaselineDense(wb)  # what variants build on; its measurements are 01's
    base_key = RunKey("dense", wb.config.embedder)
    phrasings = [p or "original" for p in Q7_PHRASINGS]
    baseline = baseline or BaselineMeasures.read(needed_by=f"the {mechanism} mechanism run (its baseline)",
                                                 configuration=base_key.label)
    base_provenance = wb.provenance(base_key)
    baseline.check(base_provenance, wb.inputs_sha256, languages, [q.id for q in questions], phrasings)
    base_scores = {lang: _baseline_scores(baseline, lang, [q.id for q in questions], wb.config.k)
                   for lang in languages}
    base_result = BaselineFigures(
        q7=baseline.q7_ranks(phrasings, languages),
        benchmark={lang: {m: round(float(np.mean(v)), 4) for m, v in s.items()} for lang, s in base_scores.items()},
    )

    spec = get_mechanism(mechanism)
    ctx = BuildContext(wb, base_rank, use_llm, llm_languages)
    variants, unavailable = spec.variants(ctx)
    status, reason = ("ran", "") if variants else (
        "unavailable", "; ".join(unavailable.values()) or "no variant of this mechanism can run on this machine")
    measured = [measure_variant(v, wb, baseline, base_scores, languages, n_boot, seed) for v in variants]
    # One Holm family per run, over every metric of every variant and language (rag_lib.evaluation.claims).
    entries, family = judge_variants(measured, n_boot, seed)
    provenance = MechanismProvenance(
        baseline=BaselineProvenance(**base_provenance, k=wb.config.k), n_boot=n_boot, seed=seed, ci_percent=95,
        n_answerable=len(questions), languages=list(languages), parameters=spec.resolved_parameters(wb.config),
        claims=FamilySummary.of(family), llm=ctx.llm, rerankers=ctx.rerankers)
    return MechanismResult(mechanism=mechanism, status=status, reason=reason, variants=entries,
                           baseline=base_result, unavailable=unavailable, provenance=provenance,
                           **tables(entries, base_result.q7, wb.config.k))
