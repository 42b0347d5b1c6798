"""How far the key-fact measure agrees with the hand judgements (:mod:`rag_lib.evaluation.hand_checks`): the
2×2 table, percent agreement with its Wilson interval, Cohen's kappa, the disagreements with their reasons,
and the checks left out (stale, missing, not checkable)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rag_lib.evaluation.hand_checks import HandCheck, HandChecks
from rag_lib.evaluation.stats import wilson


@dataclass(frozen=True)
class Disagreement:
    """An answer the reviewer and the key-fact measure judged differently."""

    check: HandCheck
    key_fact_correct: bool

    def describe(self) -> str:
        c = self.check
        note = f" Key facts: {c.key_fact_note}" if c.key_fact_note else ""
        return (f"{c.lang}/{c.generator}/{c.question}: hand {c.judgement}, key facts "
                f"{'correct' if self.key_fact_correct else 'not correct'}: {c.reason}{note}")


@dataclass(frozen=True)
class Agreement:
    """Agreement of the key-fact measure with the hand judgements.

    ``table[(hand, key_facts)]`` counts answers by (hand judgement is ``correct``, key-fact
    ``correct`` is True). ``stale`` are checks whose answer changed since it was judged (hash
    mismatch), ``missing`` checks with no row, ``not_checkable`` rows whose key-fact ``correct`` is
    None; none of them is compared.
    """

    n: int
    table: dict[tuple[bool, bool], int]
    percent: float
    interval: tuple[float, float] | None
    kappa: float
    disagreements: tuple[Disagreement, ...]
    stale: tuple[HandCheck, ...] = ()
    missing: tuple[HandCheck, ...] = ()
    not_checkable: tuple[HandCheck, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Plain figures (for results.json or a table)."""
        return {
            "n": self.n,
            "both_correct": self.table[(True, True)],
            "hand_only": self.table[(True, False)],
            "key_facts_only": self.table[(False, True)],
            "both_not_correct": self.table[(False, False)],
            "percent": round(self.percent, 2) if self.n else float("nan"),
            "ci95": [round(100 * v, 2) for v in self.interval] if self.interval else None,
            "kappa": round(self.kappa, 4) if not math.isnan(self.kappa) else float("nan"),
            "disagreements": [d.describe() for d in self.disagreements],
            "stale": [f"{c.lang}/{c.generator}/{c.question}" for c in self.stale],
            "missing": [f"{c.lang}/{c.generator}/{c.question}" for c in self.missing],
            "not_checkable": [f"{c.lang}/{c.generator}/{c.question}" for c in self.not_checkable],
        }


def cohen_kappa(table: Mapping[tuple[bool, bool], int]) -> float:
    """Cohen's kappa of a 2×2 table ``{(rater_a, rater_b): count}``; NaN when chance agreement is 1.

    ``(p_o − p_e) / (1 − p_e)``, with ``p_e`` from the two raters' marginal rates. When both raters
    put every item in the same class, ``p_e`` is 1 and kappa is undefined (NaN), not 1.
    """
    n = sum(table.values())
    if n == 0:
        return float("nan")
    a, b = table.get((True, True), 0), table.get((True, False), 0)
    c, d = table.get((False, True), 0), table.get((False, False), 0)
    p_o = (a + d) / n
    p_e = ((a + b) * (a + c) + (c + d) * (b + d)) / (n * n)
    return float("nan") if p_e == 1 else (p_o - p_e) / (1 - p_e)


def agreement(checks: HandChecks | Iterable[HandCheck], rows: Iterable[Mapping[str, Any]]) -> Agreement:
    """How often the key-fact measure's ``correct`` agrees with the hand judgement.

    Parameters
    ----------
    checks
        The hand checks (:func:`~rag_lib.evaluation.hand_checks.load_hand_checks`).
    rows
        Answer rows with ``lang``, ``generator``, ``question``, ``answer`` and ``correct``
        (:func:`~rag_lib.evaluation.hand_checks.answer_rows`).

    Returns
    -------
    Agreement
        ``n`` compared answers, the 2×2 ``table`` of (hand ``correct``, key facts ``correct``),
        ``percent`` agreement with its Wilson 95% ``interval`` (as rates), Cohen's ``kappa``, the
        ``disagreements`` with their reasons, and the checks left out: ``stale`` (the answer's hash
        no longer matches: re-judge it), ``missing`` (no such row), ``not_checkable`` (``correct`` is None).
    """
    by_key = {(r.get("lang"), r.get("generator"), r.get("question")): r for r in rows}
    table = {(h, k): 0 for h in (True, False) for k in (True, False)}
    disagreements: list[Disagreement] = []
    stale: list[HandCheck] = []
    missing: list[HandCheck] = []
    not_checkable: list[HandCheck] = []
    for check in checks:
        row = by_key.get(check.key)
        if row is None:
            missing.append(check)
        elif not check.judged(str(row.get("answer") or "")):
            stale.append(check)  # the judgement is about another text; comparing it would mislead
        elif row.get("correct") is None:
            not_checkable.append(check)
        else:
            kf = bool(row["correct"])
            table[(check.hand_correct, kf)] += 1
            if check.hand_correct != kf:
                disagreements.append(Disagreement(check, kf))
    n = sum(table.values())
    agree = table[(True, True)] + table[(False, False)]
    return Agreement(
        n=n,
        table=table,
        percent=100.0 * agree / n if n else float("nan"),
        interval=wilson(agree, n),
        kappa=cohen_kappa(table),
        disagreements=tuple(disagreements),
        stale=tuple(stale),
        missing=tuple(missing),
        not_checkable=tuple(not_checkable),
    )
