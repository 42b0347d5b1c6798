"""What a setting buys against what it costs: coverage against the tokens sent (over k, and per chunking
strategy), and HNSW recall against ef_search."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt

from rag_lib.presentation.figures.style import STYLE, colour, legend_outside, save
from rag_lib.results.topk import CurvePoint

if TYPE_CHECKING:
    from rag_lib.results.ann import HnswSetting, RecallRow


def tradeoff(curve: Mapping[str, Mapping[str, CurvePoint]], path: Path, marked: Sequence[int] = (1, 5, 10, 20),
             title: str = "") -> Path:
    """Coverage against the tokens sent, one line per language over k (``curve[lang][str(k)]`` as 04 stores
    it), with some k marked on the line."""
    with plt.rc_context(STYLE):
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
        legend_outside(ax)
        return save(fig, path)


def recall_by_ef(rows: Sequence[RecallRow], settings: Sequence[HnswSetting], path: Path, title: str = "") -> Path:
    """HNSW recall@10 of the exact neighbours against ef_search, one line per batch and language, with the
    lowest-to-highest build as a band (``rows`` as 13 stores them, ``settings`` in the same order)."""
    ef = {s.label: s.ef_search for s in settings}
    series: dict[tuple[str, str], list[RecallRow]] = {}
    for row in rows:
        series.setdefault((row.batch, row.language), []).append(row)
    with plt.rc_context(STYLE):
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
        legend_outside(ax)
        return save(fig, path)


def strategy_tradeoff(rows: Sequence[Mapping[str, Any]], x: str, y: str, path: Path, title: str = "") -> Path:
    """One point per strategy and language: ``y`` (what the evidence holds) against ``x`` (what it
    costs), each labelled with its strategy."""
    with plt.rc_context(STYLE):
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
        legend_outside(ax)
        return save(fig, path)
