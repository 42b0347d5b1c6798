"""Pooled relabelling (TREC-style pooling): the Top-10 of every reported configuration, per question.

Labels v2 were audited from one system's ranking (dense, default embedder, structural chunks), so the
chunks a reviewer ever looked at favoured that configuration. The pool is the union, per question, of
the Top-:data:`POOL_DEPTH` of every configuration the workbook reports, on every batch, in both
languages and every phrasing; each pooled chunk is a candidate a reviewer decides
(``data/benchmark/audit_decisions.yaml``), whichever system found it.

A :class:`Configuration` ranks question texts; :func:`build_pool` ranks every question with each one
and keeps the Top-``depth`` ids per :class:`Source` (configuration, batch, language, phrasing).
A ranking that fails (an LLM call without a record) is counted in ``failed``, never replaced.
:func:`workbook_configurations` lists the workbook's configurations on one batch, and the reason for
each reported configuration that is not pooled. The pool is stored as data
(:data:`POOL_PATH`) so the audit reads it without ranking anything:

    python -m rag_lib.labels.pool            # rank and write data/benchmark/pool.json (replays LLM calls)
    python -m rag_lib.labels audit     # shows each pooled candidate with its pool sources
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rag_lib.benchmark import LANGS, Benchmark, Question
from rag_lib.benchmark.pool import (  # noqa: F401 - the pool's types, re-exported for callers of this module
    KEY_SEP,
    NOT_POOLED,
    ORIGINAL,
    POOL_DEPTH,
    POOL_PATH,
    Configuration,
    Pool,
    PoolHit,
    Query,
    Source,
    build_pool,
    load_pool,
    merge,
)
from rag_lib.core.errors import BenchmarkError
from rag_lib.results.bakeoff import EXPERIMENT as BAKEOFF
from rag_lib.results.recovery import EXPERIMENT as RECOVERY
from rag_lib.results.recovery import RecoveryExperimentResult
from rag_lib.results.store import RESULTS_FILE


@contextmanager
def _replay_only() -> Iterator[None]:
    """LLM calls are replayed from ``results/llm_calls`` and never made: pooling loads no model."""
    before = os.environ.get("RAG_LLM_MODE")
    os.environ["RAG_LLM_MODE"] = "replay_only"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("RAG_LLM_MODE", None)
        else:
            os.environ["RAG_LLM_MODE"] = before


def _recovery_queries(results: RecoveryExperimentResult, source: str) -> Callable[[Question, str], list[Query]]:
    """07's suggestions of one source (``rule``, ``llm``, Q7's ``casebook``) as queries ``S1``, ``S2`` …"""
    by: dict[tuple[str, str], list[str]] = {}
    for lang, sources in results.per_question.items():
        for row in sources.get(source, []):  # a source whose model was not here has no rows
            by[row.question_id, lang] = list(row.suggestions)
    for lang, entry in results.q7.items():
        if source in entry and (results.q7_id, lang) not in by:
            by[results.q7_id, lang] = list(entry[source].suggestions)
    return lambda q, lang: [(f"S{i}", text) for i, text in enumerate(by.get((q.id, lang), []), 1)]


def workbook_configurations(batch: str, bench: Benchmark, use_llm: bool = True,
                            results_root: Path | None = None) -> tuple[list[Configuration], dict[str, str]]:
    """Every configuration the workbook reports, on ``batch``; and why others are not pooled.

    01's retrievers (dense with each available embedder, BM25, hybrid), 06's mechanism variants that
    rank differently from those (dedup/MMR, query splitting, LLM rewriting, the reranker; LLM variants
    replay their recorded calls), 07's recovery suggestions (dense), and 12's nested corpora (dense on
    the wide batch restricted to each size and seed's pages).
    """
    import rag_lib.experiments.mechanisms.catalog  # noqa: F401 - declares the mechanisms
    from rag_lib.core.config import default_batch, results_dir
    from rag_lib.experiments.mechanisms.registry import BaselineDense, BuildContext, get_mechanism
    from rag_lib.pipeline.workbench import RunKey, Workbench

    root = results_root or results_dir()
    wb = Workbench(batch)
    wb.__dict__["benchmark"] = bench
    _memoise_queries(wb)
    not_pooled = dict(NOT_POOLED)
    confs: list[Configuration] = []
    bakeoff = root / BAKEOFF.name / RESULTS_FILE
    reported = json.loads(bakeoff.read_text(encoding="utf-8"))["configurations"] if bakeoff.is_file() else []
    if not reported:
        raise BenchmarkError(f"{bakeoff} does not exist: the pool takes 01's configurations from it. Fix: run 01.")
    for label in reported:
        key = wb.resolve(label)
        missing = _uncached(wb, key.embedder) if key.embedder else 0
        if missing:  # embedding them here would take hours on 2 shared cores; said, never silently skipped
            not_pooled[f"{label} on {batch}"] = f"{missing} chunks of {batch} have no cached vectors"
            continue
        confs.append(Configuration(label, batch, lambda t, k=key: wb.rank(t, k)))
    default = RunKey("dense", wb.config.embedder).label
    if default not in {c.name for c in confs}:  # mechanisms, recovery and 12 all build on the default dense
        not_pooled[f"06 mechanisms, 07 recovery, 12 nested corpora on {batch}"] = f"they build on {default}, " \
            "which has uncached vectors here"
        return confs, not_pooled
    base = BaselineDense(wb)
    for mech in ("dedup_mmr", "query_split", "query_rewrite", "reranker"):
        ctx = BuildContext(wb, base, use_llm, LANGS)
        variants, unavailable = get_mechanism(mech).variants(ctx)
        for model, why in unavailable.items():
            not_pooled[f"{mech}:{model} (06)"] = why
        for v in variants:
            if v.languages == ():  # a Q7-phrasing-only variant: the same ranking as dense's phrasing
                continue
            confs.append(Configuration(f"{mech}:{v.name}", batch, v.rank, languages=v.languages,
                                       question_ids=None if v.question_ids is None
                                       else v.question_ids | {bench.by_casebook("Q7").id}))
    recovery = root / RECOVERY.name / RESULTS_FILE
    if recovery.is_file():
        data = RecoveryExperimentResult.read(RECOVERY.name, root, needed_by="the label pool")
        for source in ("rule", "llm", "casebook"):
            confs.append(Configuration(f"recovery:{source}", batch, lambda t: wb.rank(t, "dense"),
                                       queries=_recovery_queries(data, source)))
    else:
        not_pooled["recovery (07)"] = f"{recovery} does not exist; run 07 first"
    if batch != default_batch():
        confs.extend(_corpus_size_configurations(wb, batch))
    return confs, not_pooled


def _memoise_queries(wb: Any) -> None:
    """Embed each query text once per embedder across every configuration of ``wb``.

    The dense retriever, hybrid, the mechanisms' baseline and the recovery suggestions each embed the
    same question again; on 2 shared cores one query takes seconds, so the pool memoises them (the
    vectors are the embedder's own, only computed once).
    """
    original = wb.embedder

    def embedder(name: str | None = None) -> Any:
        model = original(name)
        if not getattr(model, "_pool_memo", None):
            memo: dict[str, Any] = {}
            embed = model.embed_queries

            def embed_queries(texts: Sequence[str]) -> Any:
                import numpy as np

                todo = [t for t in dict.fromkeys(texts) if t not in memo]
                if todo:
                    memo.update(zip(todo, np.asarray(embed(todo), dtype=np.float32), strict=True))
                return np.stack([memo[t] for t in texts])

            model.embed_queries = embed_queries
            model._pool_memo = memo
        return model

    wb.embedder = embedder


def _uncached(wb: Any, embedder: str) -> int:
    """How many embeddable chunks of ``wb`` have no vector of ``embedder`` in the embedding cache."""
    import numpy as np

    from rag_lib.embedding.base import input_hash

    model = wb.embedder(embedder)
    path = wb.store.path_for(model)
    if not path.is_file():
        return len(wb.embeddable)
    with np.load(path, allow_pickle=False) as data:
        cached = set(data["keys"].tolist())
    inputs = model.embedding_inputs([c.embed_input for c in wb.embeddable], "document")
    return sum(input_hash(text) not in cached for text in inputs)


def _corpus_size_configurations(wb: Any, batch: str) -> list[Configuration]:
    """12's nested corpora smaller than ``batch`` (and larger than the labelled batch): dense restricted."""
    from rag_lib.core.config import default_batch
    from rag_lib.corpus import load_chunks
    from rag_lib.experiments.corpus_size import page_orders, restrict, scale_settings

    conf = scale_settings()
    if conf["batch"] != batch:
        return []
    base_pages = sorted({c.page for c in load_chunks(default_batch())})
    all_pages = sorted({c.page for c in wb.chunks})
    sizes = [int(s) for s in conf["sizes"] if len(base_pages) < int(s) < len(all_pages)]
    orders = page_orders(base_pages, all_pages, [int(s) for s in conf["seeds"]])
    out = []
    for size in sizes:
        for seed, order in orders.items():
            pages = set(order[:size])
            allowed = {c.id for c in wb.embeddable if c.page in pages}
            out.append(Configuration(f"corpus_size:{size}p-seed{seed}", batch,
                                     lambda t, a=allowed: restrict(wb.rank(t, "dense"), a)))
    return out


def workbook_pool(batches: Sequence[str] | None = None, use_llm: bool = True, depth: int = POOL_DEPTH,
                  checkpoint: Path | None = None, progress: bool = False) -> Pool:
    """The pool of every batch of ``snapshot.batches`` (config.yaml), each with its own labels.

    ``checkpoint``: written after each configuration (a long run can be read while it goes on).
    """
    from rag_lib.core.config import settings
    from rag_lib.pipeline.workbench import Workbench

    pools: list[Pool] = []
    with _replay_only():
        for batch in batches or settings()["snapshot"]["batches"]:
            bench = Workbench(batch).benchmark
            confs, not_pooled = workbook_configurations(batch, bench, use_llm)
            pools.append(build_pool([], bench.questions(answerable=True), LANGS, depth, not_pooled))
            for conf in confs:  # one at a time, so a checkpoint keeps what is done
                pools.append(build_pool([conf], bench.questions(answerable=True), LANGS, depth))
                if checkpoint is not None:
                    merge(pools).save(checkpoint)
                if progress:
                    print(f"pooled {conf.name} on {batch}", flush=True)
    return merge(pools)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rag_lib.labels.pool``: build the pool and write it (default ``data/benchmark/pool.json``)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--out", default=str(POOL_PATH))
    parser.add_argument("--batch", action="append", default=None, help="only this batch (repeatable)")
    parser.add_argument("--no-llm", action="store_true", help="leave out the LLM variants (rewrite, split)")
    args = parser.parse_args(argv)
    pool = workbook_pool(args.batch, use_llm=not args.no_llm, checkpoint=Path(args.out), progress=True)
    path = pool.save(args.out)
    sizes = pool.sizes()
    print(f"wrote {path}: {len(sizes)} questions, {sum(sizes.values())} candidates "
          f"(min {min(sizes.values())}, max {max(sizes.values())} per question), {len(pool.sources())} sources")
    for key, kinds in pool.failed.items():
        print(f"  failed {key}: {kinds}")


if __name__ == "__main__":
    main()
