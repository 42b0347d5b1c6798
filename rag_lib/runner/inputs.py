"""What a run depends on, and whether it must execute again: its input files, its fingerprint, its stamp.

A run re-executes when its fingerprint (:func:`fingerprint`: its data, its notebook, the ``rag_lib`` code the
notebook reaches, its parameters, the results it reads, the recorded LLM calls) differs from the stamp its last
successful execution left in the cache (:func:`stale`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rag_lib.core.config import (
    BENCHMARK_DIR,
    REPO_ROOT,
    RESULTS_DIR,
    SNAPSHOTS_DIR,
    cache_dir,
    results_dir,
    snapshot_batches,
)
from rag_lib.generation.call_records import DEFAULT_CALLS_DIR
from rag_lib.pipeline.workbook import WORKBOOKS_DIR, Workbook
from rag_lib.results.q9a import EXPERIMENT as Q9A
from rag_lib.results.runs import NotebookRun
from rag_lib.results.store import RESULTS_FILE
from rag_lib.results.workbook import EXPERIMENT as W1
from rag_lib.runner.closure import closure, settings_files

# What every notebook's results depend on besides its own code (runner/closure.py: the rag_lib modules its source
# reaches, and rag_lib's settings files). Derived corpus files (rebuilt by 00_corpus) and the caches (embeddings,
# recorded LLM calls) are left out: they follow from these inputs.
_INPUT_ROOTS = ("data", "requirements.txt")
_DERIVED = ("/normalized/", "chunks.jsonl", "derived.sha256.json", "__pycache__")


def input_files(workbook: Workbook | None = None) -> list[Path]:
    """The data a run depends on: the casebook's (everything under ``data/`` but the workbooks and their batches),
    or a workbook's (its folder, its batch, and the benchmark when it is its questions). Neither depends on the
    other's, so importing a workbook's corpus re-runs none of the casebook's notebooks. A workbook batch's raw
    files are left out: its manifest, hashed instead, pins each one's sha256."""
    if workbook is None:
        roots = [REPO_ROOT / root for root in _INPUT_ROOTS]
        casebook = set(snapshot_batches())

        def keep(p: Path) -> bool:
            if p.is_relative_to(WORKBOOKS_DIR):
                return False
            return not p.is_relative_to(SNAPSHOTS_DIR) or p.relative_to(SNAPSHOTS_DIR).parts[0] in casebook
    else:
        batch = SNAPSHOTS_DIR / workbook.batch
        roots = [workbook.folder, batch, REPO_ROOT / "requirements.txt"]
        roots += [BENCHMARK_DIR] if workbook.questions is None else []
        roots += [RESULTS_DIR / other / W1.name / RESULTS_FILE for other in workbook.compare_with]  # W2 reads them
        roots += [RESULTS_DIR / Q9A.name / RESULTS_FILE]  # W3 applies the gate settings the casebook's 03 fitted

        def keep(p: Path) -> bool:
            return not p.is_relative_to(batch / "raw" / "files")
    files: list[Path] = []
    for path in roots:
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        files += [p for p in candidates if keep(p) and not any(d in p.as_posix() for d in _DERIVED)]
    return files


def recorded_calls() -> list[str]:
    """Names of the recorded LLM calls (request hashes): a run must re-execute when records arrive."""
    folder = DEFAULT_CALLS_DIR
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


def fingerprint(run: NotebookRun, earlier: list[NotebookRun], files: list[Path]) -> str:
    """sha256 over the data (``files``), the notebook source and the rag_lib code it reaches (its import closure
    and the settings files), parameters, the results of the runs it reads (``earlier``: its declared reads)
    and the set of recorded LLM calls. Editing one experiment's module so changes only the runs that reach it."""
    digest = hashlib.sha256()
    digest.update("\n".join(recorded_calls()).encode())
    code = [*closure([run.source]), *settings_files()]
    for path in [*files, *code, run.source, *(results_dir() / e.name / RESULTS_FILE for e in earlier)]:
        if path.is_file():
            label = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path.relative_to(path.parents[1])
            digest.update(label.as_posix().encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(json.dumps(run.parameters, sort_keys=True).encode())
    return digest.hexdigest()


def run_key(run: NotebookRun) -> str:
    """The run's name, prefixed by its workbook's (a generic notebook runs once per workbook)."""
    workbook = run.parameters.get("workbook")
    return f"{workbook}.{run.name}" if workbook else run.name


def stamp_path(run: NotebookRun) -> Path:
    return cache_dir() / "reproduce" / f"{run_key(run)}.sha256"


def timing_path(run: NotebookRun) -> Path:
    return cache_dir() / "reproduce" / f"{run_key(run)}.seconds"


def last_seconds(run: NotebookRun) -> float | None:
    """How long ``run`` took when it last ran to the end on this machine (``None``: never, or unreadable)."""
    try:
        return float(timing_path(run).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def stale(run: NotebookRun, inputs: str, out_dir: Path) -> str | None:
    """Why ``run`` must execute ("never ran here", "inputs changed"), or ``None`` when its stamp holds ``inputs``
    and its executed notebook is there."""
    stamp = stamp_path(run)
    if not stamp.is_file() or not (out_dir / f"{run.name}.ipynb").is_file():
        return "never ran here"
    return "inputs changed" if stamp.read_text() != inputs else None
