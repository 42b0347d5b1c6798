"""The figures' shared look: the style, one colour per language (and a colour-blind-safe cycle for anything
else), the legend outside, panels side by side per language, and saving as byte-reproducible PNG files (no
timestamps, fixed size and DPI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from rag_lib.core.io import atomic_open

STYLE = {"figure.figsize": (7.0, 3.6), "figure.dpi": 100, "font.size": 9, "svg.hashsalt": "ragbench"}
# One colour per language in every figure, so a reader never has to re-read a legend.
LANGUAGE_COLOURS = {"zh": "#c44e52", "en": "#4c72b0"}
OTHER_COLOURS = ("#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#D55E00", "#0072B2")  # Okabe-Ito: colour-blind safe


def colour(name: str, index: int) -> str:
    """The language's colour when ``name`` is a language, else the next colour of a fixed cycle."""
    return LANGUAGE_COLOURS.get(name, OTHER_COLOURS[index % len(OTHER_COLOURS)])


def legend_outside(ax: plt.Axes) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)


def save(fig: plt.Figure, path: Path) -> Path:
    """Save ``fig`` atomically as PNG without the metadata that would differ between runs."""
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
    return path


def language_panels(count: int, width: float = 3.6, extra: float = 2.4, height: float = 3.2) -> tuple[plt.Figure, Any]:
    """One panel per language side by side, sharing the y axis (``axes[0]`` holds them)."""
    return plt.subplots(1, count, sharey=True, figsize=(width * count + extra, height), squeeze=False)


def finish_panels(fig: plt.Figure, axes: Any, ylabel: str, title: str, path: Path, title_y: float = 1.04,
                  legend: bool = True) -> Path:
    """The y label on the first panel, the legend beside the last, the title above all, saved."""
    axes[0][0].set_ylabel(ylabel)
    if legend:
        legend_outside(axes[0][-1])
    if title:
        fig.suptitle(title, y=title_y)
    return save(fig, path)
