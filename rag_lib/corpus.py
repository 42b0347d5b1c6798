"""The corpus pipeline: raw snapshot → normalized pages → chunks, and the figures about it.

``python -m rag_lib.corpus build`` rebuilds ``normalized/`` and ``chunks.jsonl`` of a batch.
Both are written atomically; the raw layer is only ever read.
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rag_lib.chunking import DEFAULT_MAX_CHARS, chunk_pages
from rag_lib.config import batch_dir, settings
from rag_lib.documents import Chunk, NormalizedPage
from rag_lib.errors import SnapshotError
from rag_lib.io import read_jsonl, write_json, write_jsonl, write_text
from rag_lib.snapshot import Snapshot, load_snapshot

_UNKNOWN_RE = re.compile(r"unknown component <([^>]+)>")


@dataclass(frozen=True)
class Corpus:
    """One batch, normalized and chunked."""

    snapshot: Snapshot
    pages: tuple[NormalizedPage, ...]
    chunks: tuple[Chunk, ...]
    max_chars: int

    @property
    def embeddable(self) -> tuple[Chunk, ...]:
        return tuple(c for c in self.chunks if c.embeddable)


def max_chars_setting() -> int:
    return int(settings()["chunking"].get("max_chars", DEFAULT_MAX_CHARS))


def build_corpus(batch: str | None = None, max_chars: int | None = None) -> Corpus:
    """Normalize and chunk a batch in memory (nothing is written)."""
    from rag_lib.normalize import normalize_snapshot  # the normaliser is the heaviest import here

    snapshot = load_snapshot(batch)
    pages = tuple(normalize_snapshot(snapshot))
    limit = max_chars or max_chars_setting()
    return Corpus(snapshot, pages, tuple(chunk_pages(pages, limit)), limit)


def write_corpus(corpus: Corpus) -> Path:
    """Write ``normalized/<slug>.md``, the removal log and ``chunks.jsonl`` of the batch."""
    root = corpus.snapshot.root
    for page in corpus.pages:
        write_text(root / "normalized" / f"{page.slug}.md", f"# {page.title}\n\n{page.markdown}")
    write_jsonl(root / "normalized" / "removals.jsonl", (asdict(r) for p in corpus.pages for r in p.removals))
    write_json(root / "normalized" / "warnings.json", {p.slug: list(p.warnings) for p in corpus.pages if p.warnings})
    write_jsonl(root / "chunks.jsonl", (c.to_json() for c in corpus.chunks))
    return root / "chunks.jsonl"


def load_chunks(batch: str | None = None, embeddable_only: bool = False) -> list[Chunk]:
    """The committed chunk set of a batch (``chunks.jsonl``)."""
    path = batch_dir(batch) / "chunks.jsonl"
    if not path.is_file():
        raise SnapshotError(f"No chunk set at {path}. Build it with `python -m rag_lib.corpus build`.")
    chunks = [Chunk.from_json(row) for row in read_jsonl(path)]
    return [c for c in chunks if c.embeddable] if embeddable_only else chunks


def corpus_stats(corpus: Corpus) -> dict[str, Any]:
    """The figures the casebook reports about its corpus, computed on ours."""
    lengths = [c.n_chars for c in corpus.chunks]
    embeddable = [c.n_chars for c in corpus.embeddable]
    removals = Counter(r.kind.split(":")[0] for p in corpus.pages for r in p.removals)
    return {
        "batch": corpus.snapshot.batch,
        "pages": len(corpus.pages),
        "partials": len(corpus.snapshot.partials),
        "raw_chars": sum(f.chars for f in corpus.snapshot.pages),
        "normalized_chars": sum(len(p.markdown) for p in corpus.pages),
        "chunks": len(corpus.chunks),
        "embeddable_chunks": len(embeddable),
        "heading_only_chunks": len(corpus.chunks) - len(embeddable),
        "median_chars": statistics.median(embeddable) if embeddable else 0,
        "max_chars": max(lengths, default=0),
        "max_chars_limit": corpus.max_chars,
        "oversized": [
            {"id": c.id, "chars": c.n_chars, "kinds": list(c.block_kinds), "heading": " > ".join(c.heading_path)}
            for c in corpus.chunks if c.oversized
        ],
        "chunks_per_page": {p.slug: sum(1 for c in corpus.chunks if c.page == p.slug) for p in corpus.pages},
        "removals_by_kind": dict(sorted(removals.items())),
        "removed_chars": sum(r.chars for p in corpus.pages for r in p.removals),
        "warnings": {p.slug: list(p.warnings) for p in corpus.pages if p.warnings},
        "n_warnings": sum(len(p.warnings) for p in corpus.pages),
        # text the normaliser did not understand: must stay empty (each component needs a handler)
        "unknown_components": sorted(
            {m.group(1) for p in corpus.pages for w in p.warnings if (m := _UNKNOWN_RE.search(w))}
        ),
        "dropped_expressions": sum("unsupported JSX expression" in w for p in corpus.pages for w in p.warnings),
    }


def batch_summary(stats: dict[str, Any]) -> dict[str, Any]:
    """The figures that compare batches side by side (a subset of :func:`corpus_stats`)."""
    keys = ("pages", "partials", "raw_chars", "normalized_chars", "chunks", "embeddable_chunks",
            "heading_only_chunks", "median_chars", "max_chars", "removed_chars", "n_warnings",
            "unknown_components", "dropped_expressions")
    return {**{k: stats[k] for k in keys}, "oversized": len(stats["oversized"]),
            "removals": sum(stats["removals_by_kind"].values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_lib.corpus", description=__doc__)
    parser.add_argument("command", choices=["build", "stats"])
    parser.add_argument("--batch", default=None)
    args = parser.parse_args(argv)
    corpus = build_corpus(args.batch)
    if args.command == "build":
        print(f"wrote {write_corpus(corpus)}")
    stats = corpus_stats(corpus)
    for key in ("pages", "chunks", "embeddable_chunks", "median_chars", "max_chars"):
        print(f"{key}: {stats[key]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
