"""Answer against answer, question by question: paired differences with Holm-adjusted intervals.

Two answerers' rates over the same questions are not independent samples, so 10 compares them
pairwise: on each answerable question with a checkable key fact that both have a recorded answer
for, each outcome is 0 or 1 (the shown answer states every key fact; an answer is shown but misses
one), and the mean of the paired differences gets a bootstrap interval over questions. All
comparisons of the notebook form one Holm family (:mod:`rag_lib.evaluation.claims`); the narrowed
pipeline is also compared with itself in the last answers archive (``answers-v3``: before table rows were
shown under their header row), on the per-question outcomes that archive keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rag_lib.evaluation.claims import Family, judge_rows
from rag_lib.evaluation.correctness import has_checkable_fact
from rag_lib.evaluation.stats import MIN_RESAMPLES, compare, interval_text, signed_text
from rag_lib.results.local_llm_choice import PairedRow, PairedTableRow
from rag_lib.results.typed_json import decode

N_BOOT = MIN_RESAMPLES
SEED = 0
# Per-question outcome of one ungated row (an answerable question with a checkable key fact).
OUTCOMES: dict[str, Callable[[Mapping[str, Any]], float]] = {
    # Named as 10's answer table names the rates they are the per-question terms of.
    "answer_correctness": lambda r: float(r["status"] == "answered" and r["correct"] is True),
    "shown_wrong": lambda r: float(r["status"] == "answered" and r["correct"] is False),
}


def outcome_rows(rows: Sequence[Mapping[str, Any]],
                 checkable: Callable[[str], bool] = has_checkable_fact) -> dict[str, Mapping[str, Any]]:
    """The recorded rows of answerable questions with a checkable key fact, by question id."""
    return {r["question"]: r for r in rows
            if r["answerable"] and r["error_kind"] != "replay_miss" and checkable(r["question"])}


def paired_answer_rows(runs: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]], pairs: Sequence[tuple[str, str]],
                       languages: Sequence[str], checkable: Callable[[str], bool] = has_checkable_fact,
                       ) -> tuple[list[PairedRow], Family]:
    """One row per pair, language and outcome: both means, the paired difference, its adjusted interval.

    Parameters
    ----------
    runs
        Answerer name → language → its ungated rows (``question``, ``answerable``, ``status``,
        ``correct``, ``error_kind``).
    pairs
        ``(answerer, baseline)`` names; a pair whose answerer or baseline has no rows in a language is skipped.
    checkable
        Whether a question id has a checkable key fact (others are left out).
    """
    rows: list[dict[str, Any]] = []
    for mine, base in pairs:
        for lang in languages:
            a = outcome_rows(runs.get(mine, {}).get(lang, ()), checkable)
            b = outcome_rows(runs.get(base, {}).get(lang, ()), checkable)
            shared = sorted(set(a) & set(b))
            if not shared:
                continue
            for metric, outcome in OUTCOMES.items():
                stats = compare([outcome(a[q]) for q in shared], [outcome(b[q]) for q in shared], N_BOOT, SEED)
                rows.append({"comparison": f"{mine} − {base}", "lang": lang, "metric": metric,
                             "questions": len(shared), **stats.stored()})
    family = judge_rows(rows, "10's answer-versus-answer comparisons (pairs × languages × outcomes)",
                        subject=["comparison"], scope=["lang"], diff_key="diff", n_boot=N_BOOT, seed=SEED)
    return [decode(PairedRow, r) for r in rows], family  # each row as judge_rows completed it


def table_rows(rows: Sequence[PairedRow]) -> list[PairedTableRow]:
    """The rows as 10's table shows them (no per-question differences)."""
    return [PairedTableRow(comparison=r.comparison, lang=r.lang, metric=r.metric, questions=r.questions,
                           answerer=r.mechanism, baseline=r.baseline, difference=signed_text(r.diff),
                           interval=interval_text(r.ci95), adjusted_holm=r.adjusted_holm)
            for r in rows]
