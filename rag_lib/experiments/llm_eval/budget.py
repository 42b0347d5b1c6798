"""Which narrowing budget to send: chosen on one half of the questions, reported on the other.

The narrowed pipeline sends the model the Top-k's most relevant units within a token budget
(``generation.narrowing``). A larger budget keeps more key facts and costs more prompt tokens, which
on a CPU means seconds per call. The rule (``generation.narrowing_choice``): the smallest candidate
whose units keep every key fact the Top-k states for at least ``target`` of the questions, in each
language, judged on a seeded half of the answerable questions. Its retention is then reported on the
other half, out of sample, and the choice is repeated with the halves swapped to show how stable it
is. No LLM call is made: this measures what the model is sent, not what it writes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rag_lib.benchmark import Question
from rag_lib.core.config import settings
from rag_lib.core.documents import Chunk
from rag_lib.core.text import approx_tokens
from rag_lib.evaluation.fact_matching import find_alternative
from rag_lib.evaluation.key_facts import KeyFact, default_key_facts
from rag_lib.evaluation.stats import rounded_rate, wilson_text
from rag_lib.evidence.narrowing import default_narrower, narrowing_settings
from rag_lib.pipeline.workbench import Workbench
from rag_lib.results.local_llm_choice import BudgetRow, Narrowing, NarrowingChoice


def states_all(facts: Sequence[KeyFact], text: str) -> bool:
    """Whether ``text`` states one alternative of every fact."""
    return all(find_alternative(f.alternatives, text) for f in facts)


@dataclass(frozen=True)
class FactQuestion:
    """An answerable question with checkable key facts, asked in one language."""

    question: Question
    lang: str
    facts: list[KeyFact]
    evidence: list[Chunk]

    @property
    def text(self) -> str:
        return self.question.text(self.lang)

    @property
    def in_top_k(self) -> bool:
        """Whether the Top-k chunks state every key fact."""
        return states_all(self.facts, "\n".join(c.text for c in self.evidence))


def fact_questions(wb: Workbench, lang: str, k: int, key: str = "dense") -> Iterator[FactQuestion]:
    """Each answerable benchmark question with a checkable key fact, with its Top-k evidence."""
    key_facts = default_key_facts()
    for q in wb.benchmark:
        facts = [f for f in key_facts[q.id] if f.checkable] if q.answerable else []
        if facts:
            yield FactQuestion(q, lang, facts, wb.evidence(wb.rank(q.text(lang), key), k))


def choice_rule() -> dict[str, Any]:
    """``generation.narrowing_choice`` in ``config.yaml``."""
    rule = dict(settings()["generation"]["narrowing_choice"])
    rule["candidates"] = [{name: int(v) for name, v in c.items()} for c in rule["candidates"]]
    return rule


def split_halves(ids: Sequence[str], seed: int) -> tuple[list[str], list[str]]:
    """A seeded split of ``ids`` into a choosing half and a reporting half (each sorted)."""
    shuffled = sorted(ids)
    random.Random(seed).shuffle(shuffled)
    middle = (len(shuffled) + 1) // 2
    return sorted(shuffled[:middle]), sorted(shuffled[middle:])


def pick(kept: Mapping[tuple[str, str], Sequence[bool]], ids: Sequence[str], languages: Sequence[str],
         target: float) -> int:
    """The index of the smallest candidate keeping every key fact for ``target`` of ``ids`` in each
    language (the largest candidate when none does). ``kept[(lang, id)][i]``: candidate ``i`` kept them."""
    n_candidates = len(next(iter(kept.values())))
    for i in range(n_candidates):
        shares = [_share(kept, ids, lang, i) for lang in languages]
        if all(n >= target * of for n, of in shares):
            return i
    return n_candidates - 1


def _share(kept: Mapping[tuple[str, str], Sequence[bool]], ids: Sequence[str], lang: str,
           i: int) -> tuple[int, int]:
    """(questions keeping every fact under candidate ``i``, questions) among ``ids`` in ``lang``."""
    mine = [kept[(lang, q)][i] for q in ids if (lang, q) in kept]
    return sum(mine), len(mine)


def run_budget_choice(wb: Workbench, k: int, key: str = "dense",
                      languages: Sequence[str] = ("zh", "en")) -> NarrowingChoice:
    """Every candidate's retention on each half, the rule's pick and the configured setting.

    Returns
    -------
    NarrowingChoice
        ``rows`` (candidate × language: retention on the choosing and reporting halves, mean
        estimated tokens sent), ``picked`` (the rule's candidate, chosen on the choosing half),
        ``picked_swapped`` (chosen on the reporting half instead), ``configured``
        (``generation.narrowing``), ``agrees`` and ``rule``.
    """
    rule = choice_rule()
    candidates = [Narrowing(**c) for c in rule["candidates"]]
    base = default_narrower(wb.embedder())
    narrowers = [replace(base, budget_tokens=c.budget_tokens, max_units=c.max_units) for c in candidates]
    kept: dict[tuple[str, str], list[bool]] = {}
    tokens: dict[str, list[list[int]]] = {lang: [[] for _ in candidates] for lang in languages}
    for lang in languages:
        for fq in fact_questions(wb, lang, k, key):
            ranked = base.ranked(fq.text, fq.evidence)
            sent = [n.keep(ranked) for n in narrowers]
            for i, units in enumerate(sent):
                tokens[lang][i].append(sum(approx_tokens(u.text) for u in units))
            if fq.in_top_k:
                kept[(lang, fq.question.id)] = [states_all(fq.facts, "\n".join(u.text for u in units))
                                                for units in sent]
    ids = sorted({qid for _, qid in kept})
    choosing, reporting = split_halves(ids, int(rule["seed"]))
    picked = pick(kept, choosing, languages, float(rule["target"]))
    rows = []
    for i, candidate in enumerate(candidates):
        for lang in languages:
            (n, of), (m, of_m) = _share(kept, choosing, lang, i), _share(kept, reporting, lang, i)
            rows.append(BudgetRow(
                budget_tokens=candidate.budget_tokens, max_units=candidate.max_units, lang=lang,
                choosing=f"{n}/{of}", choosing_share=rounded_rate(n, of), choosing_ci=wilson_text(n, of),
                reporting=f"{m}/{of_m}", reporting_share=rounded_rate(m, of_m), reporting_ci=wilson_text(m, of_m),
                mean_tokens_sent=round(float(np.mean(tokens[lang][i])), 1) if tokens[lang][i] else None,
                picked="yes" if i == picked else ""))
    configured = Narrowing(**narrowing_settings())
    return NarrowingChoice(
        rule=(f"the smallest candidate whose units keep every key fact the Top-{k} states for at least "
              f"{rule['target']:.0%} of the choosing half's questions in each language"),
        seed=int(rule["seed"]), target=float(rule["target"]), choosing=choosing, reporting=reporting, rows=rows,
        picked=candidates[picked],
        picked_swapped=candidates[pick(kept, reporting, languages, float(rule["target"]))],
        configured=configured, agrees=configured == candidates[picked])
