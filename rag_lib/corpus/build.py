"""The corpus pipeline: raw snapshot → normalized pages → chunks, and the figures about it.

``python -m rag_lib.corpus build`` rebuilds ``normalized/`` and ``chunks.jsonl`` of a batch.
Both are written atomically; the raw layer is only ever read. The build also records
``derived.sha256.json``: the manifest it was built from, each normalized page (slug, source file,
sha256) and the sha256 of ``chunks.jsonl``. :func:`load_chunks` verifies all of it before anything
ranks a chunk, so an edited or injected chunk is an error, not evidence.
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rag_lib.core.config import batch_dir
from rag_lib.core.documents import Chunk, NormalizedPage
from rag_lib.core.errors import SnapshotError, cli_errors
from rag_lib.core.io import file_sha256, read_json, read_jsonl, write_json, write_jsonl, write_text
from rag_lib.corpus.snapshot import DOCUMENTS, Snapshot, load_snapshot
from rag_lib.corpus.structural_chunking import chunk_id, chunk_pages, max_chars_setting

DERIVED_FILE = "derived.sha256.json"

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


def build_corpus(batch: str | None = None, max_chars: int | None = None, *, root: Path | None = None) -> Corpus:
    """Normalize and chunk a batch in memory (nothing is written): the Cloudflare MDX sources with their
    normaliser, an imported batch (``"format": "documents"``) with each file's reader."""
    snapshot = load_snapshot(batch, root=root)
    if snapshot.format == DOCUMENTS:
        from rag_lib.corpus.importing.pages import parsed_pages  # bs4, pypdf

        pages = parsed_pages(snapshot)[2]
    else:
        from rag_lib.corpus.normalize import normalize_snapshot  # the normaliser is the heaviest import here

        pages = normalize_snapshot(snapshot)
    return chunked(snapshot, pages, max_chars)


def chunked(snapshot: Snapshot, pages: Sequence[NormalizedPage], max_chars: int | None = None) -> Corpus:
    """The corpus of ``snapshot``'s normalized ``pages``, chunked at ``max_chars`` (default ``chunking.max_chars``)."""
    limit = max_chars or max_chars_setting()
    return Corpus(snapshot, tuple(pages), tuple(chunk_pages(pages, limit)), limit)


def write_corpus(corpus: Corpus) -> Path:
    """Write ``normalized/<slug>.md``, the removal log and ``chunks.jsonl`` of the batch."""
    root = corpus.snapshot.root
    for page in corpus.pages:
        write_text(root / "normalized" / f"{page.slug}.md", f"# {page.title}\n\n{page.markdown}")
    write_jsonl(root / "normalized" / "removals.jsonl", (asdict(r) for p in corpus.pages for r in p.removals))
    write_json(root / "normalized" / "warnings.json", {p.slug: list(p.warnings) for p in corpus.pages if p.warnings})
    write_jsonl(root / "chunks.jsonl", (c.to_json() for c in corpus.chunks))
    write_json(root / DERIVED_FILE, {
        "format": 1,
        "manifest_sha256": file_sha256(corpus.snapshot.raw_dir / "manifest.json"),
        "pages": {p.slug: {"source": p.path, "sha256": file_sha256(root / "normalized" / f"{p.slug}.md")}
                  for p in corpus.pages},
        "chunks_sha256": file_sha256(root / "chunks.jsonl"),
    })
    return root / "chunks.jsonl"


_REBUILD = "Rebuild the derived files with `python -m rag_lib.corpus build`"


def verify_derived(root: Path, chunks: list[Chunk]) -> None:
    """Check ``chunks`` and the normalized pages of the batch at ``root`` against the manifest.

    Raises
    ------
    SnapshotError
        When the checksum record is missing, was built from another manifest, names a page the
        manifest does not list, or a normalized page or ``chunks.jsonl`` changed after the build;
        and when a chunk belongs to no known page. The message names the file or chunk.
    """
    record_path = root / DERIVED_FILE
    if not record_path.is_file():
        raise SnapshotError(f"{root.name}: no {DERIVED_FILE}, so chunks.jsonl cannot be checked against the "
                            f"manifest. {_REBUILD} (it records the checksums).")
    record = read_json(record_path)
    snapshot = load_snapshot(root=root, verify=False)
    if file_sha256(snapshot.raw_dir / "manifest.json") != record.get("manifest_sha256"):
        raise SnapshotError(f"{root.name}: the derived files were built from another raw/manifest.json. {_REBUILD}.")
    sources = {f.path for f in snapshot.pages}
    pages: dict[str, Any] = record.get("pages", {})
    for slug, page in pages.items():  # an imported corpus.jsonl's documents: "files/corpus.jsonl#<_id>"
        if str(page.get("source")).split("#")[0] not in sources:
            raise SnapshotError(f"{root.name}: normalized page {slug!r} comes from {page.get('source')!r}, "
                                f"which the manifest does not list. {_REBUILD}.")
    strangers = [c for c in chunks if c.page not in pages]
    if strangers:
        listed = ", ".join(f"{c.id} (page {c.page!r})" for c in strangers[:3])
        raise SnapshotError(f"{root.name}: {len(strangers)} chunk(s) in chunks.jsonl belong to no page of the "
                            f"manifest: {listed}. Chunks come only from `python -m rag_lib.corpus build`; "
                            "remove the added lines or rebuild.")
    for slug, page in pages.items():
        path = root / "normalized" / f"{slug}.md"
        if not path.is_file() or file_sha256(path) != page.get("sha256"):
            raise SnapshotError(f"{root.name}: {path.relative_to(root)} is missing or changed since it was built. "
                                f"{_REBUILD}.")
    if file_sha256(root / "chunks.jsonl") != record.get("chunks_sha256"):
        raise SnapshotError(f"{root.name}: chunks.jsonl changed since it was built (its sha256 differs from "
                            f"{DERIVED_FILE}). {_REBUILD}.")
    verify_chunk_spans(root, chunks)


def verify_chunk_spans(root: Path, chunks: list[Chunk]) -> None:
    """Check that every chunk is the span of its normalized page it claims to be.

    A checksum record only shows that nothing changed *by accident*: recomputed after an edit, it
    vouches for the edit. So each chunk is derived again from its page: ``text`` must equal
    ``page.markdown[start:end]``, its id must be :func:`~rag_lib.corpus.structural_chunking.chunk_id` of that
    text at that place, and a page's chunks must follow each other without overlapping.

    Raises
    ------
    SnapshotError
        Naming the first chunk that does not match its page, and how.
    """
    by_page: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_page.setdefault(chunk.page, []).append(chunk)
    for slug, page_chunks in by_page.items():
        path = root / "normalized" / f"{slug}.md"
        text = path.read_text(encoding="utf-8")
        header = f"# {page_chunks[0].title}\n\n"
        markdown = text[len(header):] if text.startswith(header) else None
        previous_end = 0
        for chunk in sorted(page_chunks, key=lambda c: c.ordinal):
            problem = None
            if markdown is None:
                problem = f"its page {path.relative_to(root)} does not start with the title line {header.strip()!r}"
            elif not 0 <= chunk.start <= chunk.end <= len(markdown) or chunk.start < previous_end:
                problem = (f"its offsets {chunk.start}..{chunk.end} are outside the page ({len(markdown)} characters) "
                           f"or overlap the previous chunk (ending at {previous_end})")
            elif markdown[chunk.start:chunk.end] != chunk.text:
                problem = f"its text differs from {path.relative_to(root)} at characters {chunk.start}..{chunk.end}"
            elif chunk.id != chunk_id(slug, chunk.ordinal, chunk.text):
                problem = f"its id is not {chunk_id(slug, chunk.ordinal, chunk.text)!r}, derived from its text"
            if problem:
                raise SnapshotError(f"{root.name}: chunk {chunk.id} in chunks.jsonl does not match its normalized "
                                    f"page: {problem}. Chunks come only from `python -m rag_lib.corpus build`; "
                                    f"{_REBUILD[0].lower()}{_REBUILD[1:]}.")
            previous_end = chunk.end


def load_chunks(batch: str | None = None, embeddable_only: bool = False, *, root: Path | None = None,
                verify: bool = True) -> list[Chunk]:
    """The committed chunk set of a batch (``chunks.jsonl``), verified against its manifest.

    Parameters
    ----------
    batch, root
        The batch by name, or its folder (``root`` wins).
    verify
        Check the chunks and normalized pages with :func:`verify_derived` (default).
    """
    root = root or batch_dir(batch)
    path = root / "chunks.jsonl"
    if not path.is_file():
        raise SnapshotError(f"No chunk set at {path}. Build it with `python -m rag_lib.corpus build`.")
    try:
        chunks = [Chunk.from_json(row) for row in read_jsonl(path)]
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotError(f"{path} is damaged ({exc}). {_REBUILD}.") from exc
    if verify:
        verify_derived(root, chunks)
    return [c for c in chunks if c.embeddable] if embeddable_only else chunks


def load_pages(batch: str | None = None, *, root: Path | None = None) -> list[NormalizedPage]:
    """The normalized pages of a batch as built (``normalized/<slug>.md``), verified like the chunks.

    Other chunking strategies (:mod:`rag_lib.corpus.chunkers`) cut these pages; every structural chunk of
    ``chunks.jsonl`` is ``page.markdown[chunk.start:chunk.end]`` of the page returned here.
    """
    root = root or batch_dir(batch)
    chunks = load_chunks(root=root)  # verifies the pages' checksums too
    sources = read_json(root / DERIVED_FILE)["pages"]
    first: dict[str, Chunk] = {}
    for chunk in chunks:
        first.setdefault(chunk.page, chunk)
    pages = []
    for slug, chunk in first.items():
        text = (root / "normalized" / f"{slug}.md").read_text(encoding="utf-8")
        header = f"# {chunk.title}\n\n"
        if not text.startswith(header):
            raise SnapshotError(f"{root.name}: normalized/{slug}.md does not start with its title line "
                                f"{header.strip()!r}. {_REBUILD}.")
        pages.append(NormalizedPage(slug=slug, path=sources[slug]["source"], title=chunk.title,
                                    url=chunk.url.split("#", 1)[0], markdown=text[len(header):]))
    return pages


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
    with cli_errors():
        corpus = build_corpus(args.batch)
        if args.command == "build":
            print(f"wrote {write_corpus(corpus)}")
        stats = corpus_stats(corpus)
        for key in ("pages", "chunks", "embeddable_chunks", "median_chars", "max_chars"):
            print(f"{key}: {stats[key]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
