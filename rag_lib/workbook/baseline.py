"""The baseline's Q7 piece ranks as each run that reports them stored them, and where they disagree.

01, 05 and every mechanism run rank the baseline (dense, default embedder) in their own process;
the summary shows 01's, and a test holds the committed runs to one answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_lib.config import run_config
from rag_lib.workbook.experiment_results import BakeoffResult, Q7DiagnosisResult
from rag_lib.workbook.mechanism_results import mechanism_results
from rag_lib.workbook.results import PIECES

Q7Ranks = dict[tuple[str, str], tuple[int | None, ...]]  # (phrasing, language) -> first rank of C1..C4


def baseline_q7_ranks(root: Path | None = None) -> dict[str, Q7Ranks]:
    """The baseline's (dense, default embedder) Q7 piece ranks as each run that reports them stored them:
    01 (its row for the default configuration), 05 (its own rows) and every mechanism run (its baseline).

    They are three computations of one ranking; :func:`q7_baseline_disagreements` says where they differ.
    """
    def ranks(row: dict[str, Any]) -> tuple[int | None, ...]:
        return tuple(row.get(p) for p in PIECES)

    out: dict[str, Q7Ranks] = {}
    bakeoff = BakeoffResult.find("01_embedding_bakeoff", root)
    diagnosis = Q7DiagnosisResult.find("05_q7_diagnosis", root)
    if bakeoff is not None:
        default = f"dense:{run_config().embedder}"
        out["01_embedding_bakeoff"] = {(r["phrasing"], r["language"]): ranks(r) for r in bakeoff.q7_rows
                                       if r["configuration"] == default}
    if diagnosis is not None:
        out["05_q7_diagnosis"] = {(r["phrasing"], r["language"]): ranks(r) for r in diagnosis.rank_rows
                                  if r.get("source") == "ours"}
    for name, mechanism in mechanism_results(root)[0].items():
        if mechanism.ran:
            out[name] = {(phrasing, lang): ranks(by_piece) for phrasing, by_lang in
                         mechanism.baseline["q7"].items() for lang, by_piece in by_lang.items()}
    return out


def q7_baseline_disagreements(root: Path | None = None) -> list[str]:
    """Every (phrasing, language) whose baseline Q7 ranks differ between two runs that report them."""
    runs = baseline_q7_ranks(root)
    problems = []
    for key in sorted({k for ranks in runs.values() for k in ranks}):
        seen = {name: ranks[key] for name, ranks in runs.items() if key in ranks}
        if len(set(seen.values())) > 1:
            problems.append(f"Q7 {key[0]} ({key[1]}): " + "; ".join(f"{n} {v}" for n, v in seen.items()))
    return problems
