"""The one table formatter, on small hand-made rows with exact answers."""

from __future__ import annotations

import math

from rag_lib.presentation.tables import MISSING, Table, flatten, format_value, settings, table


def test_values_keep_their_kind() -> None:
    assert format_value(19) == "19"  # a count stays an integer (pandas would show 19.0000)
    assert format_value(0.5) == "0.500"
    assert format_value(0.5, decimals=1) == "0.5"
    assert format_value(0.0345, signed=True) == "+0.035"
    assert format_value(-2, signed=True) == "-2"
    assert format_value(None) == MISSING
    assert format_value(math.nan) == MISSING
    assert format_value(False) == "no"
    assert format_value([0.1, -0.2]) == "0.100, -0.200"
    assert format_value({"a": 1}) == "a: 1"


def test_table_has_no_index_and_aligns_numbers_right() -> None:
    t = Table([{"piece": "C1", "rank": 6}, {"piece": "C2", "rank": 12}])
    assert t.to_string().splitlines() == ["piece  rank", "C1        6", "C2       12"]
    assert t.to_markdown().splitlines()[1] == "| --- | ---: |"
    assert ">piece</th>" in t.to_html() and "index" not in t.to_html()


def test_a_missing_value_does_not_turn_counts_into_floats() -> None:
    t = Table([{"tp": 19}, {"tp": None}])
    assert [row[0] for row in t.cells()] == ["19", MISSING]


def test_mapping_rows_get_a_label_column() -> None:
    t = table({"zh": {"hit@5": 0.5}, "en": {"hit@5": 0.25}}, label="language")
    assert t.columns == ["language", "hit@5"]
    assert t.cells() == [["zh", "0.500"], ["en", "0.250"]]


def test_settings_flatten_nested_provenance() -> None:
    assert flatten({"embedder": {"model": "e5", "dim": 384}, "k": 5, "empty": {}}) == {
        "embedder.model": "e5", "embedder.dim": 384, "k": 5, "empty": {}}
    assert settings({"a": {"b": 1}}).cells() == [["a.b", "1"]]


def test_an_empty_table_says_so() -> None:
    assert Table([])._repr_html_() == "<p><em>(no rows)</em></p>"
    assert Table([]).to_markdown() == "_(no rows)_"


def test_a_rule_marks_the_cut_and_a_width_shortens_text_columns() -> None:
    rows = [{"rank": r, "page": "workers/wrangler/configuration"} for r in (1, 2, 3)]
    lines = Table(rows, rule_after=2, rule_label="top-2 cut").to_string(width=20).splitlines()
    assert lines[0] == "rank  page" and lines[3].strip("─") == " top-2 cut "
    assert lines[1] == "   1  workers/wrang…" and all(len(line) <= 20 for line in lines)
    assert 'border-bottom' in Table(rows, rule_after=2).to_html().split("</tr>")[2]
