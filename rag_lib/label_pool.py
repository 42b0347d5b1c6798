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

    python -m rag_lib.label_pool            # rank and write data/benchmark/pool.json (replays LLM calls)
    python -m rag_lib.benchmark --audit     # shows each pooled candidate with its pool sources
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_lib.benchmark import LANGS, Benchmark, Question
from rag_lib.config import BENCHMARK_DIR
from rag_lib.errors import BenchmarkError
from rag_lib.retrieval import Ranking

POOL_DEPTH = 10
POOL_PATH = BENCHMARK_DIR / "pool.json"
ORIGINAL = "original"
_SEP = "|"

Query = tuple[str, str]  # (phrasing label, text)


@dataclass(frozen=True, order=True)
class Source:
    """Where a pooled ranking came from: configuration, batch, language and phrasing."""

    configuration: str
    batch: str
    lang: str
    phrasing: str = ORIGINAL

    @property
    def key(self) -> str:
        return _SEP.join((self.configuration, self.batch, self.lang, self.phrasing))

    @classmethod
    def parse(cls, key: str) -> Source:
        parts = key.split(_SEP)
        if len(parts) != 4:
            raise BenchmarkError(f"pool source {key!r} is not configuration|batch|lang|phrasing. "
                                 "Fix: rebuild the pool (python -m rag_lib.label_pool).")
        return cls(*parts)

    def short(self, batches: Mapping[str, str] | None = None) -> str:
        """``dense:e5 zh`` style label (batch abbreviated through ``batches``; phrasing shown when not original)."""
        batch = (batches or {}).get(self.batch, self.batch)
        phrasing = "" if self.phrasing == ORIGINAL else f":{self.phrasing}"
        return f"{self.configuration} {batch} {self.lang}{phrasing}"


@dataclass(frozen=True)
class PoolHit:
    """A pooled chunk's appearance in one source's Top-``depth``."""

    source: Source
    rank: int


@dataclass
class Configuration:
    """One reported configuration on one batch: how it ranks a text and which queries it is run on.

    Parameters
    ----------
    name
        The configuration as the workbook names it (``dense:<embedder>``, ``dedup_mmr:mmr``).
    batch
        The snapshot batch its chunks come from.
    rank
        Question text → full :class:`~rag_lib.retrieval.Ranking` (may raise; the query is then failed).
    queries
        ``(question, lang)`` → the ``(phrasing, text)`` pairs to rank; default: the question and each
        of its phrasings.
    languages
        Languages it is run in (``None``: every language).
    question_ids
        A stated subset of questions (``None``: every answerable question).
    """

    name: str
    batch: str
    rank: Callable[[str], Ranking]
    queries: Callable[[Question, str], Sequence[Query]] | None = None
    languages: tuple[str, ...] | None = None
    question_ids: frozenset[str] | None = None

    def queries_for(self, q: Question, lang: str) -> list[Query]:
        if self.queries is not None:
            return list(self.queries(q, lang))
        return [(ORIGINAL, q.text(lang)), *((ph.id, q.text(lang, ph.id)) for ph in q.phrasings)]


@dataclass(frozen=True)
class Pool:
    """Each question's Top-``depth`` per source, the configurations pooled and those that were not.

    ``tops[question][source key]`` is that source's Top-``depth`` chunk ids, best first; ``failed`` counts
    queries a configuration could not rank (per configuration|batch, with the error kinds);
    ``not_pooled`` says why a reported configuration is not in the pool.
    """

    depth: int
    tops: Mapping[str, Mapping[str, tuple[str, ...]]]
    configurations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # batch -> names
    not_pooled: Mapping[str, str] = field(default_factory=dict)
    failed: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def candidates(self, qid: str) -> dict[str, list[PoolHit]]:
        """``{chunk: [hits]}`` for one question: every chunk in any source's Top-``depth``, best rank first."""
        out: dict[str, list[PoolHit]] = {}
        for key, ids in sorted(self.tops.get(qid, {}).items()):
            source = Source.parse(key)
            for rank, cid in enumerate(ids, 1):
                out.setdefault(cid, []).append(PoolHit(source, rank))
        for hits in out.values():
            hits.sort(key=lambda h: (h.rank, h.source))
        return dict(sorted(out.items(), key=lambda kv: (kv[1][0].rank, -len(kv[1]), kv[0])))

    def sizes(self) -> dict[str, int]:
        """Candidates per question."""
        return {qid: len(self.candidates(qid)) for qid in sorted(self.tops)}

    def top(self, qid: str, source: Source) -> tuple[str, ...]:
        return tuple(self.tops.get(qid, {}).get(source.key, ()))

    def sources(self) -> list[Source]:
        """Every source of the pool (each configuration × batch × language × phrasing that ranked)."""
        return sorted({Source.parse(k) for by_source in self.tops.values() for k in by_source})

    def to_json(self) -> dict[str, Any]:
        return {"depth": self.depth, "configurations": {b: list(n) for b, n in sorted(self.configurations.items())},
                "not_pooled": dict(sorted(self.not_pooled.items())),
                "failed": {k: dict(sorted(v.items())) for k, v in sorted(self.failed.items())},
                "tops": {q: {k: list(ids) for k, ids in sorted(by.items())} for q, by in sorted(self.tops.items())}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Pool:
        return cls(int(data["depth"]), {q: {k: tuple(ids) for k, ids in by.items()} for q, by in data["tops"].items()},
                   {b: tuple(n) for b, n in data.get("configurations", {}).items()}, dict(data.get("not_pooled", {})),
                   {k: dict(v) for k, v in data.get("failed", {}).items()})

    def save(self, path: str | Path = POOL_PATH) -> Path:
        """Write the pool as JSON, one source per line (diffs stay readable)."""
        data = self.to_json()
        tops = data.pop("tops")
        lines = [json.dumps(data, ensure_ascii=False, sort_keys=True)[:-1] + ', "tops": {']
        qlines = []
        for q, by in tops.items():
            inner = ",\n".join(f"    {json.dumps(k)}: {json.dumps(ids)}" for k, ids in by.items())
            qlines.append(f"  {json.dumps(q)}: {{\n{inner}\n  }}")
        lines.append(",\n".join(qlines))
        lines.append("}}")
        path = Path(path)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


def load_pool(path: str | Path = POOL_PATH) -> Pool | None:
    """The stored pool, or ``None`` when it has not been built."""
    path = Path(path)
    if not path.is_file():
        return None
    return Pool.from_json(json.loads(path.read_text(encoding="utf-8")))


def build_pool(configurations: Iterable[Configuration], questions: Sequence[Question],
               languages: Sequence[str] = LANGS, depth: int = POOL_DEPTH,
               not_pooled: Mapping[str, str] | None = None) -> Pool:
    """Rank every question with every configuration and keep each source's Top-``depth``.

    A query whose ranking raises is counted in ``failed[configuration|batch][error kind]`` and left out
    (a failure never stands in for a ranking). Questions outside a configuration's ``question_ids`` or
    languages are not ranked by it.
    """
    tops: dict[str, dict[str, tuple[str, ...]]] = {q.id: {} for q in questions}
    failed: dict[str, dict[str, int]] = {}
    names: dict[str, list[str]] = {}
    for conf in configurations:
        names.setdefault(conf.batch, []).append(conf.name)
        for q in questions:
            if conf.question_ids is not None and q.id not in conf.question_ids:
                continue
            for lang in languages:
                if conf.languages is not None and lang not in conf.languages:
                    continue
                for phrasing, text in conf.queries_for(q, lang):
                    try:
                        ranking = conf.rank(text)
                    except Exception as exc:  # any failure is counted, never hidden or replaced
                        kind = str(getattr(exc, "kind", type(exc).__name__))
                        by_kind = failed.setdefault(f"{conf.name}{_SEP}{conf.batch}", {})
                        by_kind[kind] = by_kind.get(kind, 0) + 1
                        continue
                    tops[q.id][Source(conf.name, conf.batch, lang, phrasing).key] = tuple(ranking.ids[:depth])
    return Pool(depth, tops, {b: tuple(dict.fromkeys(n)) for b, n in names.items()}, dict(not_pooled or {}), failed)


def merge(pools: Sequence[Pool]) -> Pool:
    """Pools of several batches as one (same depth)."""
    depths = {p.depth for p in pools}
    if len(depths) != 1:
        raise ValueError(f"pools of different depths {sorted(depths)} cannot be merged")
    tops: dict[str, dict[str, tuple[str, ...]]] = {}
    configurations: dict[str, tuple[str, ...]] = {}
    not_pooled: dict[str, str] = {}
    failed: dict[str, dict[str, int]] = {}
    for p in pools:
        for q, by in p.tops.items():
            tops.setdefault(q, {}).update(by)
        for batch, names in p.configurations.items():
            configurations[batch] = tuple(dict.fromkeys((*configurations.get(batch, ()), *names)))
        not_pooled.update(p.not_pooled)
        failed.update({k: dict(v) for k, v in p.failed.items()})
    return Pool(depths.pop(), tops, configurations, not_pooled, failed)


# ----------------------------------------------------------------------------- the workbook's configurations

# Reported configurations whose Top-10 is another pooled configuration's (nothing new to pool), or that
# cannot be pooled here; the pool records these reasons.
NOT_POOLED = {
    "topk:k=10, topk:k=20 (06), 04's k sweep": "the baseline's ranking cut deeper; its Top-10 is dense's",
    "embedding:dense:all-minilm-l6-v2-int8 (06)": "the same ranking as 01's dense:all-minilm-l6-v2-int8 (pooled)",
    "hybrid (06), incl. identifier / other subsets": "the same rankings as 01's hybrid and bm25 (pooled)",
    "query_rewrite:casebook-aligned (06)": "dense on Q7's aligned phrasing, pooled as dense's aligned phrasing",
    "11 chunkers (fixed-512, fixed-512-overlap, fixed-256-overlap, semantic)": (
        "other chunk sets: their vectors are not cached (embedding them and every sentence takes 8-20 min on "
        "2 cores), and their chunks are not the labels' chunks (11 scores them by gold spans of these labels)"),
    "13 HNSW (pgvector)": "approximate search for dense's exact Top-10 on each batch (pooled); needs Postgres",
}


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


def _recovery_queries(results: Mapping[str, Any], source: str) -> Callable[[Question, str], list[Query]]:
    """07's suggestions of one source (``rule``, ``llm``, Q7's ``casebook``) as queries ``S1``, ``S2`` …"""
    by: dict[tuple[str, str], list[str]] = {}
    for lang, sources in results.get("per_question", {}).items():
        for row in sources.get(source, []):
            by[row["question_id"], lang] = list(row.get("suggestions") or [])
    for lang, entry in results.get("q7", {}).items():
        if source in entry and (results["q7_id"], lang) not in by:
            by[results["q7_id"], lang] = list(entry[source].get("suggestions") or [])
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
    from rag_lib.config import default_batch, results_dir
    from rag_lib.embedding.registry import default_embedder_name
    from rag_lib.experiments.mechanisms.registry import BaselineDense, BuildContext, get_mechanism
    from rag_lib.workbench import RunKey, Workbench

    root = results_root or results_dir()
    wb = Workbench(batch)
    wb.__dict__["benchmark"] = bench
    _memoise_queries(wb)
    not_pooled = dict(NOT_POOLED)
    confs: list[Configuration] = []
    bakeoff = root / "01_embedding_bakeoff" / "results.json"
    reported = json.loads(bakeoff.read_text(encoding="utf-8"))["configurations"] if bakeoff.is_file() else []
    if not reported:
        raise BenchmarkError(f"{bakeoff} does not exist: the pool takes 01's configurations from it. Fix: run 01.")
    for label in reported:
        key = RunKey.resolve(label)
        missing = _uncached(wb, key.embedder) if key.embedder else 0
        if missing:  # embedding them here would take hours on 2 shared cores; said, never silently skipped
            not_pooled[f"{label} on {batch}"] = f"{missing} chunks of {batch} have no cached vectors"
            continue
        confs.append(Configuration(label, batch, lambda t, k=key: wb.rank(t, k)))
    default = RunKey("dense", default_embedder_name()).label
    if default not in {c.name for c in confs}:  # mechanisms, recovery and 12 all build on the default dense
        not_pooled[f"06 mechanisms, 07 recovery, 12 nested corpora on {batch}"] = f"they build on {default}, " \
            "which has uncached vectors here"
        return confs, not_pooled
    base = BaselineDense(wb)
    for mech in ("dedup_mmr", "query_split", "query_rewrite", "reranker"):
        ctx = BuildContext(wb, base, use_llm, LANGS, {})
        variants, unavailable = get_mechanism(mech).variants(ctx)
        for model, why in unavailable.items():
            not_pooled[f"{mech}:{model} (06)"] = why
        for v in variants:
            if v.languages == ():  # a Q7-phrasing-only variant: the same ranking as dense's phrasing
                continue
            confs.append(Configuration(f"{mech}:{v.name}", batch, v.rank, languages=v.languages,
                                       question_ids=None if v.question_ids is None
                                       else v.question_ids | {bench.by_casebook("Q7").id}))
    recovery = root / "07_recovery_loop" / "results.json"
    if recovery.is_file():
        data = json.loads(recovery.read_text(encoding="utf-8"))
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
    from rag_lib.config import default_batch
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
    """The pool of every batch of ``snapshot.batches`` (workbook.yaml), each with its own labels.

    ``checkpoint``: written after each configuration (a long run can be read while it goes on).
    """
    from rag_lib.config import settings
    from rag_lib.workbench import Workbench

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
    """``python -m rag_lib.label_pool``: build the pool and write it (default ``data/benchmark/pool.json``)."""
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
