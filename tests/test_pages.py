"""What a rendered notebook shows: the page helpers on small inputs, then a scan of every executed
notebook in ``results/notebooks/`` as a reviewer reads it (findings last, each figure once, no table
twice, no ``None``, raw dicts, reprs or counts written with decimals)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import nbformat
import pytest

from rag_lib.core.config import RESULTS_DIR
from rag_lib.presentation import page
from rag_lib.results.runs import planned_runs

# --- the helpers -------------------------------------------------------------------------------------


def test_setup_summary_names_the_configuration_once_per_value() -> None:
    provenance = {"retriever": "dense", "embedder": {"model": "e5", "version": "0.3", "dimension": 384},
                  "reranker": {"model": "e5"}}
    assert page.setup_summary(provenance) == "dense · e5 · 0.3"
    assert page.setup_summary({"answer": "llama_cpp:b", "judge": "llama_cpp:b", "split": "llama_cpp:a"}) == (
        "llama_cpp:b · llama_cpp:a")  # no named setting: the distinct values


def test_setup_line_names_the_configuration_and_points_to_the_appendix() -> None:
    line = page.setup_line({"retriever": "dense", "embedder": {"model": "e5", "dimension": 384}}, {"k": 5})
    assert line.data == "**Setup:** dense · e5 · k = 5 — every setting is in the appendix below the Findings."


def test_markdown_tables_scroll_sideways() -> None:
    shown = page.markdown("a\n| x |\n| --- |\n| 1 |\nb").data
    assert shown == 'a\n<div style="overflow-x:auto">\n\n| x |\n| --- |\n| 1 |\n\n</div>\nb'


def test_closing_shows_findings_then_the_folded_appendix(monkeypatch) -> None:
    shown: list[object] = []
    monkeypatch.setattr(page, "display", lambda *objs: shown.extend(objs))
    page.closing({"findings_text": "- hit@5 rose."}, {"setup": {"retriever": "dense", "k": 5}})
    findings, appendix = shown
    assert findings.data.startswith("## Findings\n\n- hit@5 rose.") and page.GLOSSARY_PAGE in findings.data
    assert appendix.data.startswith("<details>") and "(2 settings" in appendix.data
    assert ">retriever<" in appendix.data and ">dense<" in appendix.data


def test_a_long_table_shows_examples_and_links_every_row(tmp_path, monkeypatch) -> None:
    shown: list[object] = []
    monkeypatch.setattr(page, "display", lambda *objs: shown.extend(objs))
    rows = [{"question": f"a{i:02d}", "score": i / 10, "ok": i % 2 == 0} for i in range(25)]
    page.long_table(rows, tmp_path / "03_x" / "rows.csv", examples=3)
    examples, note = shown
    assert [r["question"] for r in examples.rows] == ["a00", "a01", "a02"]
    assert note.data == "3 of 25 rows shown; every row: [rows.csv](../03_x/rows.csv)."
    lines = (tmp_path / "03_x" / "rows.csv").read_text().splitlines()
    assert lines[0] == "question,score,ok" and lines[1] == "a00,0.000,yes" and len(lines) == 26


# --- the executed notebooks --------------------------------------------------------------------------

EXECUTED = [(run.name, RESULTS_DIR / "notebooks" / f"{run.name}.ipynb") for run in planned_runs()
            if run.notebook != "09_explore"]  # the explorer is a tool, not an experiment page


def shown_text(output: nbformat.NotebookNode) -> str:
    """What the HTML page shows for one output: its HTML or Markdown, else its plain text (an image's
    text/plain is never shown)."""
    if output.output_type == "stream":
        return output.text
    data = output.get("data", {})
    for mime in ("text/html", "text/markdown"):
        if mime in data:
            return data[mime]
    if any(mime.startswith("image/") for mime in data):
        return ""
    return data.get("text/plain", "")


def page_outputs(path: Path) -> list[list[str]]:
    if not path.is_file():
        pytest.skip(f"{path.name} not executed yet (make reproduce)")
    nb = nbformat.read(path, as_version=4)
    return [[shown_text(o) for o in cell.outputs] for cell in nb.cells if cell.cell_type == "code"]


def tables_in(text: str) -> list[str]:
    """Every HTML and Markdown table of ``text``, whitespace-normalised."""
    tables = re.findall(r"<table.*?</table>", text, flags=re.S)
    tables += ["\n".join(block) for block in _markdown_blocks(text)]
    return [re.sub(r"\s+", " ", t) for t in tables]


def _markdown_blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in [*text.split("\n"), ""]:
        if line.startswith("|"):
            current.append(line.strip())
        elif current:
            blocks.append(current)
            current = []
    return [b for b in blocks if len(b) > 2]  # header, rule and at least one row


# Python's None, a raw dict, an object's repr.
SMELLS = {
    "None": re.compile(r"(?<![\w`'\"-])None(?![\w`'\"-])"),
    "raw dict": re.compile(r"\{'[^']+': "),
    "repr": re.compile(r"<[\w.]+ object at 0x|<IPython\.core\.display\.\w+ object>|\b\w*Path\('"),
}
_WHOLE_WITH_DECIMALS = re.compile(r"[+-]?\d+\.0+")


def table_columns(table: str) -> list[list[str]]:
    """The body cells of an HTML or Markdown table (as :func:`tables_in` gives it), column by column."""
    if table.startswith("<table"):
        rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr.*?</tr>", table)]
    else:
        lines = re.findall(r"\|.*?\|(?= \||$)", table)  # one match per "| … |" line
        rows = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines[2:]]
    rows = [r for r in rows if r]
    return [list(column) for column in zip(*rows, strict=False)] if rows else []


def counts_with_decimals(table: str) -> list[str]:
    """Cells of a column whose every value is a whole number written with decimals ("28.00"): a count
    printed as a float. A column of expectations that happen to be whole sits beside fractional ones,
    and a column of rates that are all 0 or 1 ("1.000") is a rate."""
    return [column[0] for column in table_columns(table)
            if len(column) > 1 and all(_WHOLE_WITH_DECIMALS.fullmatch(cell) for cell in column)
            and any(abs(float(cell)) > 1 for cell in column)]


def test_smells_catch_what_a_reviewer_would_catch() -> None:
    assert SMELLS["None"].search("in top None")
    assert not SMELLS["None"].search("`batch = None`")
    assert SMELLS["raw dict"].search("Models per task: {'answer': 'm'}")
    assert SMELLS["repr"].search("PosixPath('/work/results/04_q8_topk/tokens_at_k.png')")
    html = "<table><tr><th>n</th></tr><tr><td>28.00</td></tr><tr><td>32.00</td></tr></table>"
    assert counts_with_decimals(html) == ["28.00"]
    assert counts_with_decimals(html.replace("32.00", "30.17")) == []
    assert counts_with_decimals(html.replace("28.00", "1.000").replace("32.00", "0.000")) == []
    markdown = tables_in("| n | x |\n| ---: | ---: |\n| 28.00 | 1 |\n| 3.0 | 2 |")[0]
    assert counts_with_decimals(markdown) == ["28.00"]


@pytest.mark.parametrize(("name", "path"), EXECUTED, ids=[name for name, _ in EXECUTED])
def test_rendered_page_reads_cleanly(name: str, path: Path) -> None:
    cells = page_outputs(path)
    shown = [text for outputs in cells for text in outputs]
    # The Findings close the page.
    last = next(outputs for outputs in reversed(cells) if outputs)
    assert last[0].startswith("## Findings"), f"{name}: the last cell does not show the Findings"
    # No table twice.
    tables = [t for text in shown for t in tables_in(text)]
    twice = {t[:120] for t in tables if tables.count(t) > 1}
    assert not twice, f"{name} shows a table more than once: {sorted(twice)}"
    # Each figure the run saved is shown once, where it is made.
    nb_text = path.read_text(encoding="utf-8")
    for png in sorted((RESULTS_DIR / name).glob("*.png")):
        encoded = base64.b64encode(png.read_bytes()).decode("ascii")
        assert nb_text.count(encoded[:2000]) == 1, f"{name}: {png.name} is not shown exactly once"
    # Nothing a reviewer would flag.
    decimals = [cell for t in set(tables) for cell in counts_with_decimals(t)]
    assert not decimals, f"{name} shows counts with decimals: {decimals[:5]}"
    for smell, pattern in SMELLS.items():
        hits = [m.group(0) for text in shown for m in pattern.finditer(text)]
        assert not hits, f"{name} shows {smell}: {hits[:5]}"
