"""The import structure of ``rag_lib``: which parts may import which.

Units are the top-level modules and packages of ``rag_lib``. Imports under ``if TYPE_CHECKING:``
are left out (they never run). The contract:

* experiments (one module per notebook) and the workbook tools that run them sit on top: no
  pipeline stage imports them;
* no import cycle between units, except the one recorded in ``KNOWN_TANGLE`` (stages that still
  import each other; see issue 11). It may shrink, never grow, and no other cycle may appear.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from rag_lib.config import PACKAGE_DIR

TOP = {"experiments", "reproduce", "report", "expected", "figures", "llm_runs", "explore", "__main__"}
# Units that still form one import cycle (benchmark and its label tools, gates and generation,
# embedding and rerank); issue 11 splits them into layered stage packages.
KNOWN_TANGLE = {"batch_labels", "benchmark", "embedding", "evaluation", "evidence", "generation", "label_audit",
                "rerank", "workbench"}


def _runtime_imports(tree: ast.AST) -> list[tuple[str, int]]:
    """``rag_lib.…`` modules imported by ``tree``, skipping ``if TYPE_CHECKING:`` blocks."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rag_lib"):
            found.extend((f"{node.module}.{alias.name}", node.lineno) for alias in node.names)
            found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names if alias.name.startswith("rag_lib"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(package: Path) -> dict[str, dict[str, str]]:
    """``unit -> {imported unit: "file:line" of the first such import}`` between units of ``package``."""
    units = {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    graph: dict[str, dict[str, str]] = defaultdict(dict)
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        unit = rel.parts[0].removesuffix(".py")
        for module, line in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            parts = module.split(".")
            target = parts[1] if len(parts) > 1 else None
            if target in units and target not in (unit, "__init__"):
                graph[unit].setdefault(target, f"{rel}:{line}")
    return graph


def cycles(graph: dict[str, dict[str, str]]) -> list[set[str]]:
    """Strongly connected components with more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_on_a_hand_made_graph() -> None:
    graph = {"a": {"b": ""}, "b": {"c": ""}, "c": {"a": ""}, "d": {"a": ""}, "e": {"f": ""}, "f": {"e": ""}}
    assert sorted(map(sorted, cycles(graph))) == [["a", "b", "c"], ["e", "f"]]
    assert cycles({"a": {"b": ""}, "b": {}}) == []


def test_type_checking_imports_are_not_edges(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rag_lib.b import X\n")
    (tmp_path / "b.py").write_text("from rag_lib.a import Y\n")
    assert import_graph(tmp_path) == {"b": {"a": "b.py:1"}}


def test_no_stage_imports_an_experiment_or_the_workbook_tools() -> None:
    graph = import_graph(PACKAGE_DIR)
    upward = [f"{unit} -> {target} ({where})" for unit, targets in graph.items() if unit not in TOP
              for target, where in targets.items() if target in TOP]
    assert upward == []


def test_no_new_import_cycle() -> None:
    found = cycles(import_graph(PACKAGE_DIR))
    outside = [sorted(c) for c in found if not c <= KNOWN_TANGLE]
    assert outside == [], "a new import cycle between rag_lib units"
