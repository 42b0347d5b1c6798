"""The corpus and its size: chunk lengths, metrics over corpus size with their bands, and the shares of the
Top-5 slots gold does not fill as the corpus grows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from rag_lib.presentation.figures.style import OTHER_COLOURS, STYLE, colour, finish_panels, language_panels, save
from rag_lib.results.typed_json import encode


def chunk_length_histogram(lengths: Sequence[int], limit: int, path: Path) -> Path:
    """Histogram of chunk lengths with the size limit marked."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        ax.hist(lengths, bins=40, color="#4c72b0")
        ax.axvline(limit, color="#c44e52", linestyle="--", label=f"limit {limit} chars")
        ax.set_xlabel("chunk length (characters)")
        ax.set_ylabel("chunks")
        ax.legend()
        return save(fig, path)


def size_curves(curve: Sequence[Mapping[str, float]], metrics: Sequence[str], path: Path, title: str = "") -> Path:
    """One panel per language: each metric over corpus size (pages), with its ``<metric> lo/hi`` band."""
    languages = list(dict.fromkeys(str(row["language"]) for row in curve))
    styles = ("-", "--", ":")
    with plt.rc_context(STYLE):
        fig, axes = language_panels(len(languages))
        for ax, lang in zip(axes[0], languages, strict=True):
            rows = sorted((r for r in curve if r["language"] == lang), key=lambda r: r["pages"])
            xs = [r["pages"] for r in rows]
            for metric, style in zip(metrics, styles, strict=False):
                ax.plot(xs, [r[metric] for r in rows], style, marker="o", markersize=3, color=colour(lang, 0),
                        label=metric)
                ax.fill_between(xs, [r[f"{metric} lo"] for r in rows], [r[f"{metric} hi"] for r in rows],
                                color=colour(lang, 0), alpha=0.12, linewidth=0)
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [str(x) for x in xs])
            ax.set_title(lang, loc="left")
            ax.set_xlabel("pages in the corpus")
            low = min(r[f"{m} lo"] for r in curve for m in metrics)  # same scale in every panel
            ax.set_ylim(max(0.0, low - 0.05), 1.02)
        return finish_panels(fig, axes, "mean over answerable questions", title, path, title_y=1.08)


def stacked_shares(rows: Sequence[Mapping[str, Any] | Any], parts: Sequence[str], path: Path, x: str = "pages",
                   overlay: str | None = None, title: str = "") -> Path:
    """One panel per language: for each ``x`` (corpus size), the shares of ``parts`` as stacked bars;
    ``overlay`` (a share that cuts across the parts) is drawn as a line with markers on top. Typed rows
    (dataclasses) are read under their JSON keys, the names ``parts`` and ``overlay`` give."""
    rows = [encode(r) if is_dataclass(r) else r for r in rows]
    languages = list(dict.fromkeys(str(row["language"]) for row in rows))
    with plt.rc_context(STYLE):
        fig, axes = language_panels(len(languages))
        for ax, lang in zip(axes[0], languages, strict=True):
            mine = sorted((r for r in rows if r["language"] == lang), key=lambda r: r[x])
            positions = range(len(mine))
            bottom = [0.0] * len(mine)
            for i, part in enumerate(parts):
                heights = [float(r[part]) for r in mine]
                ax.bar(positions, heights, 0.7, bottom=bottom, color=OTHER_COLOURS[i % len(OTHER_COLOURS)],
                       label=part)
                bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
            if overlay:
                ax.plot(positions, [float(r[overlay]) for r in mine], color="#333333", marker="o", markersize=3,
                        label=overlay)
            ax.set_xticks(list(positions), [str(r[x]) for r in mine])
            ax.set_xlabel(f"{x} in the corpus")
            ax.set_title(lang, loc="left")
            ax.set_ylim(0, 1.02)
        return finish_panels(fig, axes, "share of the Top-5 slots gold does not fill", title, path, title_y=1.04)
