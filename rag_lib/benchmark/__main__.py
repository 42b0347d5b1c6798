"""``python -m rag_lib.benchmark``: validate the labels and resolve them (audit: ``python -m rag_lib.labels audit``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from rag_lib.benchmark.parse import load_benchmark
from rag_lib.benchmark.questions import DEFAULT_PATH
from rag_lib.core.config import batch_dir
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import cli_errors


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rag_lib.benchmark``: validate, resolve against the snapshot's chunks if present, print counts."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--path", default=str(DEFAULT_PATH))
    parser.add_argument("--chunks", default=None, help="chunks.jsonl (default: the snapshot batch's)")
    parser.add_argument("--batch", default=None,
                        help="a snapshot batch: its chunks, with its own labels (data/benchmark/batches/)")
    parser.add_argument("--audit", action="store_true", help=argparse.SUPPRESS)  # moved: named in the error
    args = parser.parse_args(argv)
    from rag_lib.core.io import read_jsonl

    if args.audit:
        raise SystemExit("the audit moved: python -m rag_lib.labels audit (same options: --batch, --question, "
                         "--no-rank, --pool, --no-pool)")

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
    print(f"ok: {bench.summary()}")
    print(f"resolved against {chunks_path}" if chunks is not None else f"not resolved: {chunks_path} does not exist")


if __name__ == "__main__":
    main()
