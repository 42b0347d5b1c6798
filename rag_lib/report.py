"""Experiment outputs: ``results/<experiment>/results.json``, ``report.md`` and the results index.

A report's figures are read from the ``results.json`` that was just written, never typed in:
:func:`write_experiment` writes the JSON first, reads it back, and renders the report template
against what it read. Placeholders are ``{dotted.path}`` into the JSON, with an optional format
spec (``{coverage.q7:.2f}``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_lib import __version__
from rag_lib.config import results_dir
from rag_lib.io import write_json, write_text

if TYPE_CHECKING:
    from rag_lib.reproduce import NotebookRun

_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.\-]+)(?::([^{}]+))?\}")


def lookup(data: Any, dotted: str) -> Any:
    """``lookup({"a": {"b": [5]}}, "a.b.0") == 5``; a missing key raises ``KeyError`` naming the path."""
    node = data
    for part in dotted.split("."):
        if isinstance(node, list) and part.lstrip("-").isdigit():
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(f"report placeholder {{{dotted}}}: {part!r} is not in results.json")
    return node


def render(template: str, data: dict[str, Any]) -> str:
    """Fill ``{dotted.path[:format]}`` placeholders from ``data``."""

    def fill(match: re.Match[str]) -> str:
        value = lookup(data, match.group(1))
        return format(value, match.group(2)) if match.group(2) else str(value)

    return _PLACEHOLDER.sub(fill, template)


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A GitHub-flavoured Markdown table of ``rows``."""
    if not rows:
        return "_(no rows)_"
    columns = list(columns or rows[0].keys())
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def experiment_dir(name: str) -> Path:
    return results_dir() / name


_IMAGE_LINK = re.compile(r"!\[([^\]]*)\]\(([^)\s/]+\.png)\)")


def report_markdown(name: str) -> str:
    """An experiment's ``report.md`` for display in its notebook, with each figure it links (a PNG
    beside the report) inlined as a data URI: the notebook's HTML then shows every figure once, in
    place, wherever the HTML is opened."""
    import base64

    folder = experiment_dir(name)

    def inline(match: re.Match[str]) -> str:
        path = folder / match.group(2)
        if not path.is_file():
            return match.group(0)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f'<img alt="{match.group(1)}" src="data:image/png;base64,{data}"/>'

    return _IMAGE_LINK.sub(inline, (folder / "report.md").read_text(encoding="utf-8"))


def write_experiment(name: str, results: dict[str, Any], report_template: str) -> dict[str, Any]:
    """Write ``results.json`` then ``report.md`` rendered from the JSON as read back from disk."""
    out = experiment_dir(name)
    payload = {"experiment": name, "rag_lib_version": __version__, **results}
    write_json(out / "results.json", payload)
    stored = json.loads((out / "results.json").read_text(encoding="utf-8"))
    write_text(out / "report.md", render(report_template, stored).rstrip() + "\n")
    return stored


def write_headline(table: str) -> Path:
    """``results/08_summary/headline.md``: the table the results index and the README show."""
    target = experiment_dir("08_summary") / "headline.md"
    write_text(target, table.rstrip() + "\n")
    return target


def update_readme_headline(readme: Path, root: Path) -> bool:
    """Replace the README's generated headline block with ``08_summary/headline.md``, if both exist."""
    headline = root / "08_summary" / "headline.md"
    start, end = "<!-- headline:start -->", "<!-- headline:end -->"
    if not headline.is_file() or not readme.is_file():
        return False
    text = readme.read_text(encoding="utf-8")
    if start not in text or end not in text:
        return False
    before, rest = text.split(start, 1)
    after = rest.split(end, 1)[1]
    body = (
        "Q7 (question in Chinese): first rank of each of its four gold pieces, per configuration, mechanism and\n"
        "recovery suggestion; **bold** = inside the Top-10. From `results/08_summary/results.json`.\n\n"
        + headline.read_text(encoding="utf-8").strip()
    )
    write_text(readme, f"{before}{start}\n{body}\n{end}{after}")
    return True


def write_results_index(root: Path, runs: Sequence[NotebookRun], failures: dict[str, str]) -> Path:
    """``results/README.md``: every report, executed notebook and figure, and the headline table."""
    lines = [
        "# Results",
        "",
        "Generated by `make reproduce`; do not edit by hand. Each experiment folder holds `results.json`",
        "(the figures), `report.md` (read from that JSON) and its plots; executed notebooks are in",
        "`notebooks/` with an HTML rendering beside each.",
        "",
    ]
    headline = root / "08_summary" / "headline.md"
    if headline.is_file():
        lines += ["## Headline", "", headline.read_text(encoding="utf-8").strip(), ""]
    lines += ["## Notebooks", "", "| run | notebook | HTML | status |", "| --- | --- | --- | --- |"]
    for run in runs:
        if run.name in failures:
            cause = " ".join(line.strip() for line in failures[run.name].splitlines() if line.strip())
            status = f"FAILED: {cause[:200]}"
        else:
            status = "ok" if (root / "notebooks" / f"{run.name}.ipynb").is_file() else "not run yet"
        params = f" `{json.dumps(run.parameters, sort_keys=True)}`" if run.parameters else ""
        lines.append(
            f"| {run.name}{params} | [ipynb](notebooks/{run.name}.ipynb) | [html](notebooks/{run.name}.html) "
            f"| {_cell(status)} |"
        )
    lines += ["", "## Experiments", ""]
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and (p / "results.json").is_file()):
        figures = sorted(f.name for f in folder.iterdir() if f.suffix in {".png", ".svg"})
        links = ", ".join(f"[{f}]({folder.name}/{f})" for f in figures) or "no figures"
        lines.append(f"- **{folder.name}**: [report]({folder.name}/report.md), "
                     f"[results.json]({folder.name}/results.json); figures: {links}")
    lines.append("")
    target = root / "README.md"
    write_text(target, "\n".join(lines))
    return target
