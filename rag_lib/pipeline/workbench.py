"""The workbench: chunks, benchmark, embedders and retrievers of one configuration, built once.

Notebooks, the command line and :func:`rag_lib.pipeline.explain.explain` all go through it, so a question
is ranked the same way everywhere.

>>> wb = Workbench()                                            # doctest: +SKIP
>>> wb.rank("怎么给 Pages Functions 配置 R2 绑定？", "dense").top(5)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pandas as pd

from rag_lib.benchmark import Benchmark, Question, load_benchmark
from rag_lib.benchmark.batch_labels import BatchBenchmark, benchmark_for
from rag_lib.core.config import RunConfig, default_batch, record_vectors_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import WorkbookError
from rag_lib.corpus import load_chunks
from rag_lib.embedding import get_embedder
from rag_lib.embedding.base import BaseEmbedder
from rag_lib.embedding.pinned import VectorRecorder
from rag_lib.embedding.store import EmbeddingMatrix, EmbeddingStore
from rag_lib.evaluation import Measure, default_measures, evaluate
from rag_lib.retrieval import Ranking, Retriever, get_retriever


@dataclass(frozen=True)
class RunKey:
    """A retrieval configuration: retriever keyword and (for dense/hybrid) the embedder name."""

    retriever: str
    embedder: str | None = None

    @property
    def label(self) -> str:
        return self.retriever if self.embedder is None else f"{self.retriever}:{self.embedder}"

    @classmethod
    def parse(cls, label: str) -> RunKey:
        """``"dense:bge-m3"`` → ``RunKey("dense", "bge-m3")``; ``"bm25"`` → ``RunKey("bm25")``."""
        retriever, sep, embedder = label.partition(":")
        if retriever == "bm25" and sep:  # bm25 has no embedder: a suffix would be silently ignored
            raise WorkbookError(f"retriever {label!r}: bm25 takes no embedder; use plain 'bm25', "
                                "or 'dense:<embedder>' / 'hybrid:<embedder>'.")
        if sep and not embedder:
            raise WorkbookError(f"retriever {label!r} names no embedder after ':'; use e.g. 'dense:bge-m3'.")
        return cls(retriever, embedder or None)

    @classmethod
    def resolve(cls, key: RunKey | str, embedder: str) -> RunKey:
        """``key`` with ``embedder`` (the run configuration's default, e.g. ``wb.config.embedder``) filled
        in where dense or hybrid names none (``"dense"`` → ``dense:<embedder>``): the configuration that
        actually runs. See also :meth:`Workbench.resolve`."""
        key = cls.parse(key) if isinstance(key, str) else key
        if key.retriever in {"dense", "hybrid"} and key.embedder is None:
            return cls(key.retriever, embedder)
        return key


class Workbench:
    """Everything needed to rank a question, built lazily and cached for the session.

    Parameters
    ----------
    batch : str, optional
        Snapshot batch (default: ``snapshot.batch`` in config.yaml).
    store : EmbeddingStore, optional
        Where document vectors are cached (default: ``.cache/embeddings``).
    config : RunConfig, optional
        The run's choices (default: ``RunConfig.from_settings()``, the workbook's). Everything built
        here reads its default embedder, ``k``, ``rrf_k`` and ``rerank_candidates`` from ``self.config``.
    """

    def __init__(self, batch: str | None = None, store: EmbeddingStore | None = None,
                 config: RunConfig | None = None) -> None:
        self.batch = batch
        self.store = store or EmbeddingStore()
        self.config = config if config is not None else RunConfig.from_settings()
        self._embedders: dict[str, BaseEmbedder] = {}
        self._matrices: dict[str, EmbeddingMatrix] = {}
        self._retrievers: dict[tuple[RunKey, int | None], Retriever] = {}  # (configuration, RRF constant)
        self._rankings: dict[tuple[str, RunKey], Ranking] = {}

    @classmethod
    def over(cls, chunks: Iterable[Chunk], benchmark: Benchmark, store: EmbeddingStore | None = None,
             config: RunConfig | None = None, *, embedders_of: Workbench | None = None) -> Workbench:
        """A workbench over another chunk set (another chunking strategy), scored with ``benchmark``
        resolved to those chunks (see :mod:`rag_lib.evaluation.gold_spans`). With ``embedders_of``, it
        uses that workbench's embedders, so a model loads once and each question is embedded once
        across chunk sets (query vectors do not depend on the chunks)."""
        wb = cls(store=store, config=config)
        wb.__dict__["chunks"] = list(chunks)  # fills the cached properties before first use
        wb.__dict__["benchmark"] = benchmark
        if embedders_of is not None:
            wb._embedders = embedders_of._embedders
        return wb

    @cached_property
    def chunks(self) -> list[Chunk]:
        return load_chunks(self.batch)

    @cached_property
    def embeddable(self) -> list[Chunk]:
        """What retrieval ranks: every chunk with body text."""
        return [c for c in self.chunks if c.embeddable]

    @cached_property
    def by_id(self) -> dict[str, Chunk]:
        return {c.id: c for c in self.chunks}

    @cached_property
    def benchmark(self) -> Benchmark:
        """The benchmark resolved on this batch; on another batch than the labelled one, with that
        batch's own labels (:func:`rag_lib.benchmark.batch_labels.benchmark_for`)."""
        if self.batch in (None, default_batch()):
            return load_benchmark(chunks=self.chunks)
        return self.batch_benchmark.benchmark

    @cached_property
    def inputs_sha256(self) -> str:
        """sha256 of what every measurement here depends on besides the model: each ranked chunk
        (id and the text the embedder sees) and each question (texts, phrasings, resolved gold pieces).

        A stored measurement records it, so a reader can tell it was taken on other chunks or labels.
        """
        digest = hashlib.sha256()
        for c in self.embeddable:
            digest.update(json.dumps([c.id, c.embed_input]).encode())
        for q in self.benchmark:
            phrasings = [[p.id, p.zh, p.en] for p in q.phrasings]
            digest.update(json.dumps([q.id, q.zh, q.en, phrasings, [sorted(p) for p in q.pieces]]).encode())
        return digest.hexdigest()

    @cached_property
    def batch_benchmark(self) -> BatchBenchmark:
        """The benchmark on this batch with the batch's own labels, and the questions left out and why."""
        return benchmark_for(self.batch or default_batch(), self.chunks)

    def resolve(self, key: RunKey | str) -> RunKey:
        """``key`` with this workbench's default embedder (``config.embedder``) filled in where needed."""
        return RunKey.resolve(key, self.config.embedder)

    def embedder(self, name: str | None = None) -> BaseEmbedder:
        """The embedder ``name`` (default: ``config.embedder``), built once."""
        name = name or self.config.embedder
        if name not in self._embedders:
            recording = record_vectors_dir()
            self._embedders[name] = get_embedder(name, recorder=VectorRecorder(recording) if recording else None)
        return self._embedders[name]

    def matrix(self, name: str | None = None) -> EmbeddingMatrix:
        """Document vectors of one embedder (embedded once, then read from the cache)."""
        name = name or self.config.embedder
        if name not in self._matrices:
            self._matrices[name] = self.store.embed_chunks(self.embedder(name), self.embeddable)
        return self._matrices[name]

    def retriever(self, key: RunKey | str, rrf_k: int | None = None) -> Retriever:
        """The retriever of ``key`` (memoised); a hybrid one fuses with ``rrf_k`` (default ``config.rrf_k``)."""
        key = self.resolve(key)
        fusion = (rrf_k if rrf_k is not None else self.config.rrf_k) if key.retriever == "hybrid" else None
        if (key, fusion) not in self._retrievers:
            kwargs: dict[str, Any] = {}
            if key.retriever in {"bm25", "hybrid"}:
                kwargs["chunks"] = self.embeddable
            if key.retriever in {"dense", "hybrid"}:
                kwargs["matrix"] = self.matrix(key.embedder)
                kwargs["embedder"] = self.embedder(key.embedder)
            if fusion is not None:
                kwargs["k"] = fusion
            self._retrievers[(key, fusion)] = get_retriever(key.retriever, **kwargs)
        return self._retrievers[(key, fusion)]

    def rank(self, text: str, key: RunKey | str = "dense") -> Ranking:
        """The full ranking of every embeddable chunk for one question text (memoised per session).

        Rankings are immutable and deterministic, and experiments rank the same question many times
        (once per gate, per measurement), so each (text, configuration) is embedded and ranked once.
        """
        cache_key = (text, self.resolve(key))  # "dense" and "dense:<default>" are one configuration
        if cache_key not in self._rankings:
            self._rankings[cache_key] = self.retriever(key).rank(text)
        return self._rankings[cache_key]

    def evidence(self, ranking: Ranking, k: int | None = None) -> list[Chunk]:
        """The chunks of ``ranking``'s Top-``k`` (default ``config.k``), best first: what a generator or a
        gate is given."""
        k = self.config.top_k(k)
        return [self.by_id[cid] for cid in ranking.ids[:k]]

    def top_rows(self, text: str, key: RunKey | str = "dense", k: int | None = None) -> list[dict[str, Any]]:
        """The Top-``k`` (default ``config.k``) of ``text`` as table rows: rank, chunk id, page, heading path
        and score."""
        k = self.config.top_k(k)
        ranking = self.rank(text, key)
        return [{"rank": i + 1, "chunk": cid, "page": self.by_id[cid].page,
                 "heading": " > ".join(self.by_id[cid].heading_path), "score": round(score, 4)}
                for i, (cid, score) in enumerate(ranking.top(k))]

    def run(
        self, key: RunKey | str, questions: Iterable[Question], lang: str, phrasing: str | None = None
    ) -> dict[str, Ranking]:
        """Rank every question; keys are question ids."""
        retriever = self.retriever(key)
        return {q.id: retriever.rank(q.text(lang, phrasing)) for q in questions}

    def evaluate(
        self, runs: dict[str, Ranking], measures: tuple[Measure, ...] | None = None
    ) -> pd.DataFrame:
        """Per-question metrics of ``runs`` against the benchmark's gold pieces (default measures:
        :meth:`measures`)."""
        measures = self.measures() if measures is None else measures
        gold = {qid: self.benchmark[qid].pieces for qid in runs}
        return evaluate(gold, runs, measures)

    def measures(self) -> tuple[Measure, ...]:
        """The default measures at this workbench's ``config.k`` (hit@k, coverage@k, coverage@10, …)."""
        return default_measures(self.config.k)

    def provenance(self, key: RunKey | str) -> dict[str, Any]:
        """What produced a ranking: retriever, and the embedder's model, backend and version."""
        key = RunKey.parse(key) if isinstance(key, str) else key
        out: dict[str, Any] = {"retriever": key.retriever}
        if key.retriever in {"dense", "hybrid"}:
            out["embedder"] = self.embedder(key.embedder).describe()
        return out
