"""The run configuration: every ``config.yaml`` setting is read by the code, overrides are checked."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from rag_lib.core.config import NOTEBOOKS_DIR, PACKAGE_DIR, RunConfig, settings


def keys_read(source: str) -> tuple[set[str], set[str]]:
    """The string constants ``source`` indexes with (``x["key"]``, ``x.get("key")``), and the dotted
    constants it names (``FromSettings("retrieval.rrf_k")``)."""
    indexed: set[str] = set()
    dotted: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            indexed.add(str(node.slice.value))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant)):
            indexed.add(str(node.args[0].value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value:
            dotted.add(node.value)
    return indexed, dotted


def unread_settings(config: Mapping[str, Any], sources: Iterable[str]) -> list[str]:
    """``section.key`` of every setting no source reads: not named dotted, and no one file indexes
    both its section and its key. (Deeper levels are data read whole, e.g. a chunking strategy.)"""
    parsed = [keys_read(source) for source in sources]
    unread = []
    for section, body in config.items():
        names = [f"{section}.{key}" for key in body] if isinstance(body, Mapping) else [section]
        for name in names:
            parts = set(name.split("."))
            if not any(name in dotted or parts <= indexed for indexed, dotted in parsed):
                unread.append(name)
    return unread


def workbook_sources() -> list[str]:
    files = [*PACKAGE_DIR.rglob("*.py"), *NOTEBOOKS_DIR.glob("*.py")]
    return [path.read_text(encoding="utf-8") for path in files]


def test_unread_settings_finds_a_key_nobody_reads() -> None:
    config = {"retrieval": {"rrf_k": 60, "top_k": 5, "forgotten": 1}, "ann": {"builds": 5}, "flag": True}
    sources = ['k = settings()["retrieval"]["top_k"]',
               'def f(s):\n    return s.get("retrieval")["rrf_k"]',
               'FromSettings("ann.builds")']
    assert unread_settings(config, sources) == ["retrieval.forgotten", "flag"]
    # a section and a key indexed in different files do not make a read
    assert unread_settings({"a": {"b": 1}}, ['x["a"]', 'y["b"]']) == ["a.b"]


def test_every_workbook_setting_is_read() -> None:
    assert unread_settings(settings(), workbook_sources()) == []


def test_every_run_config_field_is_used() -> None:
    """A field of RunConfig that no code reads is a setting in name only."""
    attributes = {node.attr for source in workbook_sources() for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Attribute)}
    assert [f.name for f in fields(RunConfig) if f.name not in attributes] == []


def test_run_config_reads_the_workbook_and_takes_overrides() -> None:
    config = RunConfig.from_settings()
    assert config.k == settings()["retrieval"]["top_k"]
    assert config.embedder == settings()["embedding"]["default"]
    assert config.temperature == settings()["generation"]["temperature"]
    changed = RunConfig.from_settings(k=10, rrf_k=None)
    assert (changed.k, changed.rrf_k) == (10, config.rrf_k)
    with pytest.raises(ValueError, match=r"unknown run setting\(s\) \['top_k'\]"):
        RunConfig.from_settings(top_k=10)


def test_library_has_no_literal_top_k_default() -> None:
    """``k`` and ``rrf_k`` are required or default to ``None`` (the workbench's ``config``, from ``config.yaml``),
    never a literal."""
    offenders = []
    for path in PACKAGE_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args.args + node.args.kwonlyargs
                defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + list(node.args.defaults)
                defaults += list(node.args.kw_defaults)
                offenders += [f"{path.relative_to(PACKAGE_DIR)}:{node.lineno} {node.name}({arg.arg}=…)"
                              for arg, default in zip(args, defaults, strict=True)
                              if arg.arg in ("k", "evidence_k", "rrf_k") and isinstance(default, ast.Constant)
                              and default.value is not None]
    assert offenders == []


def test_no_notebook_fixes_top_k_in_its_parameters() -> None:
    """A notebook's ``k`` parameter defaults to ``None`` (``retrieval.top_k`` of config.yaml): a literal
    there would override the workbook silently, so one edit of top_k would not reach every notebook."""
    from rag_lib.results.runs import NotebookRun
    from rag_lib.runner.notebooks import notebook_parameters

    offenders = []
    for path in sorted(NOTEBOOKS_DIR.glob("*.py")):
        declared = notebook_parameters(NotebookRun(path.stem, path.stem))  # name -> the literal it is set to
        offenders += [f"{path.name}: {name} = {declared[name]}" for name in ("k", "rrf_k")
                      if declared.get(name, "None") != "None"]
    assert offenders == []


def test_notebook_sources_exist() -> None:
    assert any(Path(NOTEBOOKS_DIR).glob("*.py"))
