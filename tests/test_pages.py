"""What a rendered notebook shows: the page helpers on small inputs, then a scan of every executed
notebook in ``results/notebooks/`` as a reviewer reads it (findings last, each figure once, no table
twice, no ``None``, raw dicts, reprs or counts written with decimals), and of every rendered HTML page (no table
wider than the page, no snake_case header, no "-0.000" or p-value printed as 0.000, the figures each page tells
its story with)."""

from __future__ import annotations

import base64
import html
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
    assert note.data == "3 of 25 rows shown; every row and column: [rows.csv](../03_x/rows.csv)."
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


# --- the rendered HTML pages, as a reviewer's browser shows them ------------------------------------------------

PAGES = [(run.name, RESULTS_DIR / "notebooks" / f"{run.name}.html") for run in planned_runs()]
PAGE_PX = 1400
# JupyterLab's tables: a 13 px font and 0.5 em of padding each side of a cell; headers are bold. A browser wraps a
# cell at its spaces and after a hyphen inside a word, so a table is at least as wide as its columns' longest words.
# Against headless Chromium on this repository's pages (1,400 px window) this estimate was within about 10% of every
# table that overflowed, and above it for most.
CHAR_PX, HEADER_FACTOR, CELL_PADDING_PX = 7.2, 1.08, 13
BREAKS = re.compile(r"\s+|(?<=[a-z]-)(?=[a-z])")  # where a line may break: spaces, and after a hyphen between letters
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
NEGATIVE_ZERO = re.compile(r"(?<![\w.])-0\.0+(?![\d])")
HEX_ID = re.compile(r"\b(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b")  # a sha256, or a call key's leading digits
P_AS_ZERO = re.compile(r"\bp(?:_Holm| \(Holm\)| \(exact\))?\s*[=:]?\s*0(?:\.0+)?(?![\d.])")
# The least number of figures each page shows: the story told in pictures (issue 47).
MIN_FIGURES = {"05_q7_diagnosis": 1, "07_recovery_loop": 2, "10_local_llm": 4,
               **{run.name: 2 for run in planned_runs() if run.name.startswith("06_")}}


def _cell_text(cell: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", cell))


def narrowest_width(table: str) -> float:
    """The least width (px) a browser can give an HTML table: its columns' longest unbreakable words."""
    widths: dict[int, float] = {}
    for row in re.findall(r"<tr.*?</tr>", table, flags=re.S):
        for i, (tag, cell) in enumerate(re.findall(r"<(t[hd])[^>]*>(.*?)</t[hd]>", row, flags=re.S)):
            longest = max((len(word) for word in BREAKS.split(_cell_text(cell))), default=0)
            px = longest * CHAR_PX * (HEADER_FACTOR if tag == "th" else 1.0) + CELL_PADDING_PX
            widths[i] = max(widths.get(i, 0.0), px)
    return sum(widths.values())


def page_body(path: Path) -> str:
    if not path.is_file():
        pytest.skip(f"{path.name} not rendered yet (make reproduce)")
    text = path.read_text(encoding="utf-8")
    return text[text.find("<body"):]


def test_the_width_estimate_sees_a_wide_table() -> None:
    narrow = "<table><tr><th>n</th><th>answer rate</th></tr><tr><td>3</td><td>0.5</td></tr></table>"
    wide = "<table><tr>" + "".join(f"<th>in_top5_after_first_{i}</th>" for i in range(12)) + "</tr></table>"
    assert narrowest_width(narrow) < 200 < PAGE_PX < narrowest_width(wide)
    assert NEGATIVE_ZERO.search("diff -0.000 [")
    assert not NEGATIVE_ZERO.search("-0.0004") and not NEGATIVE_ZERO.search("x-0.0")
    assert P_AS_ZERO.search("p_Holm 0.000") and P_AS_ZERO.search("p_Holm 0; ") and P_AS_ZERO.search("p_Holm 0 |")
    assert not P_AS_ZERO.search("p_Holm 0.0004") and not P_AS_ZERO.search("p < 0.001")


@pytest.mark.parametrize(("name", "path"), PAGES, ids=[name for name, _ in PAGES])
def test_rendered_page_fits_and_reads_as_prose(name: str, path: Path) -> None:
    body = page_body(path)
    tables = re.findall(r"<table.*?</table>", body, flags=re.S)
    wide = [(i, round(narrowest_width(t))) for i, t in enumerate(tables) if narrowest_width(t) > PAGE_PX]
    assert not wide, f"{name}: tables wider than {PAGE_PX} px (table index, estimated px): {wide}"
    headers = {_cell_text(h).strip() for t in tables for h in re.findall(r"<th[^>]*>(.*?)</th>", t, flags=re.S)}
    snake = sorted(h for h in headers if SNAKE_CASE.fullmatch(h))
    assert not snake, f"{name}: snake_case headers (give them a reader's header in presentation.tables): {snake}"
    shown = _cell_text(re.sub(r'<div class="jp-InputArea.*?</div>\s*</div>', "", body, flags=re.S))
    assert not NEGATIVE_ZERO.findall(shown), f"{name} prints -0.000"
    assert not P_AS_ZERO.findall(shown), f"{name} prints a p-value as 0.000 (p_text gives '< 0.001')"
    # Hashes and call keys belong to the folded provenance appendix, not to a results table.
    outside = re.sub(r"<details>.*?</details>", "", body, flags=re.S)
    cells = [_cell_text(c) for t in re.findall(r"<table.*?</table>", outside, flags=re.S)
             for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", t, flags=re.S)]
    hashes = [h for c in cells for h in HEX_ID.findall(c)]
    assert not hashes, f"{name} shows hashes or call keys in a table: {hashes[:3]}"
    figures = body.count('src="data:image/png')
    assert figures >= MIN_FIGURES.get(name, 0), f"{name} shows {figures} figures, fewer than {MIN_FIGURES[name]}"


def test_the_readme_names_the_runs_make_test_leaves_out() -> None:
    from rag_lib.core.config import REPO_ROOT
    from rag_lib.presentation.readme import NOT_RETESTED

    ignored = re.findall(r"--ignore=results/notebooks/(\w+)\.ipynb", (REPO_ROOT / "Makefile").read_text())
    assert sorted(ignored) == sorted(NOT_RETESTED)


def test_ten_keeps_its_findings_to_the_few_that_matter() -> None:
    from rag_lib.experiments.llm_eval.findings import MAX_FINDINGS

    path = RESULTS_DIR / "10_local_llm" / "results.json"
    if not path.is_file():
        pytest.skip("results/10_local_llm not written yet (make reproduce)")
    import json

    stored = json.loads(path.read_text(encoding="utf-8"))
    assert 0 < len(stored["findings"]) <= MAX_FINDINGS
    assert stored["findings"][0].startswith("Out of sample"), "the out-of-sample figure comes first"
    assert sum(f.startswith("Caveats:") for f in stored["findings"]) == 1, "the caveats are said once, in one line"
    assert len(stored["statements"]) > len(stored["findings"])  # the rest is kept, folded in the appendix


# --- one number per fact: a figure several pages give must read the same on each -----------------------------------

# A named figure, found by a pattern on every rendered page and both READMEs: ``key`` (optional) separates figures
# that share a wording (a denominator, a language), ``value`` (or one of its alternatives ``value2``…) must agree.
SHARED_FIGURES = {
    "Q7 rows bringing C1–C3 into the Top-10 (per row count)": re.compile(
        r"(?P<value>\d+) of (?P<key>\d+) mechanism and recovery rows (?:bring|put) (?:all of )?C1–C3 (?:into|inside)"),
    "Q7 baseline ranks of C1–C4 (zh)": re.compile(
        r"baseline ranks (?:its four pieces )?C1–C4 at (?P<value>\d+ / \d+ / \d+ / \d+)"),
    "pages in the wide batch": re.compile(
        r"wide batch \((?P<value>[\d,]+) pages|(?P<value2>[\d,]+) pages of the wide batch"
        r"|wide batch's (?P<value3>[\d,]+)\b"),
    "mechanism × language rows ranked": re.compile(r"of (?P<value>\d+) mechanism × language rows"),
    "unanswerable questions declined by the gate, leave-one-out (zh)": re.compile(
        r"declines (?P<value>\d+/\d+)(?: = [\d.]+ \[[\d., ]+\])? unanswerable zh questions"),
}


def shown_texts() -> dict[str, str]:
    from rag_lib.core.config import REPO_ROOT

    texts = {path.name: _cell_text(page_body(path)) for _, path in PAGES if path.is_file()}
    for readme in (REPO_ROOT / "README.md", RESULTS_DIR / "README.md"):
        if readme.is_file():
            texts[str(readme.relative_to(REPO_ROOT))] = readme.read_text(encoding="utf-8")
    return texts


def figure_values(texts: dict[str, str]) -> dict[tuple[str, str], dict[str, set[str]]]:
    """(figure, key) → value → the pages that give it."""
    found: dict[tuple[str, str], dict[str, set[str]]] = {}
    for page_name, text in texts.items():
        text = " ".join(text.split())
        for name, pattern in SHARED_FIGURES.items():
            for m in pattern.finditer(text):
                groups = m.groupdict()
                value = next(v for k, v in sorted(groups.items()) if k.startswith("value") and v)
                found.setdefault((name, groups.get("key") or ""), {}).setdefault(value, set()).add(page_name)
    return found


def test_a_disagreement_between_pages_is_caught() -> None:
    texts = {"a": "the wide batch (249 pages) and", "b": "over 250 pages of the wide batch"}
    assert figure_values(texts)[("pages in the wide batch", "")] == {"249": {"a"}, "250": {"b"}}


def test_every_shared_figure_reads_the_same_on_every_page() -> None:
    found = figure_values(shown_texts())
    assert ("Q7 baseline ranks of C1–C4 (zh)", "") in found  # the patterns still find what the pages say
    differ = {figure: values for figure, values in found.items() if len(values) > 1}
    assert not differ, f"pages disagree: {differ}"


# --- one language per message ----------------------------------------------------------------------------------------

_CJK = re.compile(r"[\u4e00-\u9fff]")
_ENGLISH_PHRASE = re.compile(r"[A-Za-z][a-z]+(?:[ ,'-]+[A-Za-z][a-z]+){3,}")
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|`[^`]*`|'[^']*'|「[^」]*」")
# What the workbook itself writes (never the model's reply, a question or a quote of the evidence).
MESSAGE_KEYS = {"error", "warnings", "notes", "reason", "why", "problem", "decline", "notice", "status_note",
                "language_problem", "reply_problem", "summary"}


def mixed_language(text: str) -> bool:
    """A sentence in Chinese with an English phrase in it (or the other way round); quoted text is data."""
    bare = _QUOTED.sub("", text)
    return bool(_CJK.search(bare) and _ENGLISH_PHRASE.search(bare))


def test_mixed_language_is_seen_and_quotes_are_not() -> None:
    assert mixed_language("提供的证据中未包含回答该问题所需的信息（any passage scoring above the relevance floor）。")
    assert not mixed_language('"useful for storing configuration": "配置" is in almost every answer')
    assert not mixed_language("提供的证据中未包含回答该问题所需的全部信息。")


def test_no_stored_message_mixes_two_languages() -> None:
    import json

    def walk(node: object, key: str = "") -> list[str]:
        if isinstance(node, dict):
            return [hit for k, v in node.items() for hit in walk(v, str(k))]
        if isinstance(node, list):
            return [hit for v in node for hit in walk(v, key)]
        return [node] if isinstance(node, str) and key in MESSAGE_KEYS and mixed_language(node) else []

    paths = sorted(RESULTS_DIR.glob("*/results.json"))
    if not paths:
        pytest.skip("no results yet (make reproduce)")
    hits = {p.parent.name: found for p in paths if (found := walk(json.loads(p.read_text(encoding="utf-8"))))}
    assert not hits, f"messages in two languages: {hits}"
