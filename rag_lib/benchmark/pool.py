"""The pool of labels v3: each configuration's Top-k per question, with where each candidate came from.

Built by :mod:`rag_lib.labels.pool` (which ranks with every reported configuration); read by the
audit and by 08's relabelling table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_lib.benchmark import LANGS, Question
from rag_lib.core.config import BENCHMARK_DIR
from rag_lib.core.errors import BenchmarkError
from rag_lib.retrieval import Ranking

POOL_DEPTH = 10
POOL_PATH = BENCHMARK_DIR / "pool.json"
ORIGINAL = "original"
KEY_SEP = "|"

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
        return KEY_SEP.join((self.configuration, self.batch, self.lang, self.phrasing))

    @classmethod
    def parse(cls, key: str) -> Source:
        parts = key.split(KEY_SEP)
        if len(parts) != 4:
            raise BenchmarkError(f"pool source {key!r} is not configuration|batch|lang|phrasing. "
                                 "Fix: rebuild the pool (python -m rag_lib.labels.pool).")
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
                        by_kind = failed.setdefault(f"{conf.name}{KEY_SEP}{conf.batch}", {})
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


