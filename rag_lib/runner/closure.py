"""Which of rag_lib's files a notebook's results can depend on: the import closure of its source.

``make reproduce`` re-executes a run when one of its inputs changed. Hashing all of ``rag_lib/`` made any
edit re-run every notebook; a run's code input is instead the modules its notebook imports, followed through
every ``rag_lib`` import (inside functions and ``if TYPE_CHECKING:`` too), every string that is a module name
(the lazy registries load backends by ``"rag_lib.module:Class"``), the ``__init__`` of each package on the way (it runs
on import), and every module of a package that imports all its modules itself (``pkgutil.iter_modules``:
the mechanism catalog). Settings files (``*.yaml`` under ``rag_lib/``) count for every run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from rag_lib.core.config import PACKAGE_DIR

_NAME = re.compile(r"(rag_lib(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?::[A-Za-z_][A-Za-z0-9_.]*)?")
_DISCOVERS_ITS_MODULES = "pkgutil.iter_modules(__path__)"


def module_file(name: str) -> Path | None:
    """The file of module ``name`` (``rag_lib.a.b``): ``a/b.py`` or ``a/b/__init__.py``; ``None`` when it is
    not a module (an attribute such as ``rag_lib.a.SomeClass``)."""
    path = PACKAGE_DIR.joinpath(*name.split(".")[1:])
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def named_modules(path: Path) -> frozenset[str]:
    """Every ``rag_lib`` module ``path`` imports or names as a string (attributes are resolved later)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (named := _NAME.fullmatch(node.value)):
            names.add(named.group(1))  # a lazy registry's "rag_lib.module:Class" (prose that names a module is not)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rag_lib"):
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.startswith("rag_lib"))
    return frozenset(names)


def closure(roots: Iterable[Path]) -> list[Path]:
    """The ``rag_lib`` files reachable from the files ``roots`` (a notebook's source), sorted."""
    seen: set[Path] = set()
    todo = list(roots)
    while todo:
        path = todo.pop()
        for name in named_modules(path):
            parts = name.split(".")
            # the module and every package above it: importing a.b.c runs a/__init__ and a/b/__init__
            found = [module_file(".".join(parts[:i])) for i in range(1, len(parts) + 1)]
            for module in (f for f in found if f is not None and f not in seen):
                seen.add(module)
                todo.append(module)
                if module.name == "__init__.py" and _DISCOVERS_ITS_MODULES in module.read_text(encoding="utf-8"):
                    discovered = sorted(set(module.parent.glob("*.py")) - seen)
                    seen.update(discovered)
                    todo += discovered
    return sorted(seen)


def settings_files() -> list[Path]:
    """The settings and prompt files under ``rag_lib/`` (read at run time by whichever module needs them)."""
    return sorted(p for p in PACKAGE_DIR.rglob("*") if p.is_file() and p.suffix in {".yaml", ".yml"})
