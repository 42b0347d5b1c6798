"""`make lab` saves notebooks without outputs: running the explorer in JupyterLab never dirties a tracked file."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from rag_lib.app.lab import HOOK
from rag_lib.core.config import REPO_ROOT


def _with_outputs() -> dict:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(1)", execution_count=3)
    cell.outputs = [nbformat.v4.new_output("stream", text="1\n"),
                    nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="})]
    nb.cells = [nbformat.v4.new_markdown_cell("# Explore"), cell]
    return nb


@pytest.mark.parametrize("manager", ["jupyter_server.services.contents.filemanager:FileContentsManager",
                                     "jupytext:TextFileContentsManager"])
def test_the_contents_manager_saves_a_notebook_without_outputs(tmp_path: Path, manager: str) -> None:
    module, _, name = manager.partition(":")
    cls = getattr(pytest.importorskip(module), name)
    contents = cls(root_dir=str(tmp_path), pre_save_hook=HOOK)  # the import string, resolved as `make lab` does
    contents.save({"type": "notebook", "format": "json", "content": _with_outputs()}, "09_explore.ipynb")
    saved = json.loads((tmp_path / "09_explore.ipynb").read_text(encoding="utf-8"))
    code = [c for c in saved["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    assert "".join(code[0]["source"]) == "print(1)"  # the analyst's edits are kept


def test_make_lab_installs_the_hook() -> None:
    assert f"--FileContentsManager.pre_save_hook={HOOK}" in (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
