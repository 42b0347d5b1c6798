"""The runs ``make reproduce`` executes, as the experiments declare them: each run's notebook, parameters and
the runs whose results it reads, in an order every run follows the runs it reads.

Each experiment is one :class:`Experiment`, declared as ``EXPERIMENT`` beside its result type (one module
of :mod:`rag_lib.results` per experiment), as pyserini's two-click records and MTEB's task metadata declare
theirs: its notebook, the experiments it reads, its result type, its parameters and the figures ``make
check`` compares. Runs are never found by globbing folder names: a leftover folder of a removed run is not
read, and a declared run that has not written its results is reported as missing
(:mod:`rag_lib.results.store`). Library code names a run through its declaration, never as a string.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from rag_lib.core.config import NOTEBOOKS_DIR
from rag_lib.core.errors import WorkbookError


@dataclass(frozen=True)
class NotebookRun:
    """One execution of a notebook: its output name, source, papermill parameters, and the notebooks whose
    results it reads (all their runs)."""

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


@dataclass(frozen=True)
class Experiment:
    """One experiment: the notebook that runs it, what it reads, what it stores and what ``make check`` compares.

    ``varies`` runs the notebook once per value of one parameter (run ``<notebook>-<value>``); otherwise the
    experiment is one run named after its notebook. A ``per_workbook`` experiment is generic: ``make reproduce
    WORKBOOK=NAME`` runs it with ``workbook=NAME`` into ``results/NAME/``; plain ``make reproduce`` runs the
    others. ``parameters`` override the notebook's defaults (its cell tagged ``parameters`` declares each one,
    with its default). ``checked`` maps a dotted path into the
    stored result (:func:`rag_lib.presentation.report.lookup`) to the absolute drift it may show; the values
    are recorded from a reference run in ``results/expected.yaml``, never typed here.
    """

    notebook: str
    result: type | None  # its ExperimentResult subclass (rag_lib.results.store imports this module); None: stores none
    reads: tuple[str, ...] = ()  # the notebooks whose results it reads (all their runs)
    varies: tuple[str, tuple[str, ...]] | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    checked: Mapping[str, float] = field(default_factory=dict)
    per_workbook: bool = False  # run by `make reproduce WORKBOOK=NAME` on a workbook, into results/NAME/

    @property
    def name(self) -> str:
        """The run's name (an experiment that varies a parameter has one per value: :meth:`run_name`)."""
        if self.varies is not None:
            raise WorkbookError(f"{self.notebook} runs once per {self.varies[0]}; name one with run_name(value)")
        return self.notebook

    def run_name(self, value: str) -> str:
        return f"{self.notebook}-{value}"

    def runs(self) -> list[NotebookRun]:
        if self.varies is None:
            return [NotebookRun(self.notebook, self.notebook, dict(self.parameters), self.reads)]
        key, values = self.varies
        return [NotebookRun(self.run_name(v), self.notebook, {**self.parameters, key: v}, self.reads) for v in values]


# Set by make reproduce for the notebook it executes: its reads are checked against the declaration.
RUN_ENV = "RAG_CURRENT_RUN"


@cache
def declared_experiments() -> tuple[Experiment, ...]:
    """Every ``EXPERIMENT`` declared in a module of :mod:`rag_lib.results`, in notebook order.

    Raises
    ------
    WorkbookError
        When two modules declare the same notebook.
    """
    import rag_lib.results as package

    found: dict[str, tuple[str, Experiment]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        experiment = getattr(module, "EXPERIMENT", None)
        if not isinstance(experiment, Experiment):
            continue
        if experiment.notebook in found:
            raise WorkbookError(f"rag_lib/results/{info.name}.py and rag_lib/results/{found[experiment.notebook][0]}"
                                f".py both declare notebook {experiment.notebook}; keep one EXPERIMENT")
        found[experiment.notebook] = (info.name, experiment)
    return tuple(found[name][1] for name in sorted(found))


def planned_runs(experiments: tuple[Experiment, ...] | None = None, workbook: str | None = None) -> list[NotebookRun]:
    """The runs of the declared experiments, each after every run it reads, otherwise in notebook order: the
    casebook's, or with ``workbook`` the generic ones, each given ``workbook=<name>``.

    Raises
    ------
    WorkbookError
        When a run's notebook has no source, a read names no declared notebook, or the reads go in a circle.
    """
    chosen = [e for e in (experiments if experiments is not None else declared_experiments())
              if e.per_workbook == (workbook is not None)]
    declared = [replace(run, parameters={**run.parameters, "workbook": workbook}) if workbook else run
                for e in chosen for run in e.runs()]
    notebooks = {r.notebook for r in declared}
    for run in declared:
        unknown = sorted(set(run.reads) - notebooks)
        if unknown:
            raise WorkbookError(f"experiment {run.notebook} declares reads {unknown}, which name no declared "
                                f"notebook ({', '.join(sorted(notebooks))}); fix the spelling in its EXPERIMENT")
        if not run.source.is_file():
            raise WorkbookError(f"experiment {run.notebook} is declared but {run.source} does not exist; add the "
                                "notebook or remove the declaration (EXPERIMENT in its rag_lib/results module)")
    return _in_read_order(declared)


def experiment_of(run: str) -> Experiment:
    """The experiment that declares run ``run``."""
    for experiment in declared_experiments():
        if run in {r.name for r in experiment.runs()}:
            return experiment
    names = [r.name for e in declared_experiments() for r in e.runs()]
    raise WorkbookError(f"no experiment declares a run {run!r}; the declared runs are {', '.join(names)}")


def _in_read_order(runs: list[NotebookRun]) -> list[NotebookRun]:
    """``runs`` with every run after the runs it reads, otherwise in the given order (Kahn's algorithm)."""
    ordered: list[NotebookRun] = []
    waiting = list(runs)
    while waiting:  # the first waiting run that reads no other waiting run goes next
        ready = next((r for r in waiting if not any(o is not r and r.may_read(o) for o in waiting)), None)
        if ready is None:
            raise WorkbookError(f"the reads of {[r.name for r in waiting]} go in a circle; fix the reads of their "
                                "declarations (EXPERIMENT in each one's rag_lib/results module)")
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
                            f"{target.notebook}'s declaration to the reads of {reader.notebook}'s EXPERIMENT")

