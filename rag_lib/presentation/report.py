"""Experiment outputs: ``results/<experiment>/results.json`` and ``report.md`` (the READMEs: :mod:`.readme`).

A report's figures are read from the ``results.json`` that was just written, never typed in:
:func:`write_experiment` writes the JSON first, reads it back as the experiment's typed result, and hands it, with
the Findings generated from it, to the experiment's report function (:mod:`rag_lib.presentation.reports`; the
workbooks' in :mod:`rag_lib.presentation`). :func:`prose` and :func:`markdown_table` are how a report shows a value
and stored rows; :func:`lookup` reads a dotted path (``make check``'s figures).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_lib import __version__
from rag_lib.core.config import RESULTS_DIR, results_dir
from rag_lib.core.io import write_json, write_text
from rag_lib.presentation.tables import table

if TYPE_CHECKING:
    from rag_lib.results.store import ExperimentResult


_PATH_PART = re.compile(r"\[[^\]]*\]|[^.\[]+")


def path_parts(dotted: str) -> list[str]:
    """``"rows[model=b.v1.5].hit"`` -> ``["rows", "[model=b.v1.5]", "hit"]``: a bracketed selector stays whole."""
    return _PATH_PART.findall(dotted)


def lookup(data: Any, dotted: str) -> Any:
    """Follow a dotted path into results: ``lookup({"a": {"b": [5]}}, "a.b.0") == 5``.

    A part in brackets selects the one row of a list whose fields match, so a path names a condition
    instead of a list position: ``summary_rows[configuration=dense:e5,language=zh].hit@5``. A missing
    key, or a selector that matches no row or several, raises ``KeyError`` naming the path.
    """
    node = data
    for part in path_parts(dotted):
        if part.startswith("[") and isinstance(node, list):
            node = _select_row(node, part[1:-1], dotted)
        elif isinstance(node, list) and part.lstrip("-").isdigit():
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(f"{dotted}: {part!r} is not in results.json")
    return node


def _select_row(rows: list[Any], selector: str, dotted: str) -> Any:
    """The one row of ``rows`` whose fields equal ``selector``'s ``field=value`` pairs (values as text)."""
    wanted = dict(pair.split("=", 1) for pair in selector.split(",") if "=" in pair)
    if not wanted or len(wanted) != len(selector.split(",")):
        raise KeyError(f"{dotted}: selector [{selector}] must be field=value pairs separated by commas")
    matches = [row for row in rows if isinstance(row, dict)
               and all(k in row and str(row[k]) == v for k, v in wanted.items())]
    if len(matches) != 1:
        raise KeyError(f"{dotted}: [{selector}] matches {len(matches)} rows, not exactly one")
    return matches[0]


def prose(value: Any) -> str:
    """A value as a reader of a report expects it: yes / no, a dash for nothing, lists joined by commas
    (``none`` when empty); numbers and text unchanged."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(prose(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {prose(v)}" for k, v in value.items()) if value else "none"
    return str(value)


def markdown_table(rows: Sequence[Mapping[str, Any] | Any] | Mapping[str, Any], columns: Sequence[str] | None = None,
                   *, label: str = "", order: Sequence[str] | None = None,
                   decimals: int | dict[str, int] = 3) -> str:
    """A GitHub-flavoured Markdown table of ``rows`` (dicts or typed rows), or of a mapping of row name → row
    whose names fill a first column headed ``label``, in ``order`` when given; see
    :func:`rag_lib.presentation.tables.table`."""
    return table(rows, columns, label=label, order=order, decimals=decimals).to_markdown()


def rank_span(ranks: Sequence[int | None]) -> str:
    """Ranks of one piece over repeated runs (seeds, index builds): the rank when they agree, else
    "min–max (median m)"; runs that did not rank it are counted ("–" when none did)."""
    shown = [r for r in ranks if r is not None]
    if not shown:
        return "–"
    if len(shown) < len(ranks):
        span = str(min(shown)) if min(shown) == max(shown) else f"{min(shown)}–{max(shown)}"
        return f"{span} ({len(ranks) - len(shown)} of {len(ranks)} unranked)"
    lo, hi = min(shown), max(shown)
    return str(lo) if lo == hi else f"{lo}–{hi} (median {statistics.median(shown):g})"


def experiment_dir(name: str) -> Path:
    return results_dir() / name


# Every report ends with a link to the terms it uses (C1–C4, hit@k, coverage, layers).
GLOSSARY_LINK = "Terms (C1–C4, hit@k, coverage, layers, gates): [glossary](../README.md#glossary)."


# A report function: the typed result as read back from results.json, and the Findings computed from it → report.md.
ReportFunction = Callable[[Any, Sequence[str]], str]


def write_experiment(name: str, results: ExperimentResult, report_markdown: ReportFunction,
                     findings: Callable[[Any], list[str]] | None = None,
                     statements: Callable[[Any], list[str]] | None = None) -> dict[str, Any]:
    """Write ``results.json``, then ``report.md`` written by ``report_markdown`` from the result as read back.

    ``findings`` turns the stored result into sentences; they are computed from what was read back (so every
    number in them is in ``results.json``; the typed result is rebuilt from it with ``from_json``), stored there as
    ``findings`` and handed to ``report_markdown`` with the result. ``statements``: where the Findings keep to the
    few that matter, every other measured sentence, computed the same way and stored as ``statements`` (the page
    folds them into its appendix).
    """
    out = experiment_dir(name)
    write_json(out / "results.json", {"experiment": name, "rag_lib_version": __version__, **results.to_json()})
    stored = json.loads((out / "results.json").read_text(encoding="utf-8"))
    read_back = type(results).from_json(stored, name)
    if findings is not None or statements is not None:
        if findings is not None:
            stored["findings"] = findings(read_back)
            stored["findings_text"] = bullets(stored["findings"])
        if statements is not None:
            stored["statements"] = statements(read_back)
        write_json(out / "results.json", stored)
    # a workbook's report sits one folder deeper (results/<workbook>/<run>/), below the glossary's README
    deeper = out.parent.resolve() != RESULTS_DIR.resolve() and out.resolve().is_relative_to(RESULTS_DIR.resolve())
    link = GLOSSARY_LINK.replace("](../", "](../../") if deeper else GLOSSARY_LINK
    write_text(out / "report.md", f"{report_markdown(read_back, stored.get('findings', [])).rstrip()}\n\n{link}\n")
    return stored


def bullets(lines: Sequence[str]) -> str:
    """A Markdown bullet list (or a note that there is nothing to list)."""
    return "\n".join(f"- {line}" for line in lines) if lines else "_(none)_"


def write_headline(table: str, run: str) -> Path:
    """``results/08_summary/headline.md``: the table the results index and the README show, rendered from 08's
    stored rows (:func:`rag_lib.presentation.side_by_side.side_by_side_table`)."""
    target = experiment_dir(run) / "headline.md"
    write_text(target, table.rstrip() + "\n")
    return target


def q7_pieces_lines() -> str:
    """Q7's gold pieces as a Markdown list (``- C1: …``), from the benchmark."""
    from rag_lib.benchmark import load_benchmark

    return "\n".join(f"- {piece.id}: {piece.what}" for piece in load_benchmark().by_casebook("Q7").gold)
