"""One formatter for every table a notebook or report shows.

Integers stay integers, floats get a fixed number of decimals, differences are signed, missing values
are a dash, booleans read "yes"/"no", there is no 0-based index, and a wide table scrolls inside its
cell instead of being cut at the right edge. Values are formatted from the raw JSON values (not from
a DataFrame, where one missing value turns a column of counts into floats).

>>> print(Table([{"metric": "hit@5", "n": 58, "diff": 0.0345, "ok": True}], signed=("diff",)).to_string())
metric   n    diff  ok
hit@5   58  +0.035  yes
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import is_dataclass
from typing import Any

from rag_lib.evaluation.stats import p_text, signed_text
from rag_lib.results.typed_json import encode

MISSING = "—"
# Headers a reader reads for the stored keys that need more than spaces for underscores (see :func:`header`).
HEADERS = {
    "tp": "TP", "fp": "FP", "fn": "FN", "tn": "TN", "mrr": "MRR", "ndcg@10": "nDCG@10", "youden_j": "Youden's J",
    "lang": "language", "p_exact": "p (exact)", "p_holm": "p (Holm)", "p_Holm": "p (Holm)", "s_per_call": "s per call",
    "tokens_per_s": "tokens/s", "n_warnings": "warnings", "n_questions": "questions", "n_suggestions": "suggestions",
    "n_with_suggestions": "with suggestions", "n_echoing_prompt": "echoing the prompt", "n_chunks": "chunks",
    "n_answerable": "answerable", "n_unanswerable": "unanswerable", "p90_tokens": "90th pct. tokens",
    "tokens per question": "input tokens per question",
    "q5_above_q9a": "Q5 above Q9a", "q5_rank_k": "Q5 rank k", "q9a_max": "Q9a max", "q9a_min": "Q9a min",
}
_P_COLUMN = re.compile(r"^p(_holm| \(holm\)|_value)?$", re.IGNORECASE)  # p, p_holm, p_Holm, p (Holm), p_value


def format_value(value: Any, decimals: int = 3, signed: bool = False) -> str:
    """One cell as text: see the module docstring for the rules."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:+d}" if signed else str(value)
    if isinstance(value, float):
        return signed_text(value, decimals) if signed else f"{value:.{decimals}f}"
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {format_value(v, decimals)}" for k, v in value.items()) or MISSING
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v, decimals) for v in value) or MISSING
    return str(value)


def header(column: str) -> str:
    """A column's header as a table shows it: :data:`HEADERS`, else the stored key with spaces for underscores,
    "Top-5" for ``top5`` and "95% CI" for a ``_ci`` suffix (``in_top5_after_first`` → "in Top-5 after first"). The
    glossary lists every rule, so a reader can find the results.json key of any header."""
    if column in HEADERS:
        return HEADERS[column]
    if column.endswith("_ci"):
        return f"{header(column[:-3])} (95% CI)"
    text = re.sub(r"(?:^|(?<=_))top_?(\d+|k)(?=_|$)", lambda m: f"Top-{m.group(1)}", column)
    return text.replace("_", " ")


def header_rules() -> list[str]:
    """The legend of :func:`header` for the glossary: the rules, then each renamed key."""
    return ["a header is its results.json key with spaces for underscores (`refusal_correctness` → "
            "\"refusal correctness\"), `top5` → \"Top-5\", a `_ci` suffix → \"(95% CI)\"; a value shown with its "
            "interval (\"0.333 [0.21, 0.47]\") is the key and its `_ci` key in one cell",
            *(f"\"{shown}\" is `{key}`" for key, shown in HEADERS.items())]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Table:
    """Rows (dicts) shown with one set of formatting rules.

    Parameters
    ----------
    rows
        One dict per row; a key missing from a row is a missing value.
    columns
        Column order; default: the keys in order of first appearance.
    decimals
        Decimals for every float, or a dict ``{column: decimals}`` (others get 3).
    signed
        Columns shown with a sign (differences).
    rule_after
        Draw a labelled line after this many rows (the top-k cut of a ranking), if given.
    rule_label
        The line's label.
    """

    def __init__(self, rows: Iterable[Mapping[str, Any] | Any], columns: Sequence[str] | None = None,
                 decimals: int | Mapping[str, int] = 3, signed: Sequence[str] = (),
                 rule_after: int | None = None, rule_label: str = "") -> None:
        # Typed rows (dataclasses) are shown under their JSON keys, as results.json stores them.
        self.rows = [encode(row) if is_dataclass(row) else dict(row) for row in rows]
        if columns is None:
            seen: dict[str, None] = {}
            for row in self.rows:
                seen.update(dict.fromkeys(row))
            columns = list(seen)
        # A value and its interval ("answer_correctness" and "answer_correctness_ci") share one cell.
        self.intervals = {c[:-3]: c for c in columns if c.endswith("_ci") and c[:-3] in columns}
        self.columns = [c for c in columns if c not in self.intervals.values()]
        self.decimals = decimals
        self.signed = set(signed)
        self.rule_after, self.rule_label = rule_after, rule_label

    def _decimals(self, column: str) -> int:
        return self.decimals.get(column, 3) if isinstance(self.decimals, Mapping) else self.decimals

    def cells(self) -> list[list[str]]:
        """Every row as formatted text, in column order; a p-value column shows "< 0.001" rather than 0.000, and a
        value with an interval column shows both ("0.333 [0.21, 0.47]")."""
        def cell(row: Mapping[str, Any], c: str) -> str:
            if _P_COLUMN.match(c) and _is_number(row.get(c)) and c not in self.signed:
                return p_text(row[c])
            text = format_value(row.get(c), self._decimals(c), c in self.signed)
            interval = row.get(self.intervals.get(c, ""))
            return f"{text} {format_value(interval)}" if interval not in (None, "", MISSING) else text

        return [[cell(row, c) for c in self.columns] for row in self.rows]

    def headers(self) -> list[str]:
        return [header(c) for c in self.columns]

    def _numeric(self) -> list[bool]:
        return [any(_is_number(row.get(c)) for row in self.rows)
                and all(_is_number(row.get(c)) or row.get(c) is None for row in self.rows) for c in self.columns]

    def to_string(self, width: int | None = None) -> str:
        """Plain text, columns aligned (numbers to the right); with ``width``, the widest text columns
        are shortened (ending in "…") until each line fits."""
        body, headers = self.cells(), self.headers()
        widths = [max([len(c), *(len(r[i]) for r in body)]) for i, c in enumerate(headers)]
        numeric = self._numeric()
        while width and sum(widths) + 2 * (len(widths) - 1) > width:  # shorten the widest text column by one
            text_columns = [i for i, n in enumerate(numeric) if not n and widths[i] > max(8, len(headers[i]))]
            if not text_columns:
                break
            widths[max(text_columns, key=lambda i: widths[i])] -= 1

        def fit(value: str, w: int) -> str:
            return value if len(value) <= w else value[: w - 1] + "…"

        def line(values: Sequence[str]) -> str:
            return "  ".join(fit(v, w).rjust(w) if n else fit(v, w).ljust(w)
                             for v, w, n in zip(values, widths, numeric, strict=True)).rstrip()

        lines = [line(headers), *(line(r) for r in body)]
        if self.rule_after is not None and 0 < self.rule_after < len(body):
            total = sum(widths) + 2 * (len(widths) - 1)
            label = f" {self.rule_label} " if self.rule_label else ""
            lines.insert(self.rule_after + 1, label.center(total, "─"))
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """A GitHub-flavoured Markdown table (numbers right-aligned)."""
        if not self.rows:
            return "_(no rows)_"
        align = ["---:" if n else "---" for n in self._numeric()]
        lines = ["| " + " | ".join(self.headers()) + " |", "| " + " | ".join(align) + " |"]
        lines += ["| " + " | ".join(v.replace("|", "\\|").replace("\n", " ") for v in r) + " |"
                  for r in self.cells()]
        return "\n".join(lines)

    def to_html(self) -> str:
        """An HTML table without an index, inside a block that scrolls when the table is wide."""
        numeric = self._numeric()
        head = "".join(f'<th style="text-align:{"right" if n else "left"}">{html.escape(c)}</th>'
                       for c, n in zip(self.headers(), numeric, strict=True))
        rule = ' style="border-bottom:2px solid #c44e52"'
        body = "".join(
            f"<tr{rule if i + 1 == self.rule_after else ''}>"
            + "".join(f'<td style="text-align:{"right" if n else "left"}">{html.escape(v)}</td>'
                      for v, n in zip(r, numeric, strict=True)) + "</tr>"
            for i, r in enumerate(self.cells()))
        return (f'<div style="overflow-x:auto"><table class="dataframe">'
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")

    def _repr_html_(self) -> str:
        return self.to_html() if self.rows else "<p><em>(no rows)</em></p>"

    def __repr__(self) -> str:
        return self.to_string() if self.rows else "(no rows)"


def table(data: Any, columns: Sequence[str] | None = None, *, label: str = "", value: str = "value",
          order: Sequence[str] | None = None, decimals: int | Mapping[str, int] = 3,
          signed: Sequence[str] = ()) -> Table:
    """A :class:`Table` from rows (a list of dicts or typed rows) or from a mapping of row name → dict or typed
    row (or → one value, headed ``value``), whose names become the first column (headed ``label``), in the
    mapping's order or in ``order`` (results.json sorts a mapping's keys; a stored list keeps the order)."""
    if isinstance(data, Mapping):
        if order is not None:
            if sorted(order) != sorted(data):
                raise KeyError(f"table: order {list(order)} does not name the rows {sorted(data)} once each")
            data = {name: data[name] for name in order}
        encoded = {name: encode(values) for name, values in data.items()}  # typed rows under their JSON keys
        rows = [{label: name, **(dict(values) if isinstance(values, Mapping) else {value: values})}
                for name, values in encoded.items()]
        columns = [label, *columns] if columns is not None else None
    else:
        rows = list(data)
    return Table(rows, columns, decimals=decimals, signed=signed)


def flatten(mapping: Mapping[str, Any] | Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}, "c": [1, 2]}`` → ``{"a.b": 1, "c": [1, 2]}``: nested settings as dotted keys. Typed
    values (dataclasses, such as a stored provenance) are read under their JSON keys, as results.json holds them."""
    out: dict[str, Any] = {}
    for key, value in encode(mapping).items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def settings(mapping: Mapping[str, Any] | Any) -> Table:
    """A provenance or configuration dict as a two-column table of dotted settings."""
    return Table([{"setting": k, "value": v} for k, v in flatten(mapping).items()], ["setting", "value"], decimals=4)


def pivot(rows: Iterable[Mapping[str, Any] | Any], index: Sequence[str], column: str, cell: str,
          keep: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Long rows (one measurement each) as a wide table: one row per ``index`` value, one column per value of
    ``column``, each cell ``cell`` formatted from its row (``"{value:.2f} ({numerator}/{denominator})"``; a
    ``None`` field makes the cell "–"); ``keep``: fields copied from the first row of each wide row."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        data = encode(row) if is_dataclass(row) else dict(row)
        key = tuple(data[f] for f in index)
        wide = out.setdefault(key, {**{f: data[f] for f in index}, **{f: data[f] for f in keep}})
        wide[str(data[column])] = "–" if any(v is None for v in data.values()) else cell.format(**data)
    return list(out.values())
