"""Where pieces rank: each configuration's first rank of Q7's pieces, the explorer's slope chart of rank
moves, and the share of questions whose worst piece is within each rank."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from rag_lib.presentation.figures.style import (
    OTHER_COLOURS,
    STYLE,
    finish_panels,
    language_panels,
    legend_outside,
    save,
)

# Okabe-Ito colours and distinct markers: the pieces stay apart for colour-blind readers and in grey.
PIECE_STYLES = {"C1": ("#E69F00", "o"), "C2": ("#56B4E9", "s"), "C3": ("#009E73", "^"), "C4": ("#CC79A7", "D")}


def piece_ranks(rows: Sequence[Mapping[str, Any]], path: Path, cuts: Sequence[int] = (5, 10), title: str = "") -> Path:
    """One line per configuration (``row``), each piece's first rank as a marker on a log axis, with the
    Top-k cuts drawn; a piece that is not ranked sits in a column at the right marked "not ranked". A row with no
    piece at all (a failed variant, a recovery source without a usable suggestion) has nothing to rank: it says so
    in words and draws no marker, so that it never reads as a measurement."""
    ranked = [r[p] for r in rows for p in PIECE_STYLES if isinstance(r.get(p), int)]
    far = 2 ** (max(ranked, default=10).bit_length() + 1)  # the "not ranked" column, right of every rank
    first = next((y for y, row in enumerate(rows) if any(p in row for p in PIECE_STYLES)), 0)  # labels the legend
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 0.28 * len(rows) + 1.2))
        for y, row in enumerate(rows):
            if not any(piece in row for piece in PIECE_STYLES):
                ax.text(1, y, "no ranking (see the row's name)", fontsize=8, color="#666666", va="center")
                continue
            for i, (piece, (colour_, marker)) in enumerate(PIECE_STYLES.items()):
                rank = row.get(piece)
                offset = (i - 1.5) * 0.14  # pieces at the same rank sit side by side, not on top of each other
                ax.scatter(rank if isinstance(rank, int) else far, y + offset, color=colour_, marker=marker, s=24,
                           label=piece if y == first else None, zorder=3, alpha=0.9)
        for cut, style in zip(cuts, (":", "--"), strict=False):
            ax.axvline(cut + 0.5, color="#333333", linewidth=0.9, linestyle=style, label=f"Top-{cut} cut")
        ax.set_xscale("log", base=2)
        ticks = [1, 2, 5, 10, 20, 50, 100, 200, 500]
        ticks = [t for t in ticks if t < far]
        ax.set_xticks([*ticks, far], [*map(str, ticks), "not\nranked"])
        # The plot font has no CJK glyphs: a label holding a question in Chinese keeps the part before it.
        ax.set_yticks(range(len(rows)), [str(r["row"]) if str(r["row"]).isascii() else str(r["row"]).split(":")[0]
                                         for r in rows])
        ax.invert_yaxis()  # first row on top, as in the table
        ax.set_xlabel("first rank of the piece (log scale; 1 = top)")
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_title(title)
        legend_outside(ax)
        return save(fig, path)


def piece_ranks_of(rows: Sequence[Any], label: Sequence[str], path: Path, cuts: Sequence[int] = (5, 10),
                   title: str = "") -> Path:
    """:func:`piece_ranks` for stored rank rows (mappings or typed rows with ``C1``… fields): each row named by
    its ``label`` fields, joined by " · " (e.g. variant · phrasing · language)."""
    def field(row: Any, name: str) -> Any:
        return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)

    def has(row: Any, name: str) -> bool:
        return name in row if isinstance(row, Mapping) else hasattr(row, name)

    named = [{"row": " · ".join(str(field(r, key)) for key in label),
              **{p: field(r, p) for p in PIECE_STYLES if has(r, p)}} for r in rows]
    return piece_ranks(named, path, cuts, title)


def rank_moves_figure(moves: Sequence[Mapping[str, Any]], left: str, right: str, k: int) -> plt.Figure:
    """A slope chart for the explorer: each item's rank under ``left`` and under ``right`` (log scale,
    1 on top), joined by a line, with the top-``k`` cut drawn; an item not ranked sits at the bottom.
    Returned, not saved (the explorer displays it live)."""
    ranked = [m[side] for m in moves for side in ("first", "second") if isinstance(m[side], int)]
    floor = 2 ** (max(ranked, default=k).bit_length() + 1)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(4.8, 3.6))
        for i, move in enumerate(moves):
            ys = [move[side] if isinstance(move[side], int) else floor for side in ("first", "second")]
            style = PIECE_STYLES.get(str(move["item"]), (OTHER_COLOURS[i % len(OTHER_COLOURS)], "o"))
            ax.plot([0, 1], ys, color=style[0], marker=style[1], label=str(move["item"]))
        ax.axhline(k + 0.5, color="#333333", linewidth=0.8, linestyle="--", label=f"top-{k} cut")
        ax.set_yscale("log", base=2)
        ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500) if t < floor]
        ax.set_yticks([*ticks, floor], [*map(str, ticks), "not ranked"])
        ax.invert_yaxis()
        ax.set_xticks([0, 1], [left, right])
        ax.set_xlim(-0.2, 1.2)
        ax.set_ylabel("first rank (log scale; 1 = top)")
        ax.set_title("how the ranks move")
        legend_outside(ax)
        plt.close(fig)  # displayed by the caller; closing keeps pyplot from showing it a second time
        return fig


def figure_png(fig: plt.Figure) -> bytes:
    """``fig`` as PNG bytes, for a live view that must not depend on the notebook's matplotlib backend."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return buffer.getvalue()


def worst_rank_cdf(worst_ranks: Mapping[str, Mapping[str, int | None]], path: Path, cuts: Sequence[int] = (5, 10),
                   title: str = "") -> Path:
    """One panel per language: for each configuration, the share of questions whose *worst* piece is
    within rank x (every piece in the Top-x: hit@x as x grows), on a log x axis with the cuts drawn.
    ``worst_ranks`` maps "<configuration> [<lang>]" to question id -> rank (``None``: never complete)."""
    by_lang: dict[str, dict[str, list[int | None]]] = {}
    for label, ranks in worst_ranks.items():
        configuration, _, lang = label.rpartition(" [")
        by_lang.setdefault(lang.rstrip("]"), {})[configuration] = list(ranks.values())
    top = max((r for ranks in worst_ranks.values() for r in ranks.values() if r is not None), default=10)
    xs = sorted({x for x in range(1, top + 1)})  # every rank: the curve steps where a question completes
    with plt.rc_context(STYLE):
        fig, axes = language_panels(len(by_lang))
        for ax, (lang, configurations) in zip(axes[0], by_lang.items(), strict=True):
            for i, (configuration, ranks) in enumerate(configurations.items()):
                shares = [sum(r is not None and r <= x for r in ranks) / len(ranks) for x in xs]
                ax.step(xs, shares, where="post", color=OTHER_COLOURS[i % len(OTHER_COLOURS)], label=configuration)
            for cut, style in zip(cuts, (":", "--"), strict=False):
                ax.axvline(cut, color="#333333", linewidth=0.8, linestyle=style)
            ax.set_xscale("log")
            ticks = [x for x in (1, 5, 10, 50, 100, 500) if x <= top]
            ax.set_xticks(ticks, [str(x) for x in ticks])
            ax.set_title(lang, loc="left")
            ax.set_xlabel("rank x (log scale); dotted: Top-5, dashed: Top-10")
            ax.set_ylim(0, 1.02)
        return finish_panels(fig, axes, "questions with every piece in the Top-x", title, path, title_y=1.04)
