"""Expected figures per experiment, checked OK / OKish / FAIL (pyserini two-click style).

``results/expected.yaml`` lists figures as ``{experiment, path, value, tolerance}``: ``path`` is a
dotted path into ``results/<experiment>/results.json``, read through the run's declared result type
(:func:`~rag_lib.results.catalog.result_type`). A figure is **OK** when it equals the
expected value, **OKish** when it differs by at most ``tolerance`` (absolute), and **FAIL**
otherwise, or when it is missing or its results do not read as their type. Values are recorded
from a reference run with ``python -m rag_lib.runner.expected --freeze`` (never typed by hand);
tolerances are chosen by people.
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
from rag_lib.results.catalog import result_type
from rag_lib.results.store import MissingResult


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


def load_expected(root: Path) -> list[dict[str, Any]]:
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
        raise ValueError(f"{path} must hold `figures:`, a list of {{experiment, path, value, tolerance}}; "
                         "restore it with git or record it with `python -m rag_lib.runner.expected --freeze`.")
    return list(figures)


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


def _actuals(root: Path, figures: list[dict[str, Any]]) -> list[Any]:
    """The current value of each figure, each experiment's results read once."""
    stored: dict[str, dict[str, Any] | Absent] = {}
    out: list[Any] = []
    for f in figures:
        if f["experiment"] not in stored:
            stored[f["experiment"]] = _stored(root, f["experiment"])
        data = stored[f["experiment"]]
        if isinstance(data, Absent):
            out.append(data)
            continue
        try:
            out.append(lookup(data, f["path"]))
        except (KeyError, IndexError, TypeError):
            out.append(Absent("missing"))
    return out


def verdicts(root: Path) -> list[Verdict]:
    figures = load_expected(root)
    return [Verdict(f["experiment"], f["path"], f["value"], actual, _compare(f["value"], actual,
                                                                             float(f.get("tolerance", 0))))
            for f, actual in zip(figures, _actuals(root, figures), strict=True)]


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
    """Rewrite ``expected.yaml`` with the values of the current results (tolerances kept)."""
    root = root or results_dir()
    figures = load_expected(root)
    for f, value in zip(figures, _actuals(root, figures), strict=True):
        if isinstance(value, Absent):
            raise ValueError(f"cannot freeze {f['experiment']}:{f['path']}: {value}; run `make reproduce` first.")
        f["value"] = value
    header = (
        "# Expected figures of each experiment, checked by `make check` (OK / OKish / FAIL).\n"
        "# Values are recorded from a reference run by `python -m rag_lib.runner.expected --freeze`;\n"
        "# tolerances (absolute) are chosen by people and say how much drift is acceptable.\n"
    )
    text = header + yaml.safe_dump({"figures": figures}, sort_keys=False, allow_unicode=True, width=110)
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
