"""Executing one notebook headless: papermill on the project's kernel, then ``<name>.ipynb`` and ``.html``.

:mod:`rag_lib.runner.reproduce` decides which runs execute (up to date or not),
holds the lock and reports. Here: :func:`execute` (one run, written atomically), the volatile metadata it
strips so an unchanged run is byte-identical (:func:`strip_volatile`), the kernel manager that talks over
IPC sockets (:func:`ipc_kernel_manager`), the HTML export
(:func:`html_exporter`) and the page title (:func:`notebook_title`).
"""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import nbformat

from rag_lib.core.config import KERNEL_NAME, NOTEBOOKS_DIR, cache_dir
from rag_lib.core.io import write_text
from rag_lib.results.runs import NotebookRun
from rag_lib.runner.notebooks import read_notebook

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_PLACEHOLDER = ("[interactive explorer: it needs a live kernel. Open this notebook in JupyterLab (make lab) "
                      "and run all cells; the default view is rendered above.]")
# papermill's scratch copy of a notebook while it runs; removed after, and at the next start if a
# killed run left it behind (ignored by git and by nbval).
RUNNING_PREFIX, RUNNING_SUFFIX = ".", ".running.ipynb"


def strip_volatile(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Remove what changes from run to run without the results changing.

    Execution counts stay: they are sequential (deterministic) and nbval needs them.
    """
    papermill = nb.metadata.get("papermill", {})
    nb.metadata["papermill"] = {k: papermill[k] for k in ("parameters",) if k in papermill}
    nb.metadata.pop("widgets", None)
    widget_ids: dict[str, str] = {}
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index:02d}"  # jupytext and papermill draw random ids
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(_WIDGET_VIEW)
            if view and "model_id" in view:  # random per kernel: number them in order instead
                view["model_id"] = widget_ids.setdefault(view["model_id"], f"widget-{len(widget_ids) + 1}")
                # Without a kernel the widget cannot render: say so instead of its Python repr.
                output["data"]["text/plain"] = WIDGET_PLACEHOLDER
    return nb


@cache
def ipc_kernel_manager() -> type:
    """A kernel manager whose kernels talk over local IPC sockets instead of TCP: no port is opened,
    and ipykernel has no unencrypted-TCP warning to print on every run."""
    from jupyter_client import AsyncKernelManager
    from traitlets import default

    class IPCKernelManager(AsyncKernelManager):  # type: ignore[misc]
        @default("transport")
        def _default_transport(self) -> str:
            return "ipc"

        @default("ip")
        def _default_ip(self) -> str:  # the sockets' path prefix; by default the notebooks folder
            return str(Path(tempfile.mkdtemp(prefix="rag-kernel-")) / "kernel-ipc")

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            # The kernel's own stderr (e.g. "KeyboardInterrupt caught in kernel" as it shuts down) goes to
            # a log, not between the one-line-per-notebook progress; cell errors still come as messages.
            log = cache_dir() / "reproduce" / "kernels.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "ab") as stderr:  # the kernel process holds its own copy of the descriptor
                await super()._async_launch_kernel(kernel_cmd, **{**kw, "stderr": stderr})

    return IPCKernelManager


def html_exporter() -> Any:
    """The lab-style HTML exporter."""
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab")


def execute(run: NotebookRun, out_dir: Path, cell_timeout: int) -> Path:
    """Execute one notebook; write ``<name>.ipynb`` and ``<name>.html`` atomically."""
    import papermill as pm

    nb = read_notebook(run.source)
    out_dir.mkdir(parents=True, exist_ok=True)
    scratch = out_dir / f"{RUNNING_PREFIX}{run.name}{RUNNING_SUFFIX}"
    try:
        executed = pm.execute_notebook(
            nb, str(scratch), parameters=run.parameters, kernel_name=KERNEL_NAME, cwd=str(NOTEBOOKS_DIR),
            progress_bar=False, execution_timeout=cell_timeout, kernel_manager_class=ipc_kernel_manager(),
        )
    finally:
        scratch.unlink(missing_ok=True)
    executed = strip_volatile(executed)
    target = out_dir / f"{run.name}.ipynb"
    text = nbformat.writes(executed)
    write_text(target, text if text.endswith("\n") else text + "\n")  # as nbformat.write; redacts any API key
    title = notebook_title(executed, run.name)  # the browser tab's title (nbconvert's default is "Notebook")
    html, _ = html_exporter().from_notebook_node(executed, resources={"metadata": {"name": title}})
    write_text(out_dir / f"{run.name}.html", html)
    return target


def notebook_title(nb: Any, fallback: str) -> str:
    """The page title a browser shows: the notebook's first Markdown heading (``# 05 · Q7 diagnosis``)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback
