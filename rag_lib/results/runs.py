"""The runs ``make reproduce`` executes, as ``config.yaml`` declares them: each run's notebook, parameters and
the runs whose results it reads, in an order every run follows the runs it reads.

Runs are the ones declared in ``config.yaml`` (``reproduce.notebooks``), never found by globbing folder
names: a leftover folder of a removed run is not read, and a declared run that has not written its results
is reported as missing (:mod:`rag_lib.results.store`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_lib.core.config import NOTEBOOKS_DIR, settings
from rag_lib.core.errors import WorkbookError

MECHANISM_NOTEBOOK = "06_q7_mechanism"

@dataclass(frozen=True)
class NotebookRun:
    """One execution of a notebook: its output name, source, papermill parameters, and the runs whose
    results it reads (``reads:`` in ``config.yaml``: a run name, or a notebook name for all its runs)."""

    name: str
    notebook: str
    parameters: dict[str, Any] = field(default_factory=dict)
    reads: tuple[str, ...] = ()

    @property
    def source(self) -> Path:
        return NOTEBOOKS_DIR / f"{self.notebook}.py"

    def may_read(self, other: NotebookRun) -> bool:
        """Whether ``other``'s results are declared as this run's input (its own results always are)."""
        return other.name == self.name or other.name in self.reads or other.notebook in self.reads


# Set by make reproduce for the notebook it executes: its reads are checked against the declaration.
RUN_ENV = "RAG_CURRENT_RUN"


def planned_runs() -> list[NotebookRun]:
    """The runs declared in ``config.yaml``, in the order their reads allow (a run after every run it
    reads; otherwise as listed).

    Raises
    ------
    WorkbookError
        When a run declares a read that names no run or notebook, or the reads go in a circle.
    """
    declared = [NotebookRun(r["name"], r["notebook"], dict(r.get("parameters") or {}), tuple(r.get("reads") or ()))
                for r in settings()["reproduce"]["notebooks"]]
    known = {r.name for r in declared} | {r.notebook for r in declared}
    for run in declared:
        unknown = sorted(set(run.reads) - known)
        if unknown:
            raise WorkbookError(f"run {run.name} declares reads {unknown}, which name no run or notebook of "
                                "reproduce.notebooks in rag_lib/config.yaml; fix the spelling")
    return _in_read_order(declared)


def _in_read_order(runs: list[NotebookRun]) -> list[NotebookRun]:
    """``runs`` with every run after the runs it reads, otherwise in the given order (Kahn's algorithm)."""
    ordered: list[NotebookRun] = []
    waiting = list(runs)
    while waiting:  # the first waiting run that reads no other waiting run goes next
        ready = next((r for r in waiting if not any(o is not r and r.may_read(o) for o in waiting)), None)
        if ready is None:
            raise WorkbookError(f"the reads of {[r.name for r in waiting]} go in a circle; fix reads: in "
                                "reproduce.notebooks of rag_lib/config.yaml")
        ordered.append(ready)
        waiting.remove(ready)
    return ordered


def reads_of(run: NotebookRun, runs: list[NotebookRun] | None = None) -> list[NotebookRun]:
    """The planned runs whose results ``run`` declares it reads."""
    return [other for other in (runs or planned_runs()) if other.name != run.name and run.may_read(other)]


def check_declared_read(name: str) -> None:
    """Inside a ``make reproduce`` run (:data:`RUN_ENV`), refuse to read a run the running one does not
    declare: the dependency graph (ordering, re-runs) is only right when every read is declared."""
    current = os.environ.get(RUN_ENV)
    if not current or current == name:
        return
    runs = {r.name: r for r in planned_runs()}
    reader, target = runs.get(current), runs.get(name)
    if reader is not None and target is not None and not reader.may_read(target):
        raise WorkbookError(f"run {current} reads the results of {name}, which it does not declare: add "
                            f"{name} (or {target.notebook}) to the reads: of {current} in reproduce.notebooks of "
                            "rag_lib/config.yaml")


def runs_of(notebook: str) -> list[NotebookRun]:
    """The declared runs of ``notebook``, in name order (the order the summary tables have always had)."""
    return sorted((r for r in planned_runs() if r.notebook == notebook), key=lambda r: r.name)
