"""How long each notebook takes in a full ``make reproduce FORCE=1`` here, cold and warm.

*Cold*: the run started without an embedding cache (a fresh clone, or ``.cache/`` removed), so the corpus,
the other embedders' chunk sets and every question were embedded during it. *Warm*: the caches were there.
Only a forced run of every planned notebook with no failure is recorded (a partial run has no total), into
``results/run_times.json``, which the results index reads. Times are wall-clock seconds on the machine that
ran it (its CPU count and load average at the start are stored beside them): a busy machine inflates them.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_lib.core.config import cache_dir
from rag_lib.core.io import read_json, write_json

RUN_TIMES_FILE = "run_times.json"
STATES = ("cold", "warm")


def cache_state() -> str:
    """``"cold"`` when the embedding cache holds no vectors yet, else ``"warm"``."""
    return "warm" if any((cache_dir() / "embeddings").rglob("*.npz")) else "cold"


def load_run_times(root: Path) -> dict[str, Any]:
    """The recorded times (state → block), or ``{}`` when none were recorded."""
    path = root / RUN_TIMES_FILE
    return read_json(path) if path.is_file() else {}


def record_run_times(root: Path, state: str, runs: Mapping[str, float], total_s: float, embed_s: float,
                     load_at_start: float, failed: Mapping[str, str] | None = None) -> Path:
    """Store one full run's times under ``state``, keeping the other state's block. ``failed`` (run → why)
    names runs that did not finish: they have no time, and the total does not include them."""
    if state not in STATES:
        raise ValueError(f"state {state!r}: use one of {STATES}")
    times = load_run_times(root)
    times[state] = {"measured": datetime.date.today().isoformat(), "cpus": os.cpu_count(),
                    "load_at_start": round(load_at_start, 1), "total_s": round(total_s),
                    "embed_corpus_s": round(embed_s), "runs": {name: round(s) for name, s in runs.items()},
                    **({"failed": dict(failed)} if failed else {})}
    path = root / RUN_TIMES_FILE
    write_json(path, dict(sorted(times.items())))
    return path


def duration(seconds: float) -> str:
    """``45 s`` below two minutes, else ``12 min``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def run_time_text(times: Mapping[str, Any], run: str) -> str:
    """``cold 3 min, warm 40 s`` for one run (a state never measured says so)."""
    def one(state: str) -> str:
        block = times.get(state, {})
        if run in block.get("runs", {}):
            return f"{state} {duration(block['runs'][run])}"
        return f"{state} failed ({block['failed'][run]})" if run in block.get("failed", {}) else f"{state} not measured"

    return ", ".join(one(state) for state in STATES)


def totals_text(times: Mapping[str, Any]) -> str:
    """One sentence: each measured state's total, with when and on how many CPUs."""
    parts = [f"{state}: {duration(t['total_s'])} in all (the corpus embedding before the notebooks "
             f"{duration(t['embed_corpus_s'])}; measured {t['measured']} on {t['cpus']} CPUs, load average "
             f"{t['load_at_start']} at the start"
             + (f"; {', '.join(sorted(t['failed']))} did not finish and is not in the total" if t.get("failed") else "")
             + ")" for state, t in sorted(times.items()) if state in STATES]
    return ("A full `make reproduce FORCE=1` here took " + "; ".join(parts) + ". Cold: no embedding cache "
            "(a fresh clone); warm: the caches were there.") if parts else "No full run has been timed yet."
