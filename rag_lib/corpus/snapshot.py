"""Corpus snapshots: immutable batches of source files with a sha256 manifest.

Layout of one batch (``data/snapshots/<batch>/``)::

    raw/manifest.json     repo path, kind (page|partial), commit, url, chars, sha256 per file
    raw/README.md         where the files came from and their licence (CC-BY-4.0)
    raw/src/content/...   the MDX sources, byte-for-byte
    sections.yaml         which sections of long, mixed pages are kept (normalisation rules)
    normalized/           the Markdown a reader sees, one file per page (+ removal log)
    chunks.jsonl          the chunk set
    derived.sha256.json   checksums of normalized/ and chunks.jsonl, checked before use

A batch is never overwritten: :func:`import_batch` refuses an existing folder.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from rag_lib.core.config import SNAPSHOTS_DIR, batch_dir
from rag_lib.core.errors import SnapshotError
from rag_lib.core.io import file_sha256

DOCUMENTS = "documents"  # the manifest format of a batch imported from documents (rag_lib.corpus.importing)


@dataclass(frozen=True)
class SourceFile:
    """One file of a snapshot, as listed in its manifest."""

    path: str  # repository path, e.g. "src/content/docs/workers/configuration/secrets.mdx"
    kind: str  # "page" or "partial"
    commit: str
    sha256: str
    chars: int
    url: str | None = None
    format: str | None = None  # an imported document's reader (markdown, html, text, pdf, beir)


@dataclass(frozen=True)
class Snapshot:
    """A verified snapshot batch."""

    batch: str
    root: Path
    source_repo: str
    license: str
    files: tuple[SourceFile, ...]
    format: str = "mdx"  # DOCUMENTS: imported with `python -m rag_lib corpus import` (rag_lib.corpus.importing)

    @property
    def raw_dir(self) -> Path:
        return self.root / "raw"

    @property
    def pages(self) -> tuple[SourceFile, ...]:
        return tuple(f for f in self.files if f.kind == "page")

    @property
    def partials(self) -> dict[str, SourceFile]:
        return {f.path: f for f in self.files if f.kind == "partial"}

    def read(self, path: str) -> str:
        """Text of one source file, decoded as UTF-8 (a decoding failure names the file)."""
        data = (self.raw_dir / path).read_bytes()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SnapshotError(
                f"{self.batch}: {path} is not valid UTF-8 (byte {exc.start}). "
                "Re-import the file from its source; snapshots hold UTF-8 text only."
            ) from exc


def load_snapshot(batch: str | None = None, root: Path | None = None, verify: bool = True) -> Snapshot:
    """Load a batch and verify every file against the sha256 in its manifest.

    Raises
    ------
    SnapshotError
        When the batch or its manifest is missing, a listed file is missing, or a file's
        sha256 differs from the manifest. The message names the file.
    """
    root = root or batch_dir(batch)
    manifest_path = root / "raw" / "manifest.json"
    if not manifest_path.is_file():
        raise SnapshotError(
            f"No manifest at {manifest_path}. A snapshot batch needs raw/manifest.json; "
            f"available batches: {sorted(p.name for p in SNAPSHOTS_DIR.glob('*') if p.is_dir())}."
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files = tuple(
            SourceFile(
                path=f["path"], kind=f["kind"], commit=f["commit"], sha256=f["sha256"],
                chars=int(f["chars"]), url=f.get("url"), format=f.get("format"),
            )
            for f in manifest["files"]
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotError(f"{manifest_path} is malformed ({exc!r}); restore it from the source batch.") from exc
    snap = Snapshot(
        batch=root.name, root=root, source_repo=manifest.get("source_repo", ""),
        license=manifest.get("license", ""), files=files, format=str(manifest.get("format", "mdx")),
    )
    if verify:
        for f in files:
            path = snap.raw_dir / f.path
            if not path.is_file():
                raise SnapshotError(f"{snap.batch}: {f.path} is listed in the manifest but missing from raw/.")
            actual = file_sha256(path)
            if actual != f.sha256:
                raise SnapshotError(
                    f"{snap.batch}: sha256 mismatch for {f.path} (manifest {f.sha256[:12]}…, file {actual[:12]}…). "
                    "A batch is immutable: restore the original file, or import the changed corpus as a new batch."
                )
    return snap


def import_batch(source: Path, batch: str) -> Path:
    """Copy a corpus folder (``manifest.json``, ``README.md``, ``raw/src/…``) into a new batch.

    Refuses to overwrite an existing batch: a new fetch is a new batch folder.
    """
    target = SNAPSHOTS_DIR / batch
    if target.exists():
        raise SnapshotError(f"Batch {batch!r} already exists at {target}; choose a new batch name.")
    raw = target / "raw"
    shutil.copytree(source / "raw", raw)
    for name in ("manifest.json", "README.md"):
        shutil.copy2(source / name, raw / name)
    load_snapshot(root=target)  # verify what was copied
    return target
