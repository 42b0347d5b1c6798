"""``make lab``: JupyterLab on ``notebooks/``, where every notebook is saved without its outputs.

The notebooks there are the sources ``make reproduce`` executes (their executed copies are in
``results/notebooks/``). An analyst who runs the explorer (09) or any other notebook in JupyterLab would
otherwise save figures and tables into a tracked file; :func:`strip_outputs` is the contents manager's
pre-save hook (``--FileContentsManager.pre_save_hook=rag_lib.app.lab.strip_outputs``), so what is saved is
the source as committed, plus whatever the analyst changed in its cells.
"""

from __future__ import annotations

from typing import Any

HOOK = f"{__name__}.strip_outputs"  # the import string `make lab` passes to the contents manager


def strip_outputs(model: dict[str, Any], **_: Any) -> None:
    """Clear every code cell's outputs and execution count of a notebook ``model`` before it is saved (in place;
    files that are not notebooks pass unchanged)."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    for cell in model["content"].get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
