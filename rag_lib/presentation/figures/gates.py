"""Whether to answer: a gate's threshold swept, the gates' trade-off (ROC) with each one's operating point,
the best retrieval scores of answerable and unanswerable questions, selective accuracy against coverage, and
calibration (reliability)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from rag_lib.presentation.figures.style import (
    OTHER_COLOURS,
    STYLE,
    colour,
    finish_panels,
    language_panels,
    legend_outside,
    save,
)
from rag_lib.results.gate_rows import SweepRow
from rag_lib.results.q9a import BestScores, OperatingPoint


def threshold_sweep(sweeps: Mapping[str, Sequence[SweepRow]], chosen: Mapping[str, float | None],
                    path: Path, x: str = "floor", title: str = "") -> Path:
    """One panel per language: refusal correctness and false-refusal rate over a gate threshold (the sweep
    row's field ``x``), with the chosen value marked."""
    lines = {"refusal_correctness": ("unanswerable questions declined", "-"),
             "false_refusal_rate": ("answerable questions with complete evidence declined", "--")}
    with plt.rc_context(STYLE):
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


def _finish_rates(fig: plt.Figure, ax: plt.Axes, xlabel: str, ylabel: str, title: str, path: Path) -> Path:
    """Both axes are rates in [0, 1]: limits, labels, title, the legend outside, saved."""
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    legend_outside(ax)
    return save(fig, path)


def accuracy_coverage(curves: Mapping[str, Sequence[Mapping[str, Any]]], path: Path, title: str = "") -> Path:
    """Selective accuracy against coverage, one line per series, each point's Wilson interval as a band."""
    with plt.rc_context(STYLE):
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
    with plt.rc_context(STYLE):
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


# Okabe-Ito blue and orange: the two groups stay apart for colour-blind readers.
GROUP_COLOURS = {"answerable": "#0072B2", "unanswerable": "#E69F00"}


def score_distributions(scores: Mapping[str, BestScores], floors: Mapping[str, float | None],
                        path: Path, title: str = "", floor_label: str = "chosen floor",
                        other_floors: Mapping[str, float | None] | None = None,
                        other_label: str = "") -> Path:
    """One panel per language: the best retrieval score of each answerable and each unanswerable question
    as overlaid histograms, with the chosen floor marked (and, dashed, ``other_floors`` under ``other_label``)."""
    with plt.rc_context(STYLE):
        fig, axes = language_panels(len(scores))
        every = [x for best in scores.values() for x in (*best.answerable, *best.unanswerable)]
        bins = [min(every) + i * (max(every) - min(every)) / 24 for i in range(25)] if every else 10
        for ax, (lang, best) in zip(axes[0], scores.items(), strict=True):
            for group, values in (("answerable", best.answerable), ("unanswerable", best.unanswerable)):
                ax.hist(values, bins=bins, histtype="stepfilled", alpha=0.45, color=GROUP_COLOURS.get(group),
                        edgecolor=GROUP_COLOURS.get(group), label=f"{group} ({len(values)})")
            floor = floors.get(lang)
            if floor is not None:
                ax.axvline(floor, color="#333333", linewidth=0.9, linestyle=":", label=f"{floor_label} {floor:.3f}")
            other = (other_floors or {}).get(lang)
            if other is not None:
                ax.axvline(other, color="#333333", linewidth=0.9, linestyle="--", label=f"{other_label} {other:.3f}")
            ax.set_title(lang, loc="left")
            ax.set_xlabel("best retrieval score of the question (cosine)")
            ax.legend(loc="upper left", frameon=False, fontsize=7)
        return finish_panels(fig, axes, "questions", title, path, legend=False)  # each panel has its own legend


def gate_roc(sweeps: Mapping[str, Sequence[SweepRow]], points: Sequence[OperatingPoint], path: Path,
             title: str = "") -> Path:
    """One panel per language: the floor gate's trade-off over every floor (unanswerable questions declined
    against answerable ones with complete evidence declined: an ROC curve, "insufficient" positive), and
    each other gate's single operating point (``points``)."""
    markers = ("s", "^", "D", "v", "P", "X")
    with plt.rc_context(STYLE):
        fig, axes = language_panels(len(sweeps), width=3.4, extra=2.6, height=3.3)
        for ax, (lang, rows) in zip(axes[0], sweeps.items(), strict=True):
            ordered = sorted(rows, key=lambda r: (r.false_refusal_rate, r.refusal_correctness))
            ax.plot([0.0, *(r.false_refusal_rate for r in ordered), 1.0],
                    [0.0, *(r.refusal_correctness for r in ordered), 1.0],
                    color=colour(lang, 0), label="floor (every threshold)")
            ax.plot([0, 1], [0, 1], color="#bbbbbb", linewidth=0.7, linestyle=":")  # a gate that guesses
            for i, point in enumerate(p for p in points if p.lang == lang):
                ax.scatter(point.false_refusal_rate, point.refusal_correctness, zorder=3, s=30,
                           marker=markers[i % len(markers)], color=OTHER_COLOURS[i % len(OTHER_COLOURS)],
                           label=point.gate)
            ax.set_title(lang, loc="left")
            ax.set_xlabel("answerable (complete evidence) declined")
            ax.set_xlim(-0.02, 1.02)
            ax.set_ylim(-0.02, 1.02)
        return finish_panels(fig, axes, "unanswerable declined", title, path, title_y=1.04)


# Losses shade from retrieval (dark) to generation (light); "answered" is the one green bar segment.
STAGE_COLOURS = ("#4d4d4d", "#878787", "#0072B2", "#56B4E9", "#CC79A7", "#E69F00", "#F0E442", "#999933", "#D55E00",
                 "#009E73")


def where_it_failed(rows: Sequence[Any], stages: Sequence[str], path: Path, title: str = "",
                    xlabel: str = "share of the answerable questions with a checkable key fact",
                    colours: Sequence[str] = STAGE_COLOURS) -> Path:
    """One panel per language: per configuration (answerer and gate), a horizontal bar of the answerable
    questions split by the stage that lost their answer (``FailureRow``: ``generator``, ``gate``, ``stage``,
    ``questions``, ``of``), as shares, in pipeline order left to right, with each bar's ``n`` at its end. The same
    bars show any split of a run's questions in ``stages`` order (10's outcomes), with its ``xlabel``."""
    languages = list(dict.fromkeys(r.lang for r in rows))
    configs = list(dict.fromkeys((r.generator, r.gate) for r in rows))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(languages), sharey=True, squeeze=False,
                                 figsize=(4.2 * len(languages) + 2.6, 0.34 * len(configs) + 1.4))
        for ax, lang in zip(axes[0], languages, strict=True):
            mine = {(r.generator, r.gate, r.stage): r for r in rows if r.lang == lang}
            left = [0.0] * len(configs)
            for i, stage in enumerate(stages):
                widths = [mine[(g, gate, stage)].questions / mine[(g, gate, stage)].of
                          if (g, gate, stage) in mine and mine[(g, gate, stage)].of else 0.0 for g, gate in configs]
                ax.barh(range(len(configs)), widths, 0.7, left=left, color=colours[i % len(colours)],
                        label=stage)
                left = [a + b for a, b in zip(left, widths, strict=True)]
            for y, (g, gate) in enumerate(configs):  # the denominator: a run with missing calls counts fewer
                n = next((mine[(g, gate, s)].of for s in stages if (g, gate, s) in mine), 0)
                ax.text(1.01, y, f"n={n}", fontsize=6, va="center", transform=ax.get_yaxis_transform())
            ax.set_yticks(range(len(configs)), [f"{g.split(':')[-1]} · {gate}" for g, gate in configs], fontsize=7)
            ax.invert_yaxis()
            ax.set_xlim(0, 1)
            ax.set_title(lang, loc="left")
            ax.set_xlabel(xlabel)
        handles, labels = axes[0][-1].get_legend_handles_labels()  # below the panels: the n labels sit right
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, frameon=False)
        if title:
            fig.suptitle(title, y=1.02)
        return save(fig, path)
