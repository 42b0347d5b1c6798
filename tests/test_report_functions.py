"""Every casebook report is a tested function (issue 48, item 5): for each run of each experiment with a report
module in :mod:`rag_lib.presentation.reports`, the function, given the run's stored result and Findings, writes
exactly the ``report.md`` the run wrote (the committed results are the reference; a run that changed its report
without re-rendering, or a function that drifted from what the notebook wrote, fails here)."""

from __future__ import annotations

import importlib
import json
import pkgutil
from types import ModuleType

import pytest

from rag_lib.core.config import RESULTS_DIR
from rag_lib.presentation import reports
from rag_lib.presentation.report import GLOSSARY_LINK
from rag_lib.results.store import RESULTS_FILE


def _modules() -> list[ModuleType]:
    return [importlib.import_module(f"{reports.__name__}.{m.name}") for m in pkgutil.iter_modules(reports.__path__)]


def _cases() -> list[tuple[ModuleType, str]]:
    return [(module, run.name) for module in _modules() for run in module.EXPERIMENT.runs()]


@pytest.mark.parametrize(("module", "run"), _cases(), ids=[run for _, run in _cases()])
def test_the_report_function_writes_the_report_its_run_wrote(module: ModuleType, run: str) -> None:
    folder = RESULTS_DIR / run
    stored = json.loads((folder / RESULTS_FILE).read_text(encoding="utf-8"))
    typed = module.EXPERIMENT.result.from_json(stored, run)
    written = f"{module.report_markdown(typed, stored.get('findings', [])).rstrip()}\n\n{GLOSSARY_LINK}\n"
    assert written == (folder / "report.md").read_text(encoding="utf-8")


def test_no_notebook_holds_a_report_template() -> None:
    from rag_lib.core.config import NOTEBOOKS_DIR

    converted = {module.EXPERIMENT.notebook for module in _modules()}
    holding = [nb.name for nb in sorted(NOTEBOOKS_DIR.glob("*.py"))
               if nb.stem in converted and 'tags=["report"]' in nb.read_text(encoding="utf-8")]
    assert holding == []
