"""The raw layer of an imported batch: every file copied byte for byte, with its sha256, format and URL.

Layout (``raw/`` of the batch)::

    manifest.json   {"snapshot", "source_repo", "license", "format": "documents", "files": [...]}
    README.md       where the files came from, their licence, when and how they were imported
    files/...       the files, under their path relative to the imported folder
"""

from __future__ import annotations

import fnmatch
import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rag_lib.core.errors import SnapshotError
from rag_lib.core.io import write_json, write_text
from rag_lib.corpus.importing.readers import FORMATS, format_of
from rag_lib.corpus.snapshot import DOCUMENTS

DEFAULT_EXCLUDES = (".*", "_*")  # hidden and build-asset folders (Sphinx's _sources, _static, _images)


@dataclass(frozen=True)
class SourceSpec:
    """Where the documents come from: shown in the batch's README and manifest, and in every result's provenance."""

    origin: str  # e.g. "Debian package python3.11-doc 3.11.2-6+deb12u9, /usr/share/doc/python3.11/html"
    licence: str  # e.g. "PSF-2.0"
    base_url: str | None = None  # a page's URL is base_url + its path; None: its path


def source_files(source: Path, excludes: Sequence[str] = DEFAULT_EXCLUDES) -> list[Path]:
    """The files to import, in path order: ``source`` itself, or every file of a known format under it, skipping
    folders (and files) that match ``excludes``.

    Raises
    ------
    SnapshotError
        When ``source`` does not exist or holds no file of a known format.
    """
    if not source.exists():
        raise SnapshotError(f"{source} does not exist; give a folder of documents or a BEIR corpus.jsonl")
    if source.is_file():
        found = [source] if format_of(source) else []
    else:
        found = [p for p in sorted(source.rglob("*")) if p.is_file() and format_of(p)
                 and not any(fnmatch.fnmatch(part, pattern) for part in p.relative_to(source).parts
                             for pattern in excludes)]
    if not found:
        known = ", ".join(sorted(set(FORMATS))) + ", corpus.jsonl"
        raise SnapshotError(f"{source} holds no file of a known format ({known}), excluding {list(excludes)}; "
                            "the corpus would be empty")
    return found


def stage_raw(files: Sequence[Path], source: Path, root: Path, name: str, spec: SourceSpec,
              progress: Callable[[int, int], None] | None = None) -> Path:
    """Copy ``files`` into ``root/raw/files`` and write the manifest and README; returns ``root``."""
    base = source if source.is_dir() else source.parent
    entries = []
    for i, path in enumerate(files, 1):
        relative = path.relative_to(base).as_posix()
        target = root / "raw" / "files" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()  # read once: copied, counted and hashed from the same bytes
        target.write_bytes(data)
        page = relative.rsplit(".", 1)[0]
        fmt = format_of(path)
        chars = len(data) if fmt == "pdf" else len(data.decode("utf-8", errors="replace"))  # bytes for a PDF
        entries.append({"path": f"files/{relative}", "kind": "page", "format": fmt, "commit": "",
                        "url": f"{spec.base_url.rstrip('/')}/{relative}" if spec.base_url else page,
                        "chars": chars, "sha256": hashlib.sha256(data).hexdigest()})
        if progress:
            progress(i, len(files))
    write_json(root / "raw" / "manifest.json", {"snapshot": name, "source_repo": spec.origin,
                                                "license": spec.licence, "format": DOCUMENTS, "files": entries})
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    write_text(root / "raw" / "README.md", (
        f"# {name}\n\nImported on {when} with `python -m rag_lib corpus import` from {spec.origin}.\n\n"
        f"Licence: {spec.licence}. The files under `files/` are byte-for-byte copies (sha256 in `manifest.json`).\n"))
    return root


class Progress:
    """``[i/n] …, about N s left`` on stderr, at most every ``every_s`` seconds (large imports take minutes)."""

    def __init__(self, what: str, every_s: float = 2.0) -> None:
        self.what, self.every_s, self.started, self.last = what, every_s, time.monotonic(), 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < self.every_s:
            return
        self.last = now
        left = (now - self.started) / done * (total - done) if done else 0.0
        print(f"[{done}/{total}] {self.what}, about {left:.0f} s left", file=sys.stderr, flush=True)
