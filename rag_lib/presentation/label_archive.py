"""Figures of an earlier label version, kept so a relabelling can be read as "before → after".

Before the gold labels change, :func:`archive_label_version` copies the label-dependent figures out of
the current results (01's rows, 08's Q7 tables) and the resolved gold of every batch into
:data:`LABEL_ARCHIVE`; afterwards :func:`relabel_rows` shows them beside the new run's (08's "before and
after the relabelling"). Labels v3 come from pooling (:mod:`rag_lib.labels.pool`), v4 from a blind re-read of
the pooled decisions (:mod:`rag_lib.labels.review.reread`): each version's archive (:data:`POOL_ARCHIVE` for
the current one) holds its gold and the pool, every reported configuration's Top-10 per question, so
:func:`pooled_relabel_rows` gives every configuration's hit@5 and coverage@10 under both versions without
running anything again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_lib.benchmark import Benchmark
from rag_lib.benchmark.pool import ORIGINAL, Pool, Source
from rag_lib.core.config import RESULTS_DIR, results_dir
from rag_lib.core.io import write_json
from rag_lib.evaluation import hit_name
from rag_lib.results.bakeoff import EXPERIMENT as BAKEOFF
from rag_lib.results.bakeoff import BakeoffResult
from rag_lib.results.baseline import baseline_label
from rag_lib.results.summary import EXPERIMENT as SUMMARY
from rag_lib.results.summary import SummaryResult
from rag_lib.results.typed_json import encode

# Figures of the previous label version (v3), copied from the results.json files a run produced with it, and
# its gold (labels-v1.json and labels-v2.json hold the earlier versions', shown in 08 before labels v3 and v4).
LABEL_ARCHIVE = RESULTS_DIR / "archive" / "labels-v3-results.json"
# The current labels (v4): the gold per batch and the pool they were decided from (labels-v3.json: v3's).
POOL_ARCHIVE = RESULTS_DIR / "archive" / "labels-v4.json"
# The pool keeps each configuration's Top-10; its hit rate is cut at 5, the k its archived figures were
# measured at (labels-v2/v3 store "hit@5"), whatever the run's k.
POOL_HIT_K = 5
POOLED_METRICS = (hit_name(POOL_HIT_K), "coverage@10")


def _arrow(before: Any, after: Any) -> str:
    return f"{after}" if before == after else f"{before} → {after}"


def relabel_rows(bakeoff: BakeoffResult | None, archive: Path = LABEL_ARCHIVE,
                 pool_archive: Path = POOL_ARCHIVE) -> dict[str, Any]:
    """Label-dependent figures before (the archived label version) and after (the current results).

    ``metrics``: hit@5 and coverage@10 of every bake-off configuration per language; ``q7``: the
    first rank of each Q7 piece per configuration, phrasing and language; ``closing``: the default
    configuration's rows per language. Both sides are read from results.json files a run produced;
    ``bakeoff`` is 01's (``None`` when it has not run; its hit rate is at its stored ``k``). ``pooled``: every
    pooled configuration's hit@5 and coverage@10 on each batch under the archived labels and the pooled ones
    (:func:`pooled_relabel`).
    """
    if bakeoff is None or not archive.is_file():
        return {"available": False, "archive": archive.name, "pooled": pooled_relabel(archive, pool_archive)}
    before = json.loads(archive.read_text(encoding="utf-8"))

    def key(r: Mapping[str, Any]) -> tuple[str, str, str]:  # an archived row, or a summary row of 01
        return r["configuration"], r.get("phrasing", ""), r["language"]

    old_metrics = {key(r): r for r in before["summary_rows"]}
    metrics = [{"configuration": r["configuration"], "language": r["language"],
                **{m: _arrow(f"{old_metrics[key(r)][m]:.3f}" if key(r) in old_metrics else "—", f"{r[m]:.3f}")
                   for m in (hit_name(bakeoff.k), "coverage@10")}} for r in bakeoff.summary_rows]
    old_q7 = {key(r): r for r in before["q7_rows"]}
    q7 = [{"configuration": r.configuration, "phrasing": r.phrasing, "language": r.language,
           **{p: _arrow(old_q7.get((r.configuration, r.phrasing, r.language), {}).get(p, "—"), rank)
              for p, rank in r.by_piece().items()}} for r in bakeoff.q7_rows]
    default = baseline_label()
    closing = {lang: {"baseline": next(m for m in metrics if m["configuration"] == default and m["language"] == lang),
                      "q7": {r["phrasing"]: r for r in q7 if r["configuration"] == default and r["language"] == lang}}
               for lang in sorted({r["language"] for r in metrics})}
    return {"available": True, "archive": archive.name, "before_commit": before["commit"],
            "before_note": before["note"], "metrics": metrics, "q7": q7, "closing": closing,
            "pooled": pooled_relabel(archive, pool_archive)}


def gold_snapshot(bench: Benchmark) -> dict[str, list[list[str]]]:
    """Each answerable question's resolved gold: one sorted list of chunk ids per piece."""
    return {q.id: [sorted(ids) for ids in q.pieces] for q in bench.questions(answerable=True)}


def _pooled_scores(tops: Mapping[str, Sequence[str]], gold: Mapping[str, Sequence[Sequence[str]]],
                   ) -> dict[str, float] | None:
    """hit@5 and coverage@10 over the questions both know (``tops``: question → Top-10 ids)."""
    qids = sorted(set(tops) & set(gold))
    if not qids:
        return None
    hit, cov = [], []
    for qid in qids:
        top5, top10 = set(tops[qid][:POOL_HIT_K]), set(tops[qid][:10])
        pieces = [set(p) for p in gold[qid]]
        hit.append(float(any(top5 & p for p in pieces)))
        cov.append(sum(bool(top10 & p) for p in pieces) / len(pieces))
    return {POOLED_METRICS[0]: sum(hit) / len(qids), "coverage@10": sum(cov) / len(qids), "n": len(qids)}


def gold_changes(tops: Mapping[str, Sequence[str]], before: Mapping[str, Sequence[Sequence[str]]],
                 after: Mapping[str, Sequence[Sequence[str]]]) -> int:
    """How many (question, chunk) pairs of a configuration's Top-10 are gold under one label version and not
    the other: the relabelling's changes inside that system's pool."""
    def gold(labels: Mapping[str, Sequence[Sequence[str]]], qid: str) -> set[str]:
        return {cid for piece in labels.get(qid, []) for cid in piece}

    return sum(len(set(ids[:10]) & (gold(before, qid) ^ gold(after, qid))) for qid, ids in tops.items())


def pooled_relabel_rows(pool: Pool, before: Mapping[str, Mapping[str, Sequence[Sequence[str]]]],
                        after: Mapping[str, Mapping[str, Sequence[Sequence[str]]]],
                        phrasing: str = ORIGINAL) -> list[dict[str, Any]]:
    """hit@5 and coverage@10 of every pooled configuration under two label versions.

    ``before`` and ``after`` are ``{batch: {question: [[gold ids of C1], …]}}`` (:func:`gold_snapshot`).
    Both metrics need only the Top-10, which the pool keeps for every configuration, batch, language and
    question; ``n`` is how many questions the configuration ranked (an LLM variant's failed calls and
    the reranker's subset rank fewer).
    """
    by_source: dict[Source, dict[str, tuple[str, ...]]] = {}
    for qid, tops in pool.tops.items():
        for key, ids in tops.items():
            source = Source.parse(key)
            if source.phrasing == phrasing:
                by_source.setdefault(source, {})[qid] = ids
    rows = []
    for source, tops in sorted(by_source.items(), key=lambda kv: (kv[0].batch, kv[0].configuration, kv[0].lang)):
        old = _pooled_scores(tops, before.get(source.batch, {}))
        new = _pooled_scores(tops, after.get(source.batch, {}))
        if old is None or new is None:
            continue
        row: dict[str, Any] = {"batch": source.batch, "configuration": source.configuration,
                               "language": source.lang, "n": int(new["n"]),
                               "gold changed": gold_changes(tops, before.get(source.batch, {}),
                                                            after.get(source.batch, {}))}
        for m in POOLED_METRICS:
            row[f"{m} before"], row[f"{m} after"] = round(old[m], 4), round(new[m], 4)
            row[f"{m} change"] = round(new[m] - old[m], 4)
            row[m] = _arrow(f"{old[m]:.3f}", f"{new[m]:.3f}")
        rows.append(row)
    return rows


def pooled_relabel(archive_before: Path = LABEL_ARCHIVE, archive_after: Path = POOL_ARCHIVE) -> dict[str, Any]:
    """08's per-configuration rows, the archived version → the current one (v3 → v4), from the two archives
    (``available`` False without them, and ``why``); 08's report shows ``rows`` under the configuration, ``n``,
    ``gold changed`` and :data:`POOLED_METRICS`."""
    missing = {"available": False, "rows": [], "why": f"{archive_before.name} with the gold of both batches and "
               f"{archive_after.name} with the pool are both needed"}
    if not archive_before.is_file() or not archive_after.is_file():
        return missing
    before = json.loads(archive_before.read_text(encoding="utf-8"))
    after = json.loads(archive_after.read_text(encoding="utf-8"))
    if "gold" not in before or "pool" not in after:
        return missing
    pool = Pool.from_json(after["pool"])
    rows = pooled_relabel_rows(pool, before["gold"], after["gold"])
    return {"available": True, "rows": rows,
            "depth": pool.depth, "not_pooled": dict(pool.not_pooled), "sizes": after.get("sizes", {}),
            "decisions": after.get("decisions", {})}


def archive_pool(pool: Pool, gold: Mapping[str, Mapping[str, Sequence[Sequence[str]]]], commit: str, note: str,
                 decisions: Mapping[str, Any], out: Path = POOL_ARCHIVE, version: int = 4) -> dict[str, Any]:
    """Write a label version's archive: the gold per batch, the pool per question, and the decision counts."""
    payload = {"commit": commit, "note": note, "version": version, "gold": {b: dict(g) for b, g in gold.items()},
               "sizes": pool.sizes(), "decisions": dict(decisions), "pool": pool.to_json()}
    write_json(out, payload)
    return payload


def archive_label_version(commit: str, note: str, root: Path | None = None,
                          out: Path = LABEL_ARCHIVE,
                          gold: Mapping[str, Mapping[str, Sequence[Sequence[str]]]] | None = None) -> dict[str, Any]:
    """Copy the figures that depend on the gold labels out of the current results, before a relabelling.

    Kept: the baseline rows of 01 (every configuration, both languages), the Q7 rows of 01, and the
    Q7 side-by-side tables of 08. ``commit`` names the commit whose results these are; ``note`` says
    which label version produced them; ``gold`` (``{batch: gold_snapshot}``) is kept beside them. Nothing
    is recomputed: values are copied verbatim.
    """
    root = root or results_dir()
    bakeoff, summary = BakeoffResult.find(BAKEOFF.name, root), SummaryResult.find(SUMMARY.name, root)
    if bakeoff is None or summary is None:
        raise FileNotFoundError(f"{root}: {BAKEOFF.name} and {SUMMARY.name} results are needed; run them first")
    payload = {"commit": commit, "note": note, "summary_rows": bakeoff.summary_rows,
               "q7_rows": encode(bakeoff.q7_rows), "side_by_side": encode(summary.side_by_side)}
    if gold is not None:
        payload["gold"] = {b: dict(g) for b, g in gold.items()}
    write_json(out, payload)
    return payload
