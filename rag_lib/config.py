"""Paths and settings, in one place.

Settings come from ``rag_lib/workbook.yaml``; paths are derived from the repository root.
Environment variables only ever override *locations* (``RAG_MODELS_DIR``, ``RAG_CACHE_DIR``)
and API credentials, which are never written to disk.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import yaml

PACKAGE_DIR = Path(__file__).resolve().parent
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


def cache_dir() -> Path:
    """Where rebuildable caches (embeddings) live; never committed."""
    return Path(os.environ.get("RAG_CACHE_DIR", REPO_ROOT / ".cache"))


@cache
def settings() -> dict[str, Any]:
    """The parsed ``workbook.yaml``."""
    with open(PACKAGE_DIR / "workbook.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def default_batch() -> str:
    """The corpus snapshot batch the workbook runs on."""
    return str(settings()["snapshot"]["batch"])


def snapshot_batches() -> list[str]:
    """Every batch the workbook builds (``snapshot.batches``), the default batch first."""
    listed = [str(b) for b in settings()["snapshot"].get("batches", [])]
    return list(dict.fromkeys([default_batch(), *listed]))


def batch_dir(batch: str | None = None) -> Path:
    """Folder of one snapshot batch: ``data/snapshots/<batch>/``."""
    return SNAPSHOTS_DIR / (batch or default_batch())


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
