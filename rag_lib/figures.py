"""Plots, saved as byte-reproducible PNG files (no timestamps, fixed size and DPI)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from rag_lib.io import atomic_open

_STYLE = {"figure.figsize": (7.0, 3.6), "figure.dpi": 100, "font.size": 9, "svg.hashsalt": "ragbench"}


def save(fig: plt.Figure, path: Path) -> Path:
    """Save ``fig`` atomically as PNG without the metadata that would differ between runs."""
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
    return path


def chunk_length_histogram(lengths: Sequence[int], limit: int, path: Path) -> Path:
    """Histogram of chunk lengths with the size limit marked."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots()
        ax.hist(lengths, bins=40, color="#4c72b0")
        ax.axvline(limit, color="#c44e52", linestyle="--", label=f"limit {limit} chars")
        ax.set_xlabel("chunk length (characters)")
        ax.set_ylabel("chunks")
        ax.legend()
        return save(fig, path)


def metric_bars(table: Mapping[str, Mapping[str, float]], metric: str, path: Path, title: str = "") -> Path:
    """Grouped bars: one group per row of ``table`` (e.g. retriever), one bar per column (e.g. language)."""
    rows = list(table)
    columns = sorted({c for r in rows for c in table[r]})
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots()
        width = 0.8 / max(len(columns), 1)
        for j, column in enumerate(columns):
            xs = [i + j * width for i in range(len(rows))]
            ax.bar(xs, [table[r].get(column, 0.0) for r in rows], width, label=column)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))], rows, rotation=20, ha="right")
        ax.set_ylabel(metric)
        ax.set_ylim(0, 1)
        ax.set_title(title)
        ax.legend()
        return save(fig, path)


def curves(series: Mapping[str, Mapping[int, float]], xlabel: str, ylabel: str, path: Path, title: str = "") -> Path:
    """Line plot of several named series over integer x (e.g. coverage@k over k)."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots()
        for name, points in series.items():
            xs = sorted(points)
            ax.plot(xs, [points[x] for x in xs], marker="o", markersize=3, label=name)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend()
        return save(fig, path)
