"""``W4_mechanisms``: what changes retrieval on any workbook (the casebook's 06, on every answerable question of
the workbook instead of Q7): each declared mechanism's variants (:mod:`rag_lib.experiments.mechanisms.catalog`)
rank every answerable question in each language, measured per question beside the dense baseline.

Only variants that need no LLM call run here: an LLM variant (rewrite, LLM split, the LLM reranker) costs a
recorded call per question and language, minutes each on 2 cores, and a workbook has no recorded calls; each one
left out is listed with the reason. Stored long (:mod:`rag_lib.results.workbook_mechanisms`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_lib.evaluation.stats import MIN_RESAMPLES
from rag_lib.experiments.mechanisms.registry import BaselineDense, BuildContext, Variant, get_mechanism
from rag_lib.experiments.mechanisms.run import variant_scores
from rag_lib.pipeline.workbench import RunKey, Workbench
from rag_lib.pipeline.workbook import OpenWorkbook, described
from rag_lib.results.workbook import Measurement
from rag_lib.results.workbook_mechanisms import BASELINE, NotRun, VariantRun, WorkbookMechanismsResult
from rag_lib.retrieval import Ranking

# Mechanisms whose every variant calls an LLM (or its recorded calls) per question: not run on a workbook.
NEEDS_LLM = {"reranker": "the offline reranker is an LLM's yes/no judgement of each candidate chunk (40 calls per "
                         "question, minutes each on 2 cores), and the casebook's cross-encoder is not on this machine",
             "query_rewrite": "an LLM rewrites each question (one recorded call per question and language); the "
                              "casebook-aligned phrasing exists for Q7 only"}
ENGINE_CHECK = "the baseline's own weights under another engine (an engine check, not a mechanism)"
CASEBOOK_ONLY = "runs on no language of this workbook (casebook questions only)"


def _measured(wb: Workbench, name: str, rankings: dict[str, Ranking], lang: str,
              evidence_k: int) -> list[Measurement]:
    """Each question's value of every compared metric, as 06 measures a variant (:func:`variant_scores`)."""
    scores = variant_scores(wb, rankings, evidence_k)
    return [Measurement(name, lang, qid, metric, values[i])
            for i, qid in enumerate(sorted(rankings)) for metric, values in scores.items()]


def _same_model_as_baseline(v: Variant, wb: Workbench) -> bool:
    """An embedding variant of the default's own model under another engine: an engine check, not a mechanism."""
    embedder = getattr(v.provenance, "embedder", None)
    return (embedder is not None and v.name.startswith("dense:")
            and embedder.get("checksum") == wb.embedder().describe().get("checksum"))


def run_mechanisms(opened: OpenWorkbook, mechanisms: Sequence[str], n_boot: int = MIN_RESAMPLES,
                   seed: int = 0) -> WorkbookMechanismsResult:
    """Each of ``mechanisms``' variants that needs no LLM, and the baseline, on every answerable question."""
    wb, workbook = opened.workbench, opened.workbook
    questions = wb.benchmark.questions(answerable=True)
    base = BaselineDense(wb)
    measurements = [m for lang in workbook.languages
                    for m in _measured(wb, BASELINE, {q.id: base(q.text(lang)) for q in questions}, lang, wb.config.k)]
    ran: list[VariantRun] = []
    not_run: list[NotRun] = []
    for mechanism in mechanisms:
        if mechanism in NEEDS_LLM:
            not_run.append(NotRun(mechanism, NEEDS_LLM[mechanism]))
            continue
        variants, unavailable = get_mechanism(mechanism).variants(BuildContext(wb, base, False, ()))
        not_run += [NotRun(f"{mechanism}: {name}", reason) for name, reason in unavailable.items()]
        for v in variants:
            langs = [lang for lang in workbook.languages if v.languages is None or lang in v.languages]
            if _same_model_as_baseline(v, wb) or not langs:
                not_run.append(NotRun(f"{mechanism}: {v.name}", ENGINE_CHECK if langs else CASEBOOK_ONLY))
                continue
            asked = [q for q in questions if v.question_ids is None or q.id in v.question_ids]
            evidence_k = wb.config.k if v.evidence_k is None else v.evidence_k
            for lang in langs:
                measurements += _measured(wb, v.name, {q.id: v.rank(q.text(lang)) for q in asked}, lang, evidence_k)
            embedder = getattr(v.provenance, "embedder", None) if v.name.startswith("dense:") else None
            ran.append(VariantRun(mechanism, v.name, v.description, evidence_k, langs,
                                  None if v.question_ids is None else sorted(v.question_ids), described(embedder),
                                  list(v.notes)))
    label = RunKey("dense", wb.config.embedder).label
    return WorkbookMechanismsResult(workbook.name, workbook.title, wb.config.k, list(workbook.languages), label,
                                    opened.model(label), len(questions), ran, not_run, measurements, n_boot, seed)
