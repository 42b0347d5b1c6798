"""``python -m rag_lib.labels audit``: candidate gold chunks per piece of every answerable question (copies,
phrase hits, better-ranked chunks, the pool's candidates), each with its recorded decision.

    python -m rag_lib.labels audit                    # every answerable question, both languages
    python -m rag_lib.labels audit --question q07     # one question (repeatable)
    python -m rag_lib.labels audit --no-rank          # without the embedder (copies and phrases only)
    python -m rag_lib.labels audit --batch <batch>    # a batch's chunks, with its own labels

Pooling, proposals and blind re-reads have their own commands: ``python -m rag_lib.labels.pool``,
``python -m rag_lib.labels.propose``, ``python -m rag_lib.labels.review``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rag_lib.benchmark.batch_labels import benchmark_for
from rag_lib.benchmark.parse import load_benchmark
from rag_lib.benchmark.questions import DEFAULT_PATH
from rag_lib.core.config import batch_dir
from rag_lib.core.errors import cli_errors
from rag_lib.corpus import load_chunks
from rag_lib.labels import audit, pool


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rag_lib.labels", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("audit", help="list candidate gold chunks per piece, with their decisions")
    run.add_argument("--path", default=str(DEFAULT_PATH))
    run.add_argument("--batch", default=None,
                     help="a snapshot batch: its chunks, with its own labels (data/benchmark/batches/)")
    run.add_argument("--question", action="append", default=None, help="only this id (repeatable)")
    run.add_argument("--no-rank", action="store_true", help="skip the rankings (no embedder)")
    run.add_argument("--pool", default=None, help="the pool to list (default: data/benchmark/pool.json, when built)")
    run.add_argument("--no-pool", action="store_true", help="leave the pooled candidates out")
    args = parser.parse_args(argv)
    chunks_path = batch_dir(args.batch) / "chunks.jsonl"
    with cli_errors():
        if not chunks_path.exists():
            raise SystemExit(f"the audit needs the chunks: {chunks_path} does not exist. "
                             "Fix: python -m rag_lib.corpus build")
        chunks = load_chunks(args.batch, verify=False)  # the audit reads them as they are, as it always did
        if args.batch:
            bench = benchmark_for(args.batch, chunks, load_benchmark(args.path)).benchmark
        else:
            bench = load_benchmark(args.path, chunks)
        ids = args.question or [q.id for q in bench.questions(answerable=True)]
        rankings = None if args.no_rank else audit.rankings_for(bench, ids, batch=args.batch)
        pooled = None if args.no_pool else pool.load_pool(args.pool or pool.POOL_PATH)
        if pooled is None and not args.no_pool:
            print("no pool: python -m rag_lib.labels.pool builds it (the Top-10 of every configuration)")
        print(audit.render(audit.audit(bench, chunks, rankings, args.question, pool=pooled), bench))


if __name__ == "__main__":
    main()
