"""The import structure of ``rag_lib``: declared layers, enforced.

Units are the top-level modules and packages of ``rag_lib``; a package's ``__main__.py`` (a command
line) belongs to its package, so it may not reach above the package's layer either. Imports under
``if TYPE_CHECKING:`` count like any other: a type a module needs from a higher layer, or from a
module that imports it, belongs lower (or in a ``Protocol`` beside its user). The contract, as
import-linter's "layers" contract states it:

* every unit is in one layer of ``LAYERS`` (a new module must be placed);
* a unit imports only units of its own layer or lower ones, never a higher one;
* no import cycle at all, inside a layer or across;
* at most ``MAX_TOP_LEVEL_MODULES`` modules at the top of the package.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from rag_lib.core.config import PACKAGE_DIR

# Top to bottom.
LAYERS: list[tuple[str, set[str]]] = [
    ("entry points", {"__main__", "app", "labels"}),  # the command line, the explorer, labelling
    ("runner", {"runner"}),  # orchestration: make reproduce, notebook sources, make check, LLM runs
    ("experiments", {"experiments"}),  # one module per notebook
    ("question sweeps", {"question_sweeps", "exchange"}),  # a stage swept over every question; the formats in and out
    ("pipeline", {"pipeline"}),  # the stages assembled for a snapshot, and one question through them
    ("stages", {"corpus", "embedding", "index", "rerank", "evidence"}),
    ("presentation", {"presentation"}),  # reports, tables, figures, pages, the headline
    ("results", {"results"}),  # each experiment's stored result (typed), the declared runs, the baseline
    ("generation", {"generation"}),
    ("evaluation", {"benchmark", "evaluation"}),
    ("verification", {"verification"}),  # which claims of an answer its own quotes state (after generation)
    ("foundations", {"retrieval", "core", "text", "io", "errors", "config"}),
]
MAX_TOP_LEVEL_MODULES = 6  # the package's own files; everything else lives in a package named for its job


def units_of(package: Path) -> set[str]:
    return ({p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
            ) - {"__init__"}


def _imports(tree: ast.AST) -> list[tuple[str, int]]:
    """``rag_lib.…`` modules imported by ``tree``, wherever the import stands (``if TYPE_CHECKING:`` included)."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rag_lib"):
            found.extend((f"{node.module}.{alias.name}", node.lineno) for alias in node.names)
            found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names if alias.name.startswith("rag_lib"))
    return found


def import_graph(package: Path, name: str = "rag_lib") -> dict[str, dict[str, str]]:
    """``unit -> {imported unit: "file:line" of the first such import}`` between units of ``package``
    (importable as ``name``)."""
    units = units_of(package)
    prefix = name.split(".")
    graph: dict[str, dict[str, str]] = defaultdict(dict)
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        unit = rel.parts[0].removesuffix(".py")  # a package's __main__.py is part of its package
        for module, line in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            parts = module.split(".")
            inside = parts[:len(prefix)] == prefix and len(parts) > len(prefix)
            target = parts[len(prefix)] if inside else None
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


def test_type_checking_imports_are_edges_too(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rag_lib.b import X\n")
    (tmp_path / "b.py").write_text("from rag_lib.a import Y\n")
    assert import_graph(tmp_path) == {"a": {"b": "a.py:3"}, "b": {"a": "b.py:1"}}
    assert cycles(import_graph(tmp_path)) == [{"a", "b"}]


def test_every_unit_is_in_one_layer() -> None:
    placed = [unit for _, units in LAYERS for unit in units]
    assert len(placed) == len(set(placed)), "a unit is in two layers"
    assert sorted(units_of(PACKAGE_DIR) - set(placed)) == [], "place each new module in LAYERS"


def test_the_top_of_the_package_holds_few_modules() -> None:
    modules = sorted(p.name for p in PACKAGE_DIR.glob("*.py"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, f"{modules}: move modules into the package of their job"


def test_no_unit_imports_a_higher_layer() -> None:
    layer = {unit: i for i, (_, units) in enumerate(LAYERS) for unit in units}
    upward = [f"{unit} ({LAYERS[layer[unit]][0]}) -> {target} ({LAYERS[layer[target]][0]}) at {where}"
              for unit, targets in import_graph(PACKAGE_DIR).items() for target, where in targets.items()
              if layer[target] < layer[unit]]
    assert upward == []


def test_no_import_cycle() -> None:
    assert [sorted(c) for c in cycles(import_graph(PACKAGE_DIR))] == []


def test_experiments_do_not_import_each_other() -> None:
    """What several experiments share lives below them (question_sweeps, results, stages); only the
    runner (``python -m rag_lib.runner --list``) reads them all."""
    assert import_graph(PACKAGE_DIR / "experiments", "rag_lib.experiments") == {}


def test_no_private_name_is_imported_across_modules() -> None:
    # A name with a leading underscore is a module's own; one another module needs is public (named so).
    crossing = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rag_lib"):
                crossing += [f"{path.relative_to(PACKAGE_DIR)}:{node.lineno} imports {node.module}.{alias.name}"
                             for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not crossing, "private names imported across modules:\n" + "\n".join(crossing)


def test_no_import_cycle_inside_a_package() -> None:
    # The layer test sees top-level units; inside each package the modules must not import in a circle either.
    found = {}
    for init in sorted(PACKAGE_DIR.rglob("__init__.py")):
        package = init.parent
        if package != PACKAGE_DIR:
            name = "rag_lib." + ".".join(package.relative_to(PACKAGE_DIR).parts)
            graph = import_graph(package, name)
            if circles := cycles(graph):
                found[name] = [{unit: graph[unit] for unit in sorted(circle)} for circle in circles]
    assert not found, f"import cycles inside packages (module -> imported module: where): {found}"


MAX_MODULE_LINES = 400  # a module longer than this holds more than one job: split it where the jobs part


def test_no_module_is_over_the_size_limit() -> None:
    sizes = {str(p.relative_to(PACKAGE_DIR)): len(p.read_text(encoding="utf-8").splitlines())
             for p in sorted(PACKAGE_DIR.rglob("*.py"))}
    assert {path: n for path, n in sizes.items() if n > MAX_MODULE_LINES} == {}
