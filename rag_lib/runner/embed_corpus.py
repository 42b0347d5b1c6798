"""``python -m rag_lib.runner.embed_corpus [--progress]``: embed the default batch once, before the notebooks.

Called by ``make reproduce`` (:func:`rag_lib.runner.reproduce.embed_corpus_once`) so the first
embedding shows a bar with an ETA on the terminal; the notebooks then read the cached vectors.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rag_lib.runner.reproduce import failure_cause, heartbeat


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--progress", action="store_true", help="show a progress bar")
    args = parser.parse_args(argv)
    from rag_lib.embedding.store import EmbeddingStore
    from rag_lib.pipeline.workbench import Workbench

    head = "[embed] the corpus, once for every notebook"
    try:
        wb = Workbench(store=EmbeddingStore(progress=args.progress))
        with heartbeat(head):
            matrix = wb.matrix()
    except Exception as exc:  # the notebooks embed what is missing themselves
        print(f"{head}: not done here ({failure_cause(exc)}); the notebooks embed it", flush=True)
        return
    if matrix.stats.embedded:
        print(f"{head}: {matrix.stats.embedded} chunk(s) embedded and cached", flush=True)


if __name__ == "__main__":
    main()
