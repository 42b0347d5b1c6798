"""``python -m rag_lib.benchmark``: validate the labels, resolve them, audit them (``--audit``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from rag_lib.benchmark.parse import load_benchmark
from rag_lib.benchmark.questions import DEFAULT_PATH
from rag_lib.config import batch_dir
from rag_lib.documents import Chunk
from rag_lib.errors import cli_errors


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rag_lib.benchmark``: validate, resolve against the snapshot's chunks if present, print counts."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--path", default=str(DEFAULT_PATH))
    parser.add_argument("--chunks", default=None, help="chunks.jsonl (default: the snapshot batch's)")
    parser.add_argument("--batch", default=None,
                        help="a snapshot batch: its chunks, with its own labels (data/benchmark/batches/)")
    parser.add_argument("--audit", action="store_true",
                        help="list candidate gold chunks per piece (copies, phrase hits, better-ranked chunks)")
    parser.add_argument("--question", action="append", default=None, help="with --audit: only this id (repeatable)")
    parser.add_argument("--no-rank", action="store_true", help="with --audit: skip the rankings (no embedder)")
    parser.add_argument("--pool", default=None,
                        help="with --audit: the pool to list (default: data/benchmark/pool.json, when built)")
    parser.add_argument("--no-pool", action="store_true", help="with --audit: leave the pooled candidates out")
    args = parser.parse_args(argv)
    from rag_lib.io import read_jsonl

    if args.batch and args.chunks:
        raise SystemExit("--batch and --chunks both name the chunks; pass one.")
    chunks_path = Path(args.chunks) if args.chunks else batch_dir(args.batch) / "chunks.jsonl"
    with cli_errors():
        chunks = [Chunk.from_json(r) for r in read_jsonl(chunks_path)] if chunks_path.exists() else None
        if args.batch and chunks is not None:
            from rag_lib.benchmark.batch_labels import benchmark_for

            on_batch = benchmark_for(args.batch, chunks, load_benchmark(args.path))
            bench = on_batch.benchmark
            for qid, why in on_batch.left_out.items():
                print(f"left out on {args.batch}: {qid}: {why}")
        else:
            bench = load_benchmark(args.path, chunks)
        if args.audit:
            if chunks is None:
                raise SystemExit(f"--audit needs the chunks: {chunks_path} does not exist. "
                                 "Fix: python -m rag_lib.corpus build")
            from rag_lib import label_audit, label_pool

            ids = args.question or [q.id for q in bench.questions(answerable=True)]
            rankings = None if args.no_rank else label_audit.rankings_for(bench, ids, batch=args.batch)
            pool = None if args.no_pool else label_pool.load_pool(args.pool or label_pool.POOL_PATH)
            if pool is None and not args.no_pool:
                print("no pool: python -m rag_lib.label_pool builds it (the Top-10 of every configuration)")
            result = label_audit.audit(bench, chunks, rankings, args.question, pool=pool)
            print(label_audit.render(result, bench))
            return
    print(f"ok: {bench.summary()}")
    print(f"resolved against {chunks_path}" if chunks is not None else f"not resolved: {chunks_path} does not exist")


if __name__ == "__main__":
    main()
