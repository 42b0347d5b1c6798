"""``python -m rag_lib corpus import PATH --name NAME``: a folder of documents (or a BEIR ``corpus.jsonl``) becomes
a new snapshot batch, raw → normalized → chunks, with a report of what the parser may have damaged.

Everything is written into a hidden staging folder first and moved into ``data/snapshots/NAME`` only when
the whole import succeeded: a failed import leaves nothing behind, and an existing batch is never touched.
"""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rag_lib.core.config import SNAPSHOTS_DIR, batch_dir, shown_path
from rag_lib.core.errors import SnapshotError
from rag_lib.core.io import read_json
from rag_lib.corpus.build import chunked, corpus_stats, load_pages, write_corpus
from rag_lib.corpus.importing.pages import parsed_pages, write_report
from rag_lib.corpus.importing.stage import DEFAULT_EXCLUDES, Progress, SourceSpec, source_files, stage_raw
from rag_lib.corpus.snapshot import load_snapshot


@dataclass(frozen=True)
class ImportedBatch:
    root: Path
    documents: int
    chunks: int
    embeddable: int
    warnings: Counter[str]
    sample: Path

    def summary(self) -> str:
        warned = ", ".join(f"{n} {check}" for check, n in sorted(self.warnings.items())) or "none"
        return (f"imported {self.root.name}: {self.documents} documents → {self.chunks} chunks ({self.embeddable} with "
                f"body text); parser warnings: {warned} (import_report.json; source beside parsed text: "
                f"{shown_path(self.sample)})")


def import_corpus(source: Path, name: str, spec: SourceSpec, excludes: tuple[str, ...] = DEFAULT_EXCLUDES,
                  root: Path | None = None, quiet: bool = False) -> ImportedBatch:
    """Import ``source`` as batch ``name`` under ``root`` (default ``data/snapshots``).

    Raises
    ------
    SnapshotError
        When the batch exists, ``source`` holds no document, a text file is not UTF-8, or a BEIR line has no
        ``_id`` (each naming the file and line); nothing is written then.
    """
    batch_dir(name)  # refuses a name that is not a plain folder name
    root = root if root is not None else SNAPSHOTS_DIR
    target = root / name
    if target.exists():
        raise SnapshotError(f"batch {name!r} already exists at {target}; a batch is never overwritten: choose a new "
                            "name (a new import is a new batch)")
    files = source_files(source, excludes)
    staging = root / f".{name}.importing"
    shutil.rmtree(staging, ignore_errors=True)  # a previous import that was interrupted
    try:
        stage_raw(files, source, staging, name, spec, None if quiet else Progress("files copied"))
        snapshot = load_snapshot(root=staging)  # verifies every copy against its sha256
        docs, warnings, pages = parsed_pages(snapshot, None if quiet else Progress("files parsed"))
        corpus = chunked(snapshot, pages)
        write_corpus(corpus)
        sample = write_report(staging, docs, warnings)
        stats = corpus_stats(corpus)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ImportedBatch(target, len(docs), stats["chunks"], stats["embeddable_chunks"],
                         Counter(w.check for w in warnings), target / sample.name)


def import_report(batch: str | None) -> dict:
    """An imported batch's ``import_report.json`` (counts and every parser warning); empty for a committed MDX batch,
    which was never imported."""
    report = batch_dir(batch) / "import_report.json"
    return read_json(report) if report.is_file() else {}


def page_warnings(batch: str | None) -> dict[str, list[str]]:
    """Page slug → the checks the import warned about for its source file (empty when there is no report)."""
    by_source: dict[str, list[str]] = {}
    for w in import_report(batch).get("warnings", []):
        by_source.setdefault(w["document"], []).append(w["check"])
    if not by_source:
        return {}
    return {page.slug: sorted(set(by_source.get(page.path, []))) for page in load_pages(batch)}


def main(argv: list[str] | None = None) -> int:
    """``python -m rag_lib corpus import PATH --name NAME``."""
    import argparse

    from rag_lib.core.errors import cli_errors

    parser = argparse.ArgumentParser(prog="python -m rag_lib corpus import", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path, help="a folder of .md/.mdx/.html/.txt/.rst/.pdf files or a corpus.jsonl")
    parser.add_argument("--name", required=True, help="the new batch's folder name under data/snapshots/")
    parser.add_argument("--source", required=True, help="where the documents come from (kept in the batch's README)")
    parser.add_argument("--licence", required=True, help="their licence, e.g. CC-BY-4.0 or PSF-2.0")
    parser.add_argument("--base-url", help="a page's URL is BASE_URL/<its path> (default: its path)")
    parser.add_argument("--exclude", action="append", default=None, metavar="GLOB",
                        help=f"skip folders and files matching GLOB (repeatable; default {list(DEFAULT_EXCLUDES)})")
    args = parser.parse_args(argv)
    with cli_errors():
        spec = SourceSpec(args.source, args.licence, args.base_url)
        excludes = tuple(args.exclude) if args.exclude is not None else DEFAULT_EXCLUDES
        print(import_corpus(args.path, args.name, spec, excludes).summary())
    return 0
