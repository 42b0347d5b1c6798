"""Plots, saved as byte-reproducible PNG files (no timestamps, fixed size and DPI)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from rag_lib.io import atomic_open
from rag_lib.results.gate_rows import SweepRow
from rag_lib.results.q9a import BestScores, OperatingPoint
from rag_lib.results.typed_json import encode

if TYPE_CHECKING:
    from rag_lib.results.ann import HnswSetting, RecallRow
from rag_lib.results.topk import CurvePoint

_STYLE = {"figure.figsize": (7.0, 3.6), "figure.dpi": 100, "font.size": 9, "svg.hashsalt": "ragbench"}
# One colour per language in every figure, so a reader never has to re-read a legend.
LANGUAGE_COLOURS = {"zh": "#c44e52", "en": "#4c72b0"}
_OTHER_COLOURS = ("#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#D55E00", "#0072B2")  # Okabe-Ito: colour-blind safe


def colour(name: str, index: int) -> str:
    """The language's colour when ``name`` is a language, else the next colour of a fixed cycle."""
    return LANGUAGE_COLOURS.get(name, _OTHER_COLOURS[index % len(_OTHER_COLOURS)])


def _legend_outside(ax: plt.Axes) -> None:
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
        _legend_outside(axes[0][-1])
    if title:
        fig.suptitle(title, y=title_y)
    return save(fig, path)


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
            ax.bar(xs, [table[r].get(column, 0.0) for r in rows], width, label=column, color=colour(column, j))
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))], rows, rotation=20, ha="right")
        ax.set_ylabel(metric)
        ax.set_ylim(0, 1)
        ax.set_title(title)
        _legend_outside(ax)
        return save(fig, path)


def curves(series: Mapping[str, Mapping[int, float]], xlabel: str, ylabel: str, path: Path, title: str = "") -> Path:
    """Line plot of several named series over integer x (e.g. coverage@k over k)."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots()
        for i, (name, points) in enumerate(series.items()):
            xs = sorted(points)
            ax.plot(xs, [points[x] for x in xs], marker="o", markersize=3, label=name, color=colour(name, i))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # k is a count: no 2.5 or 7.5 ticks
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        _legend_outside(ax)
        return save(fig, path)


def threshold_sweep(sweeps: Mapping[str, Sequence[SweepRow]], chosen: Mapping[str, float | None],
                    path: Path, x: str = "floor", title: str = "") -> Path:
    """One panel per language: refusal correctness and false-refusal rate over a gate threshold (the sweep
    row's field ``x``), with the chosen value marked."""
    lines = {"refusal_correctness": ("unanswerable questions declined", "-"),
             "false_refusal_rate": ("answerable questions with complete evidence declined", "--")}
    with plt.rc_context(_STYLE):
        fig, axes = language_panels(len(sweeps))
        for ax, (lang, rows) in zip(axes[0], sweeps.items(), strict=True):
            xs = [getattr(row, x) for row in rows]
            for key, (label, style) in lines.items():
                ax.plot(xs, [getattr(row, key) for row in rows], style, color=colour(lang, 0), label=label)
            picked = chosen.get(lang)
            if picked is not None:
                ax.axvline(picked, color="#333333", linewidth=0.8, linestyle=":", label=f"chosen {x}")
                ax.annotate(f"chosen {picked:.3f}", (picked, 1.02), xycoords=("data", "axes fraction"),
                            ha="center", fontsize=8)
            ax.set_title(lang, loc="left")
            ax.set_xlabel(f"{x} (best retrieval score below which the gate declines)")
            ax.set_ylim(0, 1.05)
        return finish_panels(fig, axes, "share of questions", title, path, title_y=1.08)


def size_curves(curve: Sequence[Mapping[str, float]], metrics: Sequence[str], path: Path, title: str = "") -> Path:
    """One panel per language: each metric over corpus size (pages), with its ``<metric> lo/hi`` band."""
    languages = list(dict.fromkeys(str(row["language"]) for row in curve))
    styles = ("-", "--", ":")
    with plt.rc_context(_STYLE):
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


def _finish_rates(fig: plt.Figure, ax: plt.Axes, xlabel: str, ylabel: str, title: str, path: Path) -> Path:
    """Both axes are rates in [0, 1]: limits, labels, title, the legend outside, saved."""
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _legend_outside(ax)
    return save(fig, path)


def accuracy_coverage(curves: Mapping[str, Sequence[Mapping[str, Any]]], path: Path, title: str = "") -> Path:
    """Selective accuracy against coverage, one line per series, each point's Wilson interval as a band."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots()
        for i, (name, points) in enumerate(curves.items()):
            xs = [p["coverage"] for p in points]
            ax.plot(xs, [p["selective_accuracy"] for p in points], marker="o", markersize=3, label=name,
                    color=colour(name, i))
            ax.fill_between(xs, [p["ci95"][0] for p in points], [p["ci95"][1] for p in points], alpha=0.15,
                            color=colour(name, i), linewidth=0)
        return _finish_rates(fig, ax, "coverage (share of questions answered)",
                             "selective accuracy (right among answered)", title, path)


def reliability(blocks: Mapping[str, Sequence[Mapping[str, Any]]], path: Path, title: str = "") -> Path:
    """Observed rate against mean predicted probability per bin, one series per language: the diagonal is
    perfect calibration; bars are Wilson 95% intervals, marker area grows with the bin's questions."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1, label="perfectly calibrated")
        for i, (name, bins) in enumerate(blocks.items()):
            xs, ys = [b["mean_proba"] for b in bins], [b["observed"] for b in bins]
            errors = [[y - b["ci95"][0] for y, b in zip(ys, bins, strict=True)],
                      [b["ci95"][1] - y for y, b in zip(ys, bins, strict=True)]]
            ax.errorbar(xs, ys, yerr=errors, fmt="none", ecolor=colour(name, i), alpha=0.5, capsize=2)
            ax.scatter(xs, ys, s=[12 + 6 * b["n"] for b in bins], color=colour(name, i), label=name, zorder=3)
        return _finish_rates(fig, ax, "mean predicted probability of being right (bin)",
                             "observed share right (bin)", title, path)


# Okabe-Ito colours and distinct markers: the pieces stay apart for colour-blind readers and in grey.
PIECE_STYLES = {"C1": ("#E69F00", "o"), "C2": ("#56B4E9", "s"), "C3": ("#009E73", "^"), "C4": ("#CC79A7", "D")}


def piece_ranks(rows: Sequence[Mapping[str, Any]], path: Path, cuts: Sequence[int] = (5, 10), title: str = "") -> Path:
    """One line per configuration (``row``), each piece's first rank as a marker on a log axis, with the
    Top-k cuts drawn; a piece that is not ranked sits in a column at the right marked "not ranked"."""
    ranked = [r[p] for r in rows for p in PIECE_STYLES if isinstance(r.get(p), int)]
    far = 2 ** (max(ranked, default=10).bit_length() + 1)  # the "not ranked" column, right of every rank
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 0.28 * len(rows) + 1.2))
        for y, row in enumerate(rows):
            for i, (piece, (colour_, marker)) in enumerate(PIECE_STYLES.items()):
                rank = row.get(piece)
                offset = (i - 1.5) * 0.14  # pieces at the same rank sit side by side, not on top of each other
                ax.scatter(rank if isinstance(rank, int) else far, y + offset, color=colour_, marker=marker, s=24,
                           label=piece if y == 0 else None, zorder=3, alpha=0.9)
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
        _legend_outside(ax)
        return save(fig, path)


def forest(comparisons: Sequence[Mapping[str, Any]], metric: str, path: Path, title: str = "") -> Path:
    """Every comparison of ``metric`` (variant × language) as its difference with the Holm-adjusted
    interval, one row each, languages side by side; rows whose interval excludes 0 are drawn solid."""
    rows = [c for c in comparisons if c["metric"] == metric]
    variants = list(dict.fromkeys(c["variant"] for c in rows))
    found = {c["language"] for c in rows}
    languages = [lang for lang in LANGUAGE_COLOURS if lang in found] + sorted(found - set(LANGUAGE_COLOURS))
    with plt.rc_context(_STYLE):
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
        _legend_outside(ax)
        return save(fig, path)


def tradeoff(curve: Mapping[str, Mapping[str, CurvePoint]], path: Path, marked: Sequence[int] = (1, 5, 10, 20),
             title: str = "") -> Path:
    """Coverage against the tokens sent, one line per language over k (``curve[lang][str(k)]`` as 04 stores
    it), with some k marked on the line."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots()
        for i, (lang, by_k) in enumerate(curve.items()):
            ks = sorted(by_k, key=int)
            xs, ys = [by_k[k].tokens for k in ks], [by_k[k].coverage for k in ks]
            ax.plot(xs, ys, marker="o", markersize=2.5, color=colour(lang, i), label=lang)
            for k in ks:
                if int(k) in marked:
                    ax.annotate(f"k={k}", (by_k[k].tokens, by_k[k].coverage), textcoords="offset points",
                                xytext=(4, -10), fontsize=7, color=colour(lang, i))
        ax.set_xlabel("≈ tokens of evidence sent (mean per question)")
        ax.set_ylabel("mean piece coverage")
        ax.set_ylim(top=1.02)
        ax.set_title(title)
        _legend_outside(ax)
        return save(fig, path)


def recall_by_ef(rows: Sequence[RecallRow], settings: Sequence[HnswSetting], path: Path, title: str = "") -> Path:
    """HNSW recall@10 of the exact neighbours against ef_search, one line per batch and language, with the
    lowest-to-highest build as a band (``rows`` as 13 stores them, ``settings`` in the same order)."""
    ef = {s.label: s.ef_search for s in settings}
    series: dict[tuple[str, str], list[RecallRow]] = {}
    for row in rows:
        series.setdefault((row.batch, row.language), []).append(row)
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots()
        for i, ((batch, lang), points) in enumerate(series.items()):
            points = sorted(points, key=lambda r: ef[r.setting])
            xs = [ef[r.setting] for r in points]
            style = "-" if i < 2 else "--"
            ax.plot(xs, [r.recall for r in points], style, marker="o", markersize=3,
                    color=colour(lang, i), label=f"{batch} ({lang})")
            ax.fill_between(xs, [r.lowest_build for r in points], [r.highest_build for r in points],
                            color=colour(lang, i), alpha=0.12, linewidth=0)
        ax.set_xscale("log")
        ticks = sorted(set(ef.values()))
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xlabel("ef_search (m and ef_construction grow with it; see the table)")
        ax.set_ylabel("recall@10 of the exact neighbours")
        ax.set_ylim(top=1.01)
        ax.set_title(title)
        _legend_outside(ax)
        return save(fig, path)


# Okabe-Ito blue and orange: the two groups stay apart for colour-blind readers.
GROUP_COLOURS = {"answerable": "#0072B2", "unanswerable": "#E69F00"}


def score_distributions(scores: Mapping[str, BestScores], floors: Mapping[str, float | None],
                        path: Path, title: str = "") -> Path:
    """One panel per language: the best retrieval score of each answerable and each unanswerable question
    as overlaid histograms, with the chosen floor marked."""
    with plt.rc_context(_STYLE):
        fig, axes = language_panels(len(scores))
        every = [x for best in scores.values() for x in (*best.answerable, *best.unanswerable)]
        bins = [min(every) + i * (max(every) - min(every)) / 24 for i in range(25)] if every else 10
        for ax, (lang, best) in zip(axes[0], scores.items(), strict=True):
            for group, values in (("answerable", best.answerable), ("unanswerable", best.unanswerable)):
                ax.hist(values, bins=bins, histtype="stepfilled", alpha=0.45, color=GROUP_COLOURS.get(group),
                        edgecolor=GROUP_COLOURS.get(group), label=f"{group} ({len(values)})")
            floor = floors.get(lang)
            if floor is not None:
                ax.axvline(floor, color="#333333", linewidth=0.9, linestyle=":", label=f"chosen floor {floor:.3f}")
            ax.set_title(lang, loc="left")
            ax.set_xlabel("best retrieval score of the question (cosine)")
            ax.legend(loc="upper left", frameon=False, fontsize=7)
        return finish_panels(fig, axes, "questions", title, path, legend=False)  # each panel has its own legend


def rank_moves_figure(moves: Sequence[Mapping[str, Any]], left: str, right: str, k: int) -> plt.Figure:
    """A slope chart for the explorer: each item's rank under ``left`` and under ``right`` (log scale,
    1 on top), joined by a line, with the top-``k`` cut drawn; an item not ranked sits at the bottom.
    Returned, not saved (the explorer displays it live)."""
    ranked = [m[side] for m in moves for side in ("first", "second") if isinstance(m[side], int)]
    floor = 2 ** (max(ranked, default=k).bit_length() + 1)
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(4.8, 3.6))
        for i, move in enumerate(moves):
            ys = [move[side] if isinstance(move[side], int) else floor for side in ("first", "second")]
            style = PIECE_STYLES.get(str(move["item"]), (_OTHER_COLOURS[i % len(_OTHER_COLOURS)], "o"))
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
        _legend_outside(ax)
        plt.close(fig)  # displayed by the caller; closing keeps pyplot from showing it a second time
        return fig


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
    with plt.rc_context(_STYLE):
        fig, axes = language_panels(len(by_lang))
        for ax, (lang, configurations) in zip(axes[0], by_lang.items(), strict=True):
            for i, (configuration, ranks) in enumerate(configurations.items()):
                shares = [sum(r is not None and r <= x for r in ranks) / len(ranks) for x in xs]
                ax.step(xs, shares, where="post", color=_OTHER_COLOURS[i % len(_OTHER_COLOURS)], label=configuration)
            for cut, style in zip(cuts, (":", "--"), strict=False):
                ax.axvline(cut, color="#333333", linewidth=0.8, linestyle=style)
            ax.set_xscale("log")
            ticks = [x for x in (1, 5, 10, 50, 100, 500) if x <= top]
            ax.set_xticks(ticks, [str(x) for x in ticks])
            ax.set_title(lang, loc="left")
            ax.set_xlabel("rank x (log scale); dotted: Top-5, dashed: Top-10")
            ax.set_ylim(0, 1.02)
        return finish_panels(fig, axes, "questions with every piece in the Top-x", title, path, title_y=1.04)


def stacked_shares(rows: Sequence[Mapping[str, Any] | Any], parts: Sequence[str], path: Path, x: str = "pages",
                   overlay: str | None = None, title: str = "") -> Path:
    """One panel per language: for each ``x`` (corpus size), the shares of ``parts`` as stacked bars;
    ``overlay`` (a share that cuts across the parts) is drawn as a line with markers on top. Typed rows
    (dataclasses) are read under their JSON keys, the names ``parts`` and ``overlay`` give."""
    rows = [encode(r) if is_dataclass(r) else r for r in rows]
    languages = list(dict.fromkeys(str(row["language"]) for row in rows))
    with plt.rc_context(_STYLE):
        fig, axes = language_panels(len(languages))
        for ax, lang in zip(axes[0], languages, strict=True):
            mine = sorted((r for r in rows if r["language"] == lang), key=lambda r: r[x])
            positions = range(len(mine))
            bottom = [0.0] * len(mine)
            for i, part in enumerate(parts):
                heights = [float(r[part]) for r in mine]
                ax.bar(positions, heights, 0.7, bottom=bottom, color=_OTHER_COLOURS[i % len(_OTHER_COLOURS)],
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


def strategy_tradeoff(rows: Sequence[Mapping[str, Any]], x: str, y: str, path: Path, title: str = "") -> Path:
    """One point per strategy and language: ``y`` (what the evidence holds) against ``x`` (what it
    costs), each labelled with its strategy."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots()
        for i, lang in enumerate(dict.fromkeys(str(r["language"]) for r in rows)):
            mine = [r for r in rows if r["language"] == lang]
            ax.scatter([r[x] for r in mine], [r[y] for r in mine], color=colour(lang, i), label=lang, zorder=3)
            for r in mine:
                ax.annotate(str(r["strategy"]), (r[x], r[y]), textcoords="offset points", fontsize=7,
                            xytext=(4, 3 if i % 2 == 0 else -9), color=colour(lang, i))  # languages' labels apart
        ax.set_xlabel(f"{x} (≈ tokens of the evidence)")
        ax.set_ylabel(y)
        ax.set_title(title)
        _legend_outside(ax)
        return save(fig, path)


def gate_roc(sweeps: Mapping[str, Sequence[SweepRow]], points: Sequence[OperatingPoint], path: Path,
             title: str = "") -> Path:
    """One panel per language: the floor gate's trade-off over every floor (unanswerable questions declined
    against answerable ones with complete evidence declined: an ROC curve, "insufficient" positive), and
    each other gate's single operating point (``points``)."""
    markers = ("s", "^", "D", "v", "P", "X")
    with plt.rc_context(_STYLE):
        fig, axes = language_panels(len(sweeps), width=3.4, extra=2.6, height=3.3)
        for ax, (lang, rows) in zip(axes[0], sweeps.items(), strict=True):
            ordered = sorted(rows, key=lambda r: (r.false_refusal_rate, r.refusal_correctness))
            ax.plot([0.0, *(r.false_refusal_rate for r in ordered), 1.0],
                    [0.0, *(r.refusal_correctness for r in ordered), 1.0],
                    color=colour(lang, 0), label="floor (every threshold)")
            ax.plot([0, 1], [0, 1], color="#bbbbbb", linewidth=0.7, linestyle=":")  # a gate that guesses
            for i, point in enumerate(p for p in points if p.lang == lang):
                ax.scatter(point.false_refusal_rate, point.refusal_correctness, zorder=3, s=30,
                           marker=markers[i % len(markers)], color=_OTHER_COLOURS[i % len(_OTHER_COLOURS)],
                           label=point.gate)
            ax.set_title(lang, loc="left")
            ax.set_xlabel("answerable (complete evidence) declined")
            ax.set_xlim(-0.02, 1.02)
            ax.set_ylim(-0.02, 1.02)
        return finish_panels(fig, axes, "unanswerable declined", title, path, title_y=1.04)
