"""Stored results: the one reader of the ``results/<run>/results.json`` files that runs wrote.

Every consumer of another experiment's figures (the summary notebook, ``ask``, ``make check``)
reads through here, so a missing or stale file fails with one message that names the run to
execute.

Each experiment's result is a frozen dataclass over :class:`ExperimentResult` (one module per
experiment in :mod:`rag_lib.results`), written by ``presentation.report.write_experiment`` and read back
with ``<Class>.read(run)``; ``make check`` reads each figure by dotted path (the paths
``results/expected.yaml`` uses) from the result as its class reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Self

from rag_lib.core.config import results_dir, shown_path
from rag_lib.core.errors import WorkbookError
from rag_lib.core.io import read_json
from rag_lib.results.runs import check_declared_read, declared_experiments, experiment_of
from rag_lib.results.typed_json import ShapeError, decode, encode, field_types

RESULTS_FILE = "results.json"
# What report.write_experiment adds to an experiment's own fields in its results.json.
REPORT_KEYS = ("experiment", "rag_lib_version", "findings", "findings_text", "statements")


class MissingResult(WorkbookError):
    """A run's ``results.json`` is absent, unreadable, or lacks a figure a reader needs."""


def rerun_command(name: str) -> str:
    """The command that executes run ``name`` again (what a :class:`MissingResult` tells the reader)."""
    return f"python -m rag_lib.runner.reproduce {name}"


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
    Nested values are typed by :mod:`rag_lib.results.typed_json` (dataclasses, lists, dicts); a field
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


def result_type(run: str) -> type[ExperimentResult]:
    """The declared type of run ``run``'s results."""
    experiment = experiment_of(run)
    if experiment.result is None or not issubclass(experiment.result, ExperimentResult):
        stores = sorted(r.name for e in declared_experiments() if e.result is not None for r in e.runs())
        raise WorkbookError(f"run {run} stores no results; the runs that do are {', '.join(stores)}")
    return experiment.result
