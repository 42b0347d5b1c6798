"""Snapshot loading: sha256 verification and the immutability of batches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rag_lib.core.config import batch_dir
from rag_lib.core.errors import SnapshotError
from rag_lib.core.io import file_sha256
from rag_lib.corpus import snapshot as snap_mod
from rag_lib.corpus.snapshot import import_batch, load_snapshot


def test_committed_batch_verifies() -> None:
    snap = load_snapshot()
    assert len(snap.pages) == 32 and len(snap.partials) == 29
    assert snap.license == "CC-BY-4.0"
    assert "licensed under the Creative Commons Attribution" in (snap.raw_dir / "README.md").read_text()
    assert all(p.url and p.url.startswith("https://developers.cloudflare.com/") for p in snap.pages)


@pytest.fixture()
def batch_copy(tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(batch_dir() / "raw", root / "raw")
    return root


def test_sha_mismatch_names_the_file(batch_copy: Path) -> None:
    target = batch_copy / "raw/src/content/docs/workers/configuration/secrets.mdx"
    target.write_text(target.read_text() + "\nedited\n")
    with pytest.raises(SnapshotError, match=r"sha256 mismatch for src/content/docs/workers/configuration/secrets\.mdx"):
        load_snapshot(root=batch_copy)


def test_missing_file_and_missing_manifest(batch_copy: Path, tmp_path: Path) -> None:
    (batch_copy / "raw/src/content/docs/r2/pricing.mdx").unlink()
    with pytest.raises(SnapshotError, match=r"r2/pricing\.mdx is listed in the manifest but missing"):
        load_snapshot(root=batch_copy)
    with pytest.raises(SnapshotError, match="No manifest"):
        load_snapshot(root=tmp_path / "nowhere")


def test_non_utf8_bytes_are_named(batch_copy: Path) -> None:
    manifest_path = batch_copy / "raw/manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entry = next(f for f in manifest["files"] if f["path"].endswith("d1/platform/pricing.mdx"))
    path = batch_copy / "raw" / entry["path"]
    path.write_bytes(b"---\ntitle: x\n---\n\xff\xfe broken")
    entry["sha256"] = file_sha256(path)
    manifest_path.write_text(json.dumps(manifest))
    snap = load_snapshot(root=batch_copy)
    with pytest.raises(SnapshotError, match=r"d1/platform/pricing\.mdx is not valid UTF-8"):
        snap.read(entry["path"])


def test_a_batch_is_never_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "src"
    shutil.copytree(batch_dir() / "raw" / "src", source / "raw" / "src")
    for name in ("manifest.json", "README.md"):
        shutil.copy2(batch_dir() / "raw" / name, source / name)
    monkeypatch.setattr(snap_mod, "SNAPSHOTS_DIR", tmp_path / "snapshots")
    created = import_batch(source, "b1")
    before = file_sha256(created / "raw" / "manifest.json")
    with pytest.raises(SnapshotError, match="already exists"):
        import_batch(source, "b1")
    assert file_sha256(created / "raw" / "manifest.json") == before
