"""Metrics across configurations: grouped bars, curves over an integer x (e.g. coverage@k over k), and the
forest of every comparison's difference with its Holm-adjusted interval."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from rag_lib.presentation.figures.style import LANGUAGE_COLOURS, STYLE, colour, legend_outside, save


def metric_bars(table: Mapping[str, Mapping[str, float]], metric: str, path: Path, title: str = "") -> Path:
    """Grouped bars: one group per row of ``table`` (e.g. retriever), one bar per column (e.g. language)."""
    rows = list(table)
    columns = sorted({c for r in rows for c in table[r]})
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        width = 0.8 / max(len(columns), 1)
        for j, column in enumerate(columns):
            xs = [i + j * width for i in range(len(rows))]
            ax.bar(xs, [table[r].get(column, 0.0) for r in rows], width, label=column, color=colour(column, j))
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))], rows, rotation=20, ha="right")
        ax.set_ylabel(metric)
        ax.set_ylim(0, 1)
        ax.set_title(title)
        legend_outside(ax)
        return save(fig, path)


def curves(series: Mapping[str, Mapping[int, float]], xlabel: str, ylabel: str, path: Path, title: str = "") -> Path:
    """Line plot of several named series over integer x (e.g. coverage@k over k)."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for i, (name, points) in enumerate(series.items()):
            xs = sorted(points)
            ax.plot(xs, [points[x] for x in xs], marker="o", markersize=3, label=name, color=colour(name, i))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # k is a count: no 2.5 or 7.5 ticks
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        legend_outside(ax)
        return save(fig, path)


def forest(comparisons: Sequence[Mapping[str, Any]], metric: str, path: Path, title: str = "") -> Path:
    """Every comparison of ``metric`` (variant × language) as its difference with the Holm-adjusted
    interval, one row each, languages side by side; rows whose interval excludes 0 are drawn solid."""
    rows = [c for c in comparisons if c["metric"] == metric]
    variants = list(dict.fromkeys(c["variant"] for c in rows))
    found = {c["language"] for c in rows}
    languages = [lang for lang in LANGUAGE_COLOURS if lang in found] + sorted(found - set(LANGUAGE_COLOURS))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 0.3 * len(variants) + 1.3))
        for j, lang in enumerate(languages):
            for c in (c for c in rows if c["language"] == lang):
                y = variants.index(c["variant"]) + (j - (len(languages) - 1) / 2) * 0.25
                lo, hi = c["adjusted"] if c.get("adjusted") else (c["diff"], c["diff"])
                clear = lo > 0 or hi < 0
                ax.plot([lo, hi], [y, y], color=colour(lang, j), linewidth=1.6 if clear else 0.9,
                        alpha=1.0 if clear else 0.55)
                ax.scatter(c["diff"], y, color=colour(lang, j), s=18, zorder=3, marker="o" if clear else "|")
            ax.plot([], [], color=colour(lang, j), marker="o", markersize=4, label=lang)  # the legend's entry
        ax.axvline(0, color="#333333", linewidth=0.8)
        ax.set_yticks(range(len(variants)), variants)
        ax.invert_yaxis()
        ax.set_xlabel(f"{metric}: variant − baseline (Holm-adjusted interval; solid = excludes 0)")
        ax.grid(axis="y", color="#eeeeee", linewidth=0.6)
        ax.set_title(title)
        legend_outside(ax)
        return save(fig, path)
