"""Notebook hygiene: paired, parameterised, headed, and stripped of execution state."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest

from rag_lib.core.config import NOTEBOOKS_DIR
from rag_lib.results.runs import planned_runs

SCRIPTS = sorted([*NOTEBOOKS_DIR.glob("[0-9][0-9]_*.py"), *NOTEBOOKS_DIR.glob("W[0-9]_*.py")])  # casebook, workbooks


def test_every_planned_run_has_its_notebook() -> None:
    assert {run.notebook for run in planned_runs()} <= {p.stem for p in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_notebook_is_paired_and_clean(script: Path) -> None:
    paired = script.with_suffix(".ipynb")
    assert paired.is_file(), f"{paired.name} missing: run `make sync`"
    nb = nbformat.read(paired, as_version=4)
    source = jupytext.read(script)
    assert [c.source for c in nb.cells] == [c.source for c in source.cells], f"{paired.name} differs: run `make sync`"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "committed notebooks carry no outputs"
    assert "papermill" not in nb.metadata
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged `parameters`"
    header = nb.cells[0]
    assert header.cell_type == "markdown"
    for part in ("**Question.**", "**Configuration.**", "**Re-run.**"):
        assert part in header.source, f"header cell lacks {part}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_every_name_a_notebook_imports_from_rag_lib_exists(script: Path) -> None:
    """Caught before a run: a notebook importing a name the library moved (nbval leaves 11–14 out)."""
    import ast
    import importlib

    missing = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rag_lib"):
            module = importlib.import_module(node.module)
            missing += [f"{node.module}.{a.name}" for a in node.names if not hasattr(module, a.name)
                        and not (hasattr(module, "__path__")  # a package's submodule, imported by name
                                 and importlib.util.find_spec(f"{node.module}.{a.name}") is not None)]
    assert missing == []
