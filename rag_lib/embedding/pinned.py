"""Pinned vectors: the embedding artefact the notebooks read, so a result does not depend on the arithmetic behind it.

Floating-point sums differ by CPU, runtime and compiler, and a vector that moves in its fourth decimal can move a
tied rank and so change the prompt of a recorded LLM call. So every vector a notebook uses is stored once, in
``data/vectors/``, addressed by what decides it (the model file's sha256, the tokenizer, pooling, window and
normalisation: :func:`vector_key`) and by the sha256 of the exact input text. The engine that computed a vector is
provenance, not part of its address. An embedder built by :func:`~rag_lib.embedding.get_embedder` looks its
inputs up there first and computes only the rest (ONNX Runtime for the default), so ``make reproduce`` gives the
same bytes on any machine and an ad-hoc question still gets a vector.

Each artefact is a pair of files, ``<key>.npy`` (float32 rows) and ``<key>.keys`` (one input sha256 per row, in
order), listed with their sha256 and size in ``data/vectors/pins.yaml``; a file that does not match is an error,
never a silent recomputation.

Making or renewing the artefact (``make pin-vectors``): run the notebooks with ``RAG_RECORD_VECTORS=<folder>``,
which makes every embedder write each vector it returns there, then
``python -m rag_lib.embedding pin <folder>``; ``python -m rag_lib.embedding verify`` checks every pinned file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import count
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from rag_lib.core.config import DATA_DIR, shown_path
from rag_lib.core.errors import WorkbookError
from rag_lib.core.io import atomic_open, file_sha256

PINS_DIR = DATA_DIR / "vectors"
MANIFEST = "pins.yaml"


# What decides a vector besides its input (BaseEmbedder.vector_description): model file, tokenizer and every spec
# setting that shapes it. The engine is left out on purpose: two engines that run the same model are two ways to
# compute the same vectors, and the artefact pins one computation of them (the engine is its provenance).
KEY_FIELDS = ("checksum", "tokenizer", "pooling", "max_tokens", "long_inputs", "normalize", "dimension")


def vector_key(description: Mapping[str, Any]) -> str:
    """The address of an embedder's vectors: sha256 over the :data:`KEY_FIELDS` of its description."""
    return hashlib.sha256("\n".join(str(description[f]) for f in KEY_FIELDS).encode()).hexdigest()


@dataclass(frozen=True)
class PinnedVectors:
    """The pinned vectors of one :func:`vector_key`: input sha256 → float32 row."""

    key: str
    rows: dict[str, int]
    matrix: np.ndarray
    provenance: dict[str, Any]  # the manifest entry: model, made_by, files, sha256, size

    @classmethod
    def load(cls, key: str, root: Path = PINS_DIR) -> PinnedVectors | None:
        """The artefact of ``key`` under ``root``, checked against the manifest; ``None`` when none is pinned."""
        entry = manifest(root).get(key)
        if entry is None:
            return None
        return _load(key, root, json.dumps(entry, sort_keys=True))

    def describe(self) -> str:
        """One line for an embedder's provenance: which file, how many vectors, what made them."""
        made_by = ", ".join(str(v) for v in self.provenance["made_by"].values())
        return (f"data/vectors/{self.provenance['vectors']['file']} ({len(self.rows)} vectors, sha256 "
                f"{self.provenance['vectors']['sha256'][:16]}; made by {made_by})")

    def lookup(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The pinned vector of every hash that has one."""
        return {h: self.matrix[self.rows[h]] for h in hashes if h in self.rows}


@cache
def _load(key: str, root: Path, entry_json: str) -> PinnedVectors:
    """Read and check one artefact (once per process: every workbench of a notebook shares it)."""
    entry = json.loads(entry_json)
    files = {part: root / entry[part]["file"] for part in ("vectors", "keys")}
    for part, path in files.items():
        if not path.exists():
            raise WorkbookError(f"The pinned vectors {shown_path(path)} are missing ({root / MANIFEST} lists them). "
                                "Restore them with `git checkout -- data/vectors`.")
        if file_sha256(path) != entry[part]["sha256"]:
            raise WorkbookError(f"The pinned vectors {shown_path(path)} do not match their sha256 in "
                                f"{shown_path(root / MANIFEST)}: the file was changed or damaged. Restore it with "
                                "`git checkout -- data/vectors`, or renew the artefact with `make pin-vectors`.")
    keys = files["keys"].read_text(encoding="ascii").split()
    matrix = np.load(files["vectors"], allow_pickle=False)
    if matrix.dtype != np.float32 or matrix.shape != (len(keys), entry["dimension"]):
        raise WorkbookError(f"{shown_path(files['vectors'])} holds {matrix.dtype} {matrix.shape}, expected float32 "
                            f"({len(keys)}, {entry['dimension']}); renew it with `make pin-vectors`.")
    matrix.setflags(write=False)
    return PinnedVectors(key, {h: i for i, h in enumerate(keys)}, matrix, entry)


def manifest(root: Path) -> dict[str, dict[str, Any]]:
    """``pins.yaml`` under ``root``: vector key -> entry (empty when nothing is pinned there)."""
    path = root / MANIFEST
    if not path.exists():
        return {}
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


class VectorRecorder:
    """Writes every vector an embedder returns into ``root/<vector key>/`` (one small file per call), for
    :func:`pin`. Files are named by process and call, so notebooks running side by side never collide."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._calls = count()

    def add(self, description: Mapping[str, Any], hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Write ``vectors`` (row ``i`` the vector of input hash ``hashes[i]``) of the embedder ``description``."""
        if not len(hashes):
            return
        folder = self.root / vector_key(description)
        folder.mkdir(parents=True, exist_ok=True)
        stem = folder / f"{os.getpid()}-{next(self._calls)}"
        stem.with_suffix(".json").write_text(json.dumps(description, sort_keys=True), encoding="utf-8")
        np.save(stem.with_suffix(".npy"), np.ascontiguousarray(vectors, dtype=np.float32))
        stem.with_suffix(".keys").write_text("\n".join(hashes) + "\n", encoding="ascii")


def pin(recorded: str | os.PathLike[str], root: Path = PINS_DIR) -> dict[str, dict[str, Any]]:
    """Merge a recording into artefacts under ``root`` (replacing those of the same keys) and rewrite the manifest.

    A hash recorded twice must carry the same vector bytes: two different vectors for one input mean two
    computations were mixed in one recording, which is an error, not a choice.
    """
    entries = manifest(root)
    written: dict[str, dict[str, Any]] = {}
    for folder in sorted(p for p in Path(recorded).iterdir() if p.is_dir()):
        vectors: dict[str, bytes] = {}
        described: set[str] = set()
        for stem in sorted({p.with_suffix("") for p in folder.glob("*.keys")}):
            described.add(stem.with_suffix(".json").read_text(encoding="utf-8"))
            rows = np.load(stem.with_suffix(".npy"), allow_pickle=False)
            for h, row in zip(stem.with_suffix(".keys").read_text(encoding="ascii").split(), rows, strict=True):
                if vectors.setdefault(h, row.tobytes()) != row.tobytes():
                    raise WorkbookError(f"{folder}: input {h} was recorded with two different vectors; record again "
                                        "with one engine (an empty RAG_RECORD_VECTORS folder).")
        if len(described) != 1:
            raise WorkbookError(f"{folder}: vectors of {len(described)} different embedder descriptions in one key: "
                                f"{sorted(described)}; record each engine into its own folder.")
        entry = json.loads(described.pop())
        key = vector_key(entry)  # from what the recording says, so a renamed folder cannot pin under another key
        keys = sorted(vectors)
        matrix = np.frombuffer(b"".join(vectors[h] for h in keys), dtype=np.float32).reshape(len(keys), -1)
        root.mkdir(parents=True, exist_ok=True)
        files = {"vectors": root / f"{key[:16]}.npy", "keys": root / f"{key[:16]}.keys"}
        with atomic_open(files["vectors"], "wb") as fh:
            np.save(fh, matrix)
        with atomic_open(files["keys"], "w", encoding="ascii") as fh:
            fh.write("\n".join(keys) + "\n")
        entry.update(rows=len(keys), **{part: {"file": path.name, "sha256": file_sha256(path),
                                                "bytes": path.stat().st_size} for part, path in files.items()})
        entries[key] = written[key] = entry
    with atomic_open(root / MANIFEST, "w", encoding="utf-8") as fh:
        fh.write("# Pinned vectors (rag_lib/embedding/pinned.py), one entry per vector key, by `make pin-vectors`.\n")
        yaml.safe_dump(entries, fh, sort_keys=True, allow_unicode=True)
    return written
