"""Answer correctness: does an answer state the key facts of its question?

``data/benchmark/key_facts.yaml`` lists, for every answerable question of the benchmark and per
gold piece, the **key facts** a correct answer must state (numbers with units, commands, config
keys, API names), each as a few alternative strings. An answer is **correct** when it states every
checkable key fact of its question; a fact marked ``checkable: false`` (its content is only prose,
or every token of it is already in the question) is reported but left out, and a question with no
checkable fact has ``correct = None`` (counted as not checkable, never as right or wrong).
Phrasings of a question (``q07:terms``) share its facts.

The matching rule is stated in :mod:`rag_lib.evaluation.fact_matching`.

Example
-------
>>> r = answer_correct("a39", "单个文件最大 25 MiB，最多 20,000 个文件。")  # doctest: +SKIP
>>> r.correct, [f.alternatives[0] for f in r.missing], r.pieces              # doctest: +SKIP
(False, ['100,000'], {'C1': False, 'C2': True})
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_lib.evaluation.fact_matching import find_alternative
from rag_lib.evaluation.key_facts import KeyFact, KeyFacts, default_key_facts


@dataclass(frozen=True)
class FactCheck:
    """One checkable fact and the alternative the answer stated (``None``: not stated)."""

    fact: KeyFact
    matched: str | None

    @property
    def found(self) -> bool:
        return self.matched is not None


@dataclass(frozen=True)
class CorrectnessResult:
    """Which key facts an answer states.

    ``correct`` is True when every checkable fact is stated, False when one is missing, and
    ``None`` when the question has no checkable fact (left out of correctness).
    """

    question_id: str
    checks: tuple[FactCheck, ...]
    not_checkable: tuple[KeyFact, ...] = ()

    @property
    def found(self) -> tuple[KeyFact, ...]:
        return tuple(c.fact for c in self.checks if c.found)

    @property
    def missing(self) -> tuple[KeyFact, ...]:
        return tuple(c.fact for c in self.checks if not c.found)

    @property
    def checkable(self) -> bool:
        return bool(self.checks)

    @property
    def correct(self) -> bool | None:
        return all(c.found for c in self.checks) if self.checks else None

    @property
    def pieces(self) -> dict[str, bool | None]:
        """Per gold piece: all its checkable facts stated (``None``: the piece has none)."""
        out: dict[str, bool | None] = {f.piece: None for f in self.not_checkable}
        for c in self.checks:
            out[c.fact.piece] = c.found and out.get(c.fact.piece) is not False
        return dict(sorted(out.items(), key=lambda kv: int(kv[0][1:])))


def answer_correct(question_id: str, answer_text: str, key_facts: KeyFacts | None = None) -> CorrectnessResult:
    """Whether ``answer_text`` states every checkable key fact of ``question_id``.

    Parameters
    ----------
    question_id
        A benchmark id (``a39``) or a phrasing's query id (``q07:terms``, which shares q07's facts).
    answer_text
        The answer, in any language; citations and Markdown may stay in it.
    key_facts
        Defaults to ``data/benchmark/key_facts.yaml`` (loaded once).

    Returns
    -------
    CorrectnessResult
        Facts found and missing; ``correct`` is None when the question has no checkable fact.

    Raises
    ------
    BenchmarkError
        The question has no entry in the key facts (unanswerable, unknown, or not yet labelled).
    """
    facts = (key_facts or default_key_facts())[question_id]
    checks = tuple(FactCheck(f, find_alternative(f.alternatives, answer_text)) for f in facts if f.checkable)
    return CorrectnessResult(question_id, checks, tuple(f for f in facts if not f.checkable))


def correctness_summary(results: Sequence[CorrectnessResult]) -> dict[str, Any]:
    """Counts over answers: ``answers``, ``checked`` (a checkable fact exists), ``correct``,
    ``not_checkable``, and ``rate`` = correct / checked (NaN when nothing was checked)."""
    checked = [r for r in results if r.checkable]
    correct = sum(bool(r.correct) for r in checked)
    return {
        "answers": len(results),
        "checked": len(checked),
        "correct": correct,
        "not_checkable": len(results) - len(checked),
        "rate": correct / len(checked) if checked else float("nan"),
    }


def has_checkable_fact(question_id: str, key_facts: KeyFacts | None = None) -> bool:
    """Whether the question has a checkable key fact (else it is left out of correctness)."""
    return answer_correct(question_id, "", key_facts).checkable
