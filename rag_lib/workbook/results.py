"""Stored results: the one reader of the ``results/<run>/results.json`` files that runs wrote.

Every consumer of another experiment's figures (the summary notebook, ``ask``, ``make check``)
reads through here, so a missing or stale file fails with one message that names the run to
execute. Runs are the ones declared in ``workbook.yaml`` (``reproduce.notebooks``), never found
by globbing folder names: a leftover folder of a removed run is not read, and a declared run that
has not written its results is reported as missing.

Each experiment's result is a frozen dataclass over :class:`ExperimentResult` (declared in
:mod:`rag_lib.workbook.experiment_results`), written by ``report.write_experiment`` and read back
with ``<Class>.read(run)``; ``make check`` reads each figure by dotted path (the paths
``results/expected.yaml`` uses) from the result as its class reads it back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Self

from rag_lib.config import NOTEBOOKS_DIR, results_dir, settings, shown_path
from rag_lib.errors import WorkbookError
from rag_lib.evaluation.metrics import hit_name
from rag_lib.io import read_json
from rag_lib.workbook.report import REPORT_KEYS
from rag_lib.workbook.typed_json import ShapeError, decode, encode, field_types

RESULTS_FILE = "results.json"
MECHANISM_NOTEBOOK = "06_q7_mechanism"


def mechanism_metrics(k: int) -> tuple[str, ...]:
    """What a mechanism run at top-``k`` compares per variant and language (coverage@evidence: the share of
    gold pieces in the evidence the variant sends, its own k): ``("hit@5", "coverage@10", "mrr",
    "coverage@evidence")`` at k = 5."""
    return (hit_name(k), "coverage@10", "mrr", "coverage@evidence")


class MissingResult(WorkbookError):
    """A run's ``results.json`` is absent, unreadable, or lacks a figure a reader needs."""


def rerun_command(name: str) -> str:
    """The command that executes run ``name`` again (what a :class:`MissingResult` tells the reader)."""
    return f"python -m rag_lib.workbook.reproduce {name}"


@dataclass(frozen=True)
class NotebookRun:
    """One execution of a notebook: its output name, source, papermill parameters, and the runs whose
    results it reads (``reads:`` in ``workbook.yaml``: a run name, or a notebook name for all its runs)."""

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
    """The runs declared in ``workbook.yaml``, in the order their reads allow (a run after every run it
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
                                "reproduce.notebooks in rag_lib/workbook.yaml; fix the spelling")
    return _in_read_order(declared)


def _in_read_order(runs: list[NotebookRun]) -> list[NotebookRun]:
    """``runs`` with every run after the runs it reads, otherwise in the given order (Kahn's algorithm)."""
    ordered: list[NotebookRun] = []
    waiting = list(runs)
    while waiting:  # the first waiting run that reads no other waiting run goes next
        ready = next((r for r in waiting if not any(o is not r and r.may_read(o) for o in waiting)), None)
        if ready is None:
            raise WorkbookError(f"the reads of {[r.name for r in waiting]} go in a circle; fix reads: in "
                                "reproduce.notebooks of rag_lib/workbook.yaml")
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
                            "rag_lib/workbook.yaml")


def runs_of(notebook: str) -> list[NotebookRun]:
    """The declared runs of ``notebook``, in name order (the order the summary tables have always had)."""
    return sorted((r for r in planned_runs() if r.notebook == notebook), key=lambda r: r.name)


@dataclass(frozen=True)
class StoredResult:
    """One run's ``results.json`` as read from disk."""

    name: str
    path: Path
    data: dict[str, Any]


def find_result(name: str, root: Path | None = None) -> StoredResult | None:
    """The stored result of run ``name`` under ``root`` (``RAG_RESULTS_DIR``), or ``None`` if it has not run."""
    check_declared_read(name)
    path = (root or results_dir()) / name / RESULTS_FILE
    if not path.is_file():
        return None
    data = read_json(path)  # a damaged file is named with its line by read_json
    if not isinstance(data, dict):
        raise MissingResult(f"{shown_path(path)} holds {type(data).__name__}, not an object; re-run {name}.")
    return StoredResult(name, path, data)


def read_result(name: str, root: Path | None = None, needed_by: str = "this step") -> StoredResult:
    """Like :func:`find_result`, but a run that has not written its results is an error that says so."""
    found = find_result(name, root)
    if found is None:
        path = (root or results_dir()) / name / RESULTS_FILE
        raise MissingResult(f"{shown_path(path)} is missing: {needed_by} reads it; run "
                            f"`{rerun_command(name)}` (or `make reproduce`).")
    return found


# --------------------------------------------------------------------------- typed results
@dataclass(frozen=True)
class ExperimentResult:
    """Base of what one experiment returns: its fields are the top-level keys of its ``results.json``.

    Each experiment declares a frozen dataclass over this. :meth:`to_json` is what
    ``report.write_experiment`` stores (with its ``REPORT_KEYS``); :meth:`from_json` reads a stored
    file back and fails, naming the run, on a key it lacks or one it does not declare (a file written
    by another version of the experiment), or on a value whose shape its declared type does not have.
    Nested values are typed by :mod:`rag_lib.workbook.typed_json` (dataclasses, lists, dicts); a field
    still typed ``dict[str, Any]`` stays plain JSON.
    """

    def to_json(self) -> dict[str, Any]:
        return {f.name: encode(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], name: str = "") -> Self:
        declared = {f.name for f in fields(cls)}
        missing, unknown = sorted(declared - set(data)), sorted(set(data) - declared - set(REPORT_KEYS))
        if missing or unknown:
            where = f"results of {name}" if name else "the results"
            problems = ([f"lack {', '.join(missing)}"] if missing else []) + (
                [f"have fields {cls.__name__} does not declare: {', '.join(unknown)}"] if unknown else [])
            raise MissingResult(f"{where} {' and '.join(problems)}; re-run it "
                                f"(`{rerun_command(name or 'NAME')}`).")
        types = field_types(cls)
        try:
            return cls(**{key: decode(types[key], data[key], key) for key in declared})
        except ShapeError as exc:
            raise MissingResult(f"the results of {name or 'this run'} do not have the declared shape ({exc}); "
                                f"re-run it (`{rerun_command(name or 'NAME')}`).") from exc

    @classmethod
    def read(cls, name: str, root: Path | None = None, needed_by: str = "this step") -> Self:
        """Run ``name``'s stored results, typed (errors as :func:`read_result` and :meth:`from_json`)."""
        return cls.from_json(read_result(name, root, needed_by).data, name)

    @classmethod
    def find(cls, name: str, root: Path | None = None) -> Self | None:
        """Like :meth:`read`, but ``None`` when run ``name`` has not written its results."""
        stored = find_result(name, root)
        return cls.from_json(stored.data, name) if stored is not None else None
