"""An on-disk cache of document vectors, keyed by model, model file and exact embedding input.

One ``.npz`` file per model configuration under ``cache_dir()/embeddings/<model>/``. A vector is
reused only when the model name, the model file checksum, the settings that shape vectors
(pooling, window, normalisation) and the sha256 of the exact input text (prefix included) all
match; anything else is embedded again. A damaged cache file is reported and recomputed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from rag_lib.core.config import cache_dir, progress_bars
from rag_lib.core.documents import Chunk
from rag_lib.core.errors import IndexMismatchError
from rag_lib.core.io import atomic_open
from rag_lib.embedding.base import BaseEmbedder, input_hash
from rag_lib.embedding.pinned import vector_key

FORMAT = 1


@dataclass(frozen=True)
class EmbedStats:
    """What one :meth:`EmbeddingStore.embed_chunks` call did."""

    embedded: int = 0  # inputs sent to the model
    reused: int = 0  # chunks whose vector came from the cache
    stale: int = 0  # chunks whose id was cached with a different input (changed text)
    skipped: int = 0  # heading-only chunks (embeddable=False), not embedded
    truncated: int = 0  # of the embedded inputs, how many were cut at the model's window
    overlong: int = 0  # of the embedded inputs, how many were over the window (truncated or windowed)
    corrupt_files: tuple[str, ...] = ()  # cache files that were unreadable and recomputed


@dataclass(frozen=True)
class EmbeddingMatrix:
    """Vectors of one model, row ``i`` belonging to ``ids[i]``.

    Every matrix carries the model name, version and file checksum of all its rows; mixing
    matrices of different models raises :class:`~rag_lib.core.errors.IndexMismatchError`.
    """

    ids: tuple[str, ...]
    vectors: np.ndarray
    model: str
    version: str
    checksum: str
    stats: EmbedStats = field(default_factory=EmbedStats, compare=False)

    def __post_init__(self) -> None:
        if self.vectors.dtype != np.float32 or self.vectors.ndim != 2 or len(self.ids) != len(self.vectors):
            raise ValueError(
                f"vectors must be float32 of shape (len(ids), dim); got {self.vectors.dtype} "
                f"{self.vectors.shape} for {len(self.ids)} ids"
            )

    @property
    def provenance(self) -> dict[str, str]:
        return {"model": self.model, "version": self.version, "checksum": self.checksum}

    def check_embedder(self, embedder: BaseEmbedder) -> None:
        """Raise unless ``embedder`` is the model (name, version, file) these vectors came from."""
        theirs = {k: embedder.provenance[k] for k in ("model", "version", "checksum")}
        if theirs != self.provenance:
            raise IndexMismatchError(
                f"Vectors were made by {self.provenance} but the query embedder is {theirs}. "
                "Embed queries and documents with the same model, or re-embed the chunks."
            )

    @classmethod
    def stack(cls, parts: Sequence[EmbeddingMatrix]) -> EmbeddingMatrix:
        """Concatenate matrices of one model; raise :class:`IndexMismatchError` on mixed models."""
        if not parts:
            raise ValueError("stack needs at least one matrix")
        kinds = {(p.model, p.version, p.checksum) for p in parts}
        if len(kinds) > 1:
            raise IndexMismatchError(
                f"Cannot build one index from vectors of different models: {sorted(kinds)}. "
                "Re-embed every chunk with one model (EmbeddingStore.embed_chunks with the same embedder)."
            )
        ids = tuple(i for p in parts for i in p.ids)
        if len(set(ids)) != len(ids):
            raise ValueError("stack: the same chunk id appears in more than one matrix")
        first = parts[0]
        vectors = np.concatenate([p.vectors for p in parts])
        return cls(ids, vectors, first.model, first.version, first.checksum)


class EmbeddingStore:
    """Document vectors cached on disk.

    Parameters
    ----------
    root : str or Path, optional
        Cache folder; default ``rag_lib.core.config.cache_dir() / "embeddings"``.
    batch_size : int
        Inputs per embedder call (one progress-bar step).
    checkpoint_s : float
        While embedding, the vectors so far are saved at most this often, so an interrupted run
        resumes instead of starting again.
    progress : bool, optional
        Show a tqdm bar while embedding (it hides itself when stderr is not a terminal).
    """

    def __init__(
        self, root: str | Path | None = None, *, batch_size: int = 64, progress: bool | None = None,
        checkpoint_s: float = 60.0,
    ) -> None:
        self.root = Path(root) if root is not None else cache_dir() / "embeddings"
        self.batch_size = batch_size
        self.checkpoint_s = checkpoint_s
        self.progress = progress_bars() if progress is None else progress

    def path_for(self, embedder: BaseEmbedder) -> Path:
        """The cache file of one model configuration."""
        return self.root / embedder.name / f"{_config_key(embedder)[:16]}.npz"

    def embed_chunks(
        self, embedder: BaseEmbedder, chunks: Sequence[Chunk], *, prune: bool = False
    ) -> EmbeddingMatrix:
        """Vectors for the embeddable chunks, in order, embedding only what the cache lacks.

        Parameters
        ----------
        embedder : BaseEmbedder
            The document embedder; its provenance is stored with every vector.
        chunks : sequence of Chunk
            Chunks to embed; heading-only ones (``embeddable=False``) are skipped and counted.
        prune : bool
            Drop cached vectors this call did not use (default: keep them for other chunkings).

        Returns
        -------
        EmbeddingMatrix
            With ``stats`` saying how many inputs were embedded, reused, stale, skipped.
        """
        kept = [c for c in chunks if c.embeddable]
        ids = [c.id for c in kept]
        if len(set(ids)) != len(ids):
            raise ValueError("embed_chunks: chunk ids must be unique")
        inputs = embedder.embedding_inputs([c.embed_input for c in kept], "document")
        keys = [input_hash(text) for text in inputs]

        path = self.path_for(embedder)
        cached, last_run, corrupt = self._load(path, embedder)
        stale = sum(1 for i, k in zip(ids, keys, strict=True) if i in last_run and last_run[i] != k)

        todo: dict[str, str] = {}  # key -> raw text (the embedder adds the prefix), first-seen order
        for chunk, key in zip(kept, keys, strict=True):
            if key not in cached:
                todo.setdefault(key, chunk.embed_input)
        todo_keys, todo_texts = list(todo), list(todo.values())
        truncated = overlong = 0
        bar = tqdm(total=len(todo), desc=f"embed {embedder.name}", unit="chunk",
                   disable=None if self.progress and todo else True)  # no empty 0/0 bar when all are cached
        last_checkpoint = time.monotonic()
        with bar:
            for start in range(0, len(todo), self.batch_size):
                vectors = embedder.embed_documents(todo_texts[start : start + self.batch_size])
                truncated += embedder.last_truncated
                overlong += embedder.last_overlong
                cached.update(zip(todo_keys[start : start + len(vectors)], vectors, strict=True))
                bar.update(len(vectors))
                if time.monotonic() - last_checkpoint > self.checkpoint_s and start + len(vectors) < len(todo):
                    # A long first embedding (the wide batch) resumes from here after an interrupt.
                    with contextlib.suppress(OSError):  # the final save below warns about it
                        self._save(path, embedder, cached, list(last_run), list(last_run.values()))
                    last_checkpoint = time.monotonic()

        if todo or corrupt or prune or last_run != dict(zip(ids, keys, strict=True)):
            store = {k: cached[k] for k in keys} if prune else cached
            try:
                self._save(path, embedder, store, ids, keys)
            except OSError as exc:  # the vectors are good; losing the ranking over the cache would be worse
                warnings.warn(
                    f"Embedding cache {path} cannot be written ({exc.strerror or exc}); the vectors are used "
                    "but not cached, so the next run embeds again. Point RAG_CACHE_DIR at a writable folder.",
                    RuntimeWarning, stacklevel=2,
                )

        prov = embedder.provenance
        dim = embedder.spec.dimension
        matrix = np.stack([cached[k] for k in keys]) if keys else np.zeros((0, dim), np.float32)
        if embedder.recorder is not None:  # the cached vectors too: the artefact holds every vector a run used
            embedder.recorder.add(embedder.vector_description(), keys, matrix)
        stats = EmbedStats(
            embedded=len(todo), reused=len(keys) - sum(1 for k in keys if k in todo),
            stale=stale, skipped=len(chunks) - len(kept), truncated=truncated, overlong=overlong,
            corrupt_files=tuple(corrupt),
        )
        return EmbeddingMatrix(tuple(ids), matrix.astype(np.float32, copy=False), prov["model"],
                               prov["version"], prov["checksum"], stats)

    # -- file format -------------------------------------------------------------------------

    def _save(
        self, path: Path, embedder: BaseEmbedder, vectors: dict[str, np.ndarray],
        ids: list[str], keys: list[str],
    ) -> None:
        key_array = np.array(sorted(vectors), dtype="U64")
        matrix = np.zeros((len(key_array), embedder.spec.dimension), dtype=np.float32)
        for row, key in enumerate(key_array.tolist()):
            matrix[row] = vectors[key]
        meta = {
            **_meta(embedder),
            "digest": _digest(key_array, matrix),
        }
        with atomic_open(path, "wb") as fh:
            np.savez(
                fh, keys=key_array, vectors=matrix, chunk_ids=np.array(ids, dtype=str),
                chunk_keys=np.array(keys, dtype="U64"), meta=np.array(json.dumps(meta, sort_keys=True)),
            )

    def _load(
        self, path: Path, embedder: BaseEmbedder
    ) -> tuple[dict[str, np.ndarray], dict[str, str], list[str]]:
        """Cached vectors by key, the last run's id -> key, and the corrupt file (if any)."""
        if not path.exists():
            return {}, {}, []
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                keys, matrix = data["keys"], data["vectors"]
                ids, id_keys = data["chunk_ids"], data["chunk_keys"]
            expected = _meta(embedder)
            wrong = {k: meta.get(k) for k in expected if meta.get(k) != expected[k]}
            if wrong:
                raise ValueError(f"written for another model configuration {wrong}")
            if matrix.dtype != np.float32 or matrix.shape != (len(keys), embedder.spec.dimension):
                raise ValueError(f"vectors have dtype {matrix.dtype} and shape {matrix.shape}")
            if _digest(keys, matrix) != meta["digest"]:
                raise ValueError("contents do not match their recorded sha256")
        except Exception as exc:  # zip, JSON, key or shape damage: all mean "do not trust it"
            warnings.warn(
                f"Embedding cache {path} is unusable ({type(exc).__name__}: {exc}); its vectors are "
                "being recomputed and the file rewritten. Nothing to do unless this repeats "
                "(then check the disk, or delete the folder).",
                RuntimeWarning, stacklevel=3,
            )
            return {}, {}, [str(path)]
        last_run = dict(zip(ids.tolist(), id_keys.tolist(), strict=True))
        return dict(zip(keys.tolist(), matrix, strict=True)), last_run, []


def _meta(embedder: BaseEmbedder) -> dict[str, Any]:
    prov = embedder.provenance
    return {
        "format": FORMAT, "model": embedder.name, "version": prov["version"], "checksum": prov["checksum"],
        "config": _config_key(embedder), "dimension": embedder.spec.dimension,
    }


def _config_key(embedder: BaseEmbedder) -> str:
    """The address of the embedder's vectors (:func:`~rag_lib.embedding.pinned.vector_key`: model file, tokenizer
    and every spec setting that changes them; not the engine that computes them)."""
    return vector_key(embedder.vector_description())


def _digest(keys: np.ndarray, matrix: np.ndarray) -> str:
    digest = hashlib.sha256("\n".join(keys.tolist()).encode())
    digest.update(np.ascontiguousarray(matrix, dtype=np.float32).tobytes())
    return digest.hexdigest()
