"""Where a right answer is lost: key facts in the Top-k, in the units sent, in a shown answer.

For each answerable question with a checkable key fact (``data/benchmark/key_facts.yaml``), three
stages in order: every key fact is stated somewhere in the Top-k chunks (retrieval kept it), in the
units the narrowed pipeline sends the model (narrowing kept it), and in the answer the reader is
shown (the model wrote it and the support check let it through). Each stage's share is of the
questions that passed the stage before, so a low share names the step that lost the facts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_lib.evaluation.stats import rounded_rate, wilson_text
from rag_lib.experiments.llm_eval.diagnosis import Retrieved
from rag_lib.results.local_llm import AnsweredQuestion, FunnelRow

STAGES = ("in the Top-k chunks", "in the units sent", "in the shown answer")


def funnel_rows(answer_rows: Mapping[str, Sequence[AnsweredQuestion]],
                kept_by_lang: Mapping[str, Mapping[str, Retrieved]], k: int) -> list[FunnelRow]:
    """One row per language and stage: questions reaching it, and the share of the stage before.

    Parameters
    ----------
    answer_rows
        Per language, the narrowed pipeline's ungated rows (``question``, ``status``, ``correct``).
    kept_by_lang
        Per language, what retrieval and narrowing kept of each question
        (:func:`rag_lib.experiments.llm_eval.diagnosis.retrieved`).
    k
        The Top-k the answers were given.
    """
    rows = []
    for lang, answered in answer_rows.items():
        by_question = {r.question: r for r in answered}
        reached = [0, 0, 0]
        asked = 0
        for kept in kept_by_lang[lang].values():
            row = by_question.get(kept.question)
            if row is None or row.error_kind == "replay_miss":
                continue
            asked += 1
            if len(kept.in_top_k) < len(kept.facts):
                continue
            reached[0] += 1
            if len(kept.in_units) < len(kept.facts):
                continue
            reached[1] += 1
            reached[2] += bool(row.status == "answered" and row.correct)
        before = asked
        for stage, n in zip(STAGES, reached, strict=True):
            rows.append(FunnelRow(lang=lang, stage=stage.replace("Top-k", f"Top-{k}"), questions=n, of=before,
                                  share=rounded_rate(n, before), ci=wilson_text(n, before)))
            before = n
    return rows
