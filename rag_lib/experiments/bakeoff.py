"""The embedding bake-off: every available embedder + BM25 + hybrid on the whole benchmark."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rag_lib.benchmark import Q7_PHRASINGS
from rag_lib.embedding import available_embedders
from rag_lib.evaluation import PieceCoverage, diagnose, piece_ranks
from rag_lib.evaluation.readers import missed_gold
from rag_lib.pipeline.workbench import RunKey, Workbench
from rag_lib.results.bakeoff import BakeoffResult, Q7RankRow
from rag_lib.results.provenance import retriever_provenance
from rag_lib.results.typed_json import Scalar


def configurations(embedders: Sequence[str], status: dict[str, bool | str], default: str) -> list[RunKey]:
    """Dense runs for the embedders that are here, then BM25 and hybrid (with ``default``, the run's default
    embedder)."""
    keys = [RunKey("dense", name) for name in embedders if status.get(name) is True]
    keys.append(RunKey("bm25"))
    if status.get(default) is True:
        keys.append(RunKey("hybrid", default))
    return keys


def run_bakeoff(
    embedders: Sequence[str], k: int | None = None, languages: Sequence[str] = ("zh", "en"),
    workbench: Workbench | None = None,
) -> BakeoffResult:
    """Rank every answerable question with every configuration and summarise.

    The result holds provenance, per-configuration means, Q7 piece ranks, layer counts and each
    question's measures (the baseline's are what 06 compares against:
    :class:`~rag_lib.results.baseline.BaselineMeasures`). Embedders whose files are missing are
    listed under ``unavailable`` with the reason. ``k`` defaults to the workbench's ``config.k``.
    """
    wb = workbench or Workbench()
    k = wb.config.top_k(k)
    status = {name: available_embedders().get(name, f"unknown embedder {name!r}") for name in embedders}
    keys = configurations(embedders, status, wb.config.embedder)
    questions = wb.benchmark.questions(answerable=True)
    # The workbench's measures at its k; a k of this run other than that (and 10) adds its own coverage.
    measures = wb.measures()
    if k not in (wb.config.k, 10):
        measures = (*measures, PieceCoverage(k))
    summary_rows: list[dict[str, Scalar]] = []
    layers: dict[str, Counter[str]] = {}
    per_question: dict[str, dict[str, dict[str, float]]] = {}
    worst_ranks: dict[str, dict[str, int | None]] = {}
    for key in keys:
        for lang in languages:
            runs = wb.run(key, questions, lang)
            table = wb.evaluate(runs, measures)
            means = table.mean(numeric_only=True).round(4).to_dict()
            summary_rows.append({"configuration": key.label, "language": lang, **means})
            label = f"{key.label} [{lang}]"
            diagnoses = {q.id: diagnose(q.pieces, runs[q.id], k) for q in questions}
            layers[label] = Counter(str(d.layer) for d in diagnoses.values())
            worst_ranks[label] = {qid: d.worst_rank for qid, d in diagnoses.items()}
            # Full precision: the mechanism runs (06) pair their per-question values with the baseline's here.
            per_question[label] = table.to_dict(orient="index")
    q7 = wb.benchmark.by_casebook("Q7")
    q7_rows = []
    for key in keys:
        for phrasing in Q7_PHRASINGS:
            for lang in languages:
                ranks = piece_ranks(q7.pieces, wb.rank(q7.text(lang, phrasing), key))
                q7_rows.append(Q7RankRow(key.label, phrasing or "original", lang, *ranks))
    return BakeoffResult(
        k=k,
        languages=list(languages),
        n_answerable=len(questions),
        configurations=[key.label for key in keys],
        configurations_text=", ".join(key.label for key in keys),
        unavailable={name: why for name, why in status.items() if why is not True},
        unavailable_text=", ".join(name for name, why in status.items() if why is not True) or "none",
        provenance={key.label: retriever_provenance(wb.provenance(key)) for key in keys},
        summary_rows=summary_rows,
        plot={"coverage@10": _pivot(summary_rows, "coverage@10")},
        q7_rows=q7_rows,
        layers={label: dict(sorted(c.items())) for label, c in layers.items()},
        per_question=per_question,
        worst_ranks=worst_ranks,
        inputs_sha256=wb.inputs_sha256,
    )


def _pivot(rows: list[dict[str, Scalar]], metric: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for row in rows:
        out.setdefault(str(row["configuration"]), {})[str(row["language"])] = float(row[metric])
    return out


def findings(result: BakeoffResult) -> list[str]:
    """Sentences generated from :func:`run_bakeoff`'s stored numbers, with their caveats."""
    out: list[str] = []
    rows = result.summary_rows
    for lang in result.languages:
        mine = sorted((r for r in rows if r["language"] == lang), key=lambda r: -r["coverage@10"])
        if not mine:
            continue
        best, worst, hit = mine[0], mine[-1], f"hit@{result.k}"
        out.append(f"{lang}: {best['configuration']} covers the most gold pieces in the Top-10 "
                   f"(coverage@10 {best['coverage@10']:.3f}, {hit} {best[hit]:.3f}); "
                   f"{worst['configuration']} the fewest ({worst['coverage@10']:.3f}).")
    by_conf: dict[str, dict[str, float]] = {}
    for r in rows:
        by_conf.setdefault(r["configuration"], {})[r["language"]] = r["coverage@10"]
    gaps = {c: v["en"] - v["zh"] for c, v in by_conf.items() if {"zh", "en"} <= set(v)}
    if gaps:
        widest = max(gaps, key=lambda c: gaps[c])
        out.append(f"Asking in Chinese about an English corpus costs most with {widest}: coverage@10 "
                   f"{by_conf[widest]['zh']:.3f} (zh) vs {by_conf[widest]['en']:.3f} (en), as expected where the model "
                   "(or a lexical index) does not map Chinese words to English text.")
    q7 = [r for r in result.q7_rows if r.phrasing == "original"]
    for lang in result.languages:
        inside = [r.configuration for r in q7 if r.language == lang
                  and all(rank is not None and rank <= 10 for rank in (r.C1, r.C2, r.C3))]
        out.append(f"Q7 ({lang}, original phrasing): {len(inside)} of "
                   f"{sum(r.language == lang for r in q7)} configurations put all of C1–C3 in the Top-10"
                   + (f" ({', '.join(inside)})." if inside else "; none of the retrievers run here fixes Q7."))
    out.append(f"Caveats: point estimates over {result.n_answerable} answerable questions with this benchmark's "
               f"labels (06 gives paired intervals for the embedder and hybrid comparisons); {missed_gold().caveat()}; "
               f"the casebook's models are not on this machine ({result.unavailable_text or 'none missing'}), so "
               "their rows are absent, not equal to ours.")
    return out
