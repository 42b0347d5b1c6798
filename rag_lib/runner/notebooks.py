"""The notebook sources: a jupytext percent script read as a notebook, and its parameters cell.

``reproduce`` executes what :func:`read_notebook` returns; :func:`notebook_parameters` is what a run
will be given (``python -m rag_lib.runner --list`` shows it, and ``make reproduce`` refuses an
override the notebook does not declare before anything runs).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat

from rag_lib.core.config import KERNEL_NAME, shown_path
from rag_lib.core.errors import WorkbookError
from rag_lib.results.runs import NotebookRun


def read_notebook(source: Path) -> nbformat.NotebookNode:
    """The notebook of a jupytext percent script, with the project's kernel."""
    import jupytext

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {
        "name": KERNEL_NAME, "display_name": "Python (ragbench-workbook)", "language": "python",
    }
    nb.metadata.pop("jupytext", None)
    return nb


def notebook_parameters(run: NotebookRun) -> dict[str, str]:
    """The parameters cell of ``run``'s notebook (name -> value as a Python literal), with ``run``'s
    overrides from its declaration in place of the defaults they replace.

    Raises
    ------
    WorkbookError
        When the notebook has no single cell tagged ``parameters``, or the declaration gives a
        parameter the cell does not declare (papermill would only warn, and the run would go on
        with the default the override was meant to replace).
    """
    cells = [c for c in read_notebook(run.source).cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise WorkbookError(f"{shown_path(run.source)} has {len(cells)} cells tagged parameters; papermill "
                            "needs exactly one (# %% tags=[\"parameters\"])")
    source = cells[0].source
    declared = {target.id: _literal(ast.get_source_segment(source, node.value) or "")
                for node in ast.parse(source).body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    unknown = sorted(set(run.parameters) - set(declared))
    if unknown:
        raise WorkbookError(f"the declaration of run {run.name} gives parameter(s) {unknown} that the parameters "
                            f"cell of {shown_path(run.source)} does not declare ({', '.join(declared)}); fix the "
                            f"spelling in {run.notebook}'s EXPERIMENT (rag_lib/results/)")
    return {name: repr(run.parameters[name]) if name in run.parameters else value for name, value in declared.items()}


def _literal(source: str) -> str:
    """``source`` as one canonical literal (a list written over several lines reads as one line)."""
    try:
        return repr(ast.literal_eval(source))
    except (ValueError, SyntaxError):  # an expression, not a literal: shown as written
        return source


def notebook_question(run: NotebookRun) -> str:
    """The first question (a sentence ending in "?") of the ``**Question.**`` paragraph in ``run``'s
    notebook header, else that paragraph's first sentence."""
    header = read_notebook(run.source).cells[0].source
    match = re.search(r"\*\*Question\.\*\*(.+?)(?:\n\s*\n|\*\*Configuration)", header, flags=re.S)
    if not match:
        return "(the notebook's header states no question)"
    text = " ".join(match.group(1).split())
    for name, value in run.parameters.items():  # "the mechanism named in the parameters" → "the mechanism `hybrid`"
        text = text.replace(f"the {name} named in the parameters", f"the {name} `{value}`")
    sentences = re.split(r"(?<=[.?!])\s+(?=[A-Z(\"])", text)
    i = next((i for i, x in enumerate(sentences) if x.endswith("?")), 0)
    # A short question ("Is that true of our corpus?") needs the sentence it refers to.
    return " ".join(sentences[i - 1:i + 1]) if i and len(sentences[i]) < 50 else sentences[i]
