"""The draw of the hand-checked sample (:mod:`rag_lib.evaluation.hand_checks`): the seeded, stratified rule
that picked the answers a reviewer judged, reproducible from the results the sample names."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rag_lib.evaluation.hand_checks import DEFAULT_GENERATORS, LANGS


def _in_pool(row: Mapping[str, Any]) -> bool:
    # Only answers the key-fact measure scores can be compared: answered, answerable, checkable.
    return (row.get("answerable") is True and row.get("status") == "answered"
            and row.get("correct") is not None and bool(row.get("answer")))


def _order_key(seed: int, row: Mapping[str, Any]) -> str:
    # A hash, not a PRNG: the order cannot change with a Python or NumPy version.
    return hashlib.sha256(f"{seed}:{row['lang']}:{row['generator']}:{row['question']}".encode()).hexdigest()


def draw_sample(rows: Iterable[Mapping[str, Any]], seed: int = 0, per_language: int = 24,
                langs: Sequence[str] = LANGS,
                generators: Sequence[str] = DEFAULT_GENERATORS) -> list[dict[str, Any]]:
    """The seeded, stratified sample of answers to check by hand.

    Rule: the pool is the rows of answerable questions that were answered and that the key-fact
    measure scores (``correct`` True or False). Within each (language, generator) stratum rows are
    ordered by ``sha256("<seed>:<lang>:<generator>:<question>")``. Each language gets
    ``per_language`` rows, split evenly over ``generators``; a stratum with too few rows gives all it
    has, and the shortfall is taken, one at a time in ``generators`` order, from the strata of the
    same language that have rows left.

    Parameters
    ----------
    rows
        Rows as returned by :func:`~rag_lib.evaluation.hand_checks.answer_rows` (with ``lang`` and ``generator``).
    seed
        Seed of the order.
    per_language
        Rows drawn per language (fewer when the pool is smaller).
    langs, generators
        The strata.

    Returns
    -------
    list of dict
        The drawn rows, sorted by language (in ``langs`` order), generator, question id.
    """
    pools: dict[tuple[str, str], list[Mapping[str, Any]]] = {(lang, g): [] for lang in langs for g in generators}
    for row in rows:
        k = (row.get("lang"), row.get("generator"))
        if k in pools and _in_pool(row):
            pools[k].append(row)
    drawn: list[dict[str, Any]] = []
    for lang in langs:
        take = {g: min(per_language // len(generators), len(pools[(lang, g)])) for g in generators}
        left = per_language - sum(take.values())
        while left > 0:
            spare = [g for g in generators if take[g] < len(pools[(lang, g)])]
            if not spare:
                break
            for g in spare[:left]:
                take[g] += 1
                left -= 1
        for g in generators:
            ordered = sorted(pools[(lang, g)], key=lambda r: _order_key(seed, r))
            drawn.extend(dict(r) for r in sorted(ordered[: take[g]], key=lambda r: r["question"]))
    return drawn
