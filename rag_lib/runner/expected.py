"""Expected figures per experiment, checked OK / OKish / FAIL (pyserini two-click style).

Each experiment's declaration (``EXPERIMENT.checked``, :class:`~rag_lib.results.runs.Experiment`) names
its figures, each a dotted path into ``results/<run>/results.json`` read through the run's declared result
type, with the absolute drift it may show (chosen by people). ``results/expected.yaml`` holds each figure's
value as a reference run recorded it with ``python -m rag_lib.runner.expected --freeze`` (never typed by
hand), as ``{experiment, path, value}``. A figure is **OK** when it equals the expected value, **OKish**
when it differs by at most its tolerance, and **FAIL** otherwise, or when it is missing, has no recorded
value, or its results do not read as their type.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rag_lib.core.config import results_dir
from rag_lib.core.errors import cli_errors
from rag_lib.core.io import write_text
from rag_lib.presentation.report import lookup
from rag_lib.results.runs import declared_experiments
from rag_lib.results.store import MissingResult, result_type


@dataclass(frozen=True)
class Verdict:
    experiment: str
    path: str
    expected: Any
    actual: Any
    status: str  # OK | OKish | FAIL


def _compare(expected: Any, actual: Any, tolerance: float) -> str:
    if actual == expected:
        return "OK"
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers) and not isinstance(actual, bool):
        if math.isclose(expected, actual, rel_tol=0, abs_tol=1e-12):
            return "OK"
        if abs(expected - actual) <= tolerance:
            return "OKish"
    return "FAIL"


def load_expected(root: Path) -> dict[tuple[str, str], Any]:
    """The recorded values of ``root/expected.yaml``: ``(run, path) -> value``."""
    path = root / "expected.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; record it from a reference run with "
                                "`python -m rag_lib.runner.expected --freeze`.")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path} is not valid YAML ({exc}). Fix that line, or restore the file with git.") from exc
    figures = data.get("figures") if isinstance(data, dict) else None
    if not isinstance(figures, list) or not all(isinstance(f, dict) and {"experiment", "path", "value"} <= f.keys()
                                                for f in figures):
        raise ValueError(f"{path} must hold `figures:`, a list of {{experiment, path, value}}; "
                         "restore it with git or record it with `python -m rag_lib.runner.expected --freeze`.")
    return {(f["experiment"], f["path"]): f["value"] for f in figures}


def checked_figures() -> list[tuple[str, str, float]]:
    """``(run, path, tolerance)`` for every figure the experiments declare, in run order."""
    return [(run.name, path, float(tolerance)) for experiment in declared_experiments() for run in experiment.runs()
            for path, tolerance in experiment.checked.items()]


@dataclass(frozen=True)
class Absent:
    """Why a figure has no value; shown in its place (and never equal to an expected value)."""

    reason: str

    def __repr__(self) -> str:
        return f"<{self.reason}>"


def _stored(root: Path, experiment: str) -> dict[str, Any] | Absent:
    """Run ``experiment``'s results as its declared type reads them back (as JSON), or why there are none."""
    cls = result_type(experiment)
    try:
        stored = cls.find(experiment, root)
    except MissingResult as exc:  # written by another version of the experiment
        return Absent(f"not a {cls.__name__}: {exc}")
    return Absent("no results.json") if stored is None else stored.to_json()


def _actuals(root: Path, figures: list[tuple[str, str, float]]) -> list[Any]:
    """The current value of each figure, each run's results read once."""
    stored: dict[str, dict[str, Any] | Absent] = {}
    out: list[Any] = []
    for run, path, _ in figures:
        if run not in stored:
            stored[run] = _stored(root, run)
        data = stored[run]
        if isinstance(data, Absent):
            out.append(data)
            continue
        try:
            out.append(lookup(data, path))
        except (KeyError, IndexError, TypeError):
            out.append(Absent("missing"))
    return out


_NOT_RECORDED = Absent("not recorded in expected.yaml: run `python -m rag_lib.runner.expected --freeze`")


def verdicts(root: Path) -> list[Verdict]:
    expected, figures = load_expected(root), checked_figures()
    out = []
    for (run, path, tolerance), actual in zip(figures, _actuals(root, figures), strict=True):
        value = expected.get((run, path), _NOT_RECORDED)
        status = "FAIL" if value is _NOT_RECORDED else _compare(value, actual, tolerance)
        out.append(Verdict(run, path, value, actual, status))
    return out


def check_counts(root: Path) -> dict[str, str]:
    """``experiment -> "5 OK, 1 OKish, 0 FAIL"`` over its expected figures (for the results index); empty
    where ``root`` has no ``expected.yaml`` (a scratch copy of the results)."""
    if not (root / "expected.yaml").is_file():
        return {}
    by_run: dict[str, list[str]] = {}
    for v in verdicts(root):
        by_run.setdefault(v.experiment, []).append(v.status)
    return {run: ", ".join(f"{statuses.count(s)} {s}" for s in ("OK", "OKish", "FAIL"))
            for run, statuses in by_run.items()}


def check_expected(root: Path | None = None) -> int:
    """Print one line per figure; return the number of FAILs."""
    root = root or results_dir()
    results = verdicts(root)
    for v in results:
        print(f"{v.status:5s}  {v.experiment}:{v.path}  expected {v.expected!r}  got {v.actual!r}")
    failed = sum(v.status == "FAIL" for v in results)
    counts = {s: sum(v.status == s for v in results) for s in ("OK", "OKish", "FAIL")}
    print(f"{counts['OK']} OK, {counts['OKish']} OKish, {counts['FAIL']} FAIL")
    return failed


def freeze(root: Path | None = None) -> Path:
    """Rewrite ``expected.yaml`` with the current value of every declared figure."""
    root = root or results_dir()
    figures = checked_figures()
    recorded = []
    for (run, path, _), value in zip(figures, _actuals(root, figures), strict=True):
        if isinstance(value, Absent):
            raise ValueError(f"cannot freeze {run}:{path}: {value}; run `make reproduce` first.")
        recorded.append({"experiment": run, "path": path, "value": value})
    header = (
        "# The value of each figure the experiments declare (EXPERIMENT.checked, with its tolerance), recorded\n"
        "# from a reference run by `python -m rag_lib.runner.expected --freeze`; `make check` compares against them.\n"
    )
    text = header + yaml.safe_dump({"figures": recorded}, sort_keys=False, allow_unicode=True, width=110)
    write_text(root / "expected.yaml", text)
    return root / "expected.yaml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_lib.runner.expected", description=__doc__)
    parser.add_argument("--freeze", action="store_true", help="record the current values as expected")
    args = parser.parse_args(argv)
    with cli_errors():
        if args.freeze:
            print(f"wrote {freeze()}")
            return 0
        return 1 if check_expected() else 0


if __name__ == "__main__":
    raise SystemExit(main())
