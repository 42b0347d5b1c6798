"""Paths and settings, in one place.

Settings come from ``rag_lib/config.yaml``; paths are derived from the repository root.
Environment variables only ever override *locations* (``RAG_MODELS_DIR``, ``RAG_CACHE_DIR``)
and API credentials, which are never written to disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from rag_lib.core.errors import SettingError

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # rag_lib/ (this file is rag_lib/core/config.py)
REPO_ROOT = PACKAGE_DIR.parent
DATA_DIR = REPO_ROOT / "data"
SNAPSHOTS_DIR = DATA_DIR / "snapshots"
BENCHMARK_DIR = DATA_DIR / "benchmark"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
RESULTS_DIR = REPO_ROOT / "results"
KERNEL_NAME = "ragbench-workbook"


def results_dir() -> Path:
    """Where experiments write their results; tests point it at a temporary folder."""
    return Path(os.environ.get("RAG_RESULTS_DIR", RESULTS_DIR))


def progress_bars() -> bool:
    """Show progress bars, unless ``RAG_PROGRESS=0`` (headless runs: a bar's text differs between a
    cold and a warm cache, and executed notebooks must not)."""
    return os.environ.get("RAG_PROGRESS", "1") != "0"


def record_vectors_dir() -> Path | None:
    """Where embedders also write every vector they return while the pinned artefact is made
    (``RAG_RECORD_VECTORS``, see :mod:`rag_lib.embedding.pinned`); ``None`` otherwise."""
    folder = os.environ.get("RAG_RECORD_VECTORS")
    return Path(folder) if folder else None


def cache_dir() -> Path:
    """Where rebuildable caches (embeddings) live; never committed."""
    return Path(os.environ.get("RAG_CACHE_DIR", REPO_ROOT / ".cache"))


@cache
def settings() -> dict[str, Any]:
    """The parsed ``config.yaml``."""
    with open(PACKAGE_DIR / "config.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


@dataclass(frozen=True)
class RunConfig:
    """One run's choices: which corpus, models and cut-offs, from ``config.yaml``.

    ``RunConfig.from_settings(k=10)`` overrides single values (papermill parameters do the same per
    notebook); an unknown name is an error, so a misspelt override never runs with the default.
    It is a value passed down (``Workbench(config=...)`` holds one), never a module-level global:
    code with a workbench reads ``wb.config``; code without one calls ``from_settings()`` when it runs.
    Settings of one experiment only (``chunking``, ``scale``, ``ann``, ``reproduce``) stay with it.
    """

    batch: str  # snapshot.batch
    embedder: str  # embedding.default
    k: int  # retrieval.top_k: the chunks generation sees
    rrf_k: int  # retrieval.rrf_k
    rerank_candidates: int  # retrieval.rerank_candidates
    generator: str  # generation.default
    temperature: float  # generation.temperature: every LLM backend's default
    llm_tasks: dict[str, str] = field(default_factory=dict)  # generation.llm_tasks: task -> backend:model

    @classmethod
    def from_settings(cls, **overrides: Any) -> RunConfig:
        """The workbook's configuration with ``overrides`` (``None`` keeps the workbook's value)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown run setting(s) {unknown}; RunConfig has {sorted(known)}")
        s = settings()
        config = cls(
            batch=str(s["snapshot"]["batch"]),
            embedder=str(s["embedding"]["default"]),
            k=int(s["retrieval"]["top_k"]),
            rrf_k=int(s["retrieval"]["rrf_k"]),
            rerank_candidates=int(s["retrieval"]["rerank_candidates"]),
            generator=str(s["generation"]["default"]),
            temperature=float(s["generation"]["temperature"]),
            llm_tasks={str(task): str(model) for task, model in s["generation"]["llm_tasks"].items()},
        )
        return replace(config, **{name: value for name, value in overrides.items() if value is not None})

    def top_k(self, k: int | None = None) -> int:
        """``k`` when a caller passed one, else the configured ``k`` (how every entry point resolves its k)."""
        return self.k if k is None else k


def default_batch() -> str:
    """The corpus snapshot batch the workbook runs on."""
    return RunConfig.from_settings().batch


def snapshot_batches() -> list[str]:
    """Every batch the workbook builds (``snapshot.batches``), the default batch first."""
    listed = [str(b) for b in settings()["snapshot"].get("batches", [])]
    return list(dict.fromkeys([default_batch(), *listed]))


def batch_dir(batch: str | None = None) -> Path:
    """Folder of one snapshot batch: ``data/snapshots/<batch>/``.

    Raises
    ------
    SettingError
        When ``batch`` is not a plain folder name (``../../x``, ``a/b``, ``/tmp/x``, ``.hidden``): a
        build writes into the batch folder, which must stay inside ``data/snapshots``.
    """
    name = batch or default_batch()
    if name != Path(name).name or name.startswith(".") or "\\" in name or not name.strip():
        raise SettingError(f"batch {name!r} is not a batch name: give the name of a folder in data/snapshots "
                           f"(letters, digits, '-', '_', '.'; no '/' and no leading '.'), e.g. {default_batch()!r}.")
    return SNAPSHOTS_DIR / name


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a message may show it. Messages end up in committed results, which must not carry
    this machine's folders: a path inside the repository is shown relative to it, one under the
    home folder as ``~/…`` (the same on every machine)."""
    given = Path(path).expanduser()
    if not given.is_absolute():  # e.g. "$RAG_MODELS_DIR/…": already machine-free, and not relative to cwd
        return str(path)
    resolved = given.resolve()
    for base, prefix in ((REPO_ROOT.resolve(), ""), (Path.home().resolve(), "~/")):
        try:
            return prefix + resolved.relative_to(base).as_posix()
        except ValueError:
            continue
    return str(path)
