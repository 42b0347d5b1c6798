"""The reranker's design (issue: designs that can show an effect): the stratified question set and the
reranker score interpolated with the dense score, its weight chosen leave-one-question-out. Hand-made
rankings and scores with exact answers; no model."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from rag_lib.experiments.mechanisms.catalog.reranker import Interpolated, misses_plus_equal, reciprocal_rank
from rag_lib.retrieval import Ranking


class _Question:
    def __init__(self, qid: str, gold: str) -> None:
        self.id, self.pieces, self.phrasings = qid, [frozenset({gold})], ()

    def text(self, lang: str, phrasing: str | None = None) -> str:
        return f"{self.id}-{lang}"


def _ranking(*ids: str) -> Ranking:
    return Ranking(tuple(ids), tuple(float(len(ids) - i) for i in range(len(ids))), source="dense")


def test_misses_are_all_taken_and_matched_by_as_many_seeded_others() -> None:
    questions = [_Question(f"q{i}", "g") for i in range(6)]
    # q0 misses in zh only (gold at rank 6 > k = 2); q1 misses in en only; the rest have gold at rank 1.
    rankings = {q.text(lang): _ranking("g", "x", "y", "z", "w", "v") for q in questions for lang in ("zh", "en")}
    rankings["q0-zh"] = _ranking("x", "y", "z", "w", "v", "g")
    rankings["q1-en"] = _ranking("x", "y", "z", "w", "v", "g")
    ids, strata = misses_plus_equal(questions, rankings.__getitem__, k=2, languages=("zh", "en"), seed=0)
    assert strata.misses == ["q0", "q1"] and len(strata.sample) == 2
    assert set(strata.sample) <= {"q2", "q3", "q4", "q5"} and ids == {"q0", "q1", *strata.sample}
    assert misses_plus_equal(questions, rankings.__getitem__, 2, ("zh", "en"), seed=0)[1] == strata  # seeded
    assert misses_plus_equal(questions, rankings.__getitem__, 2, ("zh",), seed=0)[1].misses == ["q0"]
    drawn = misses_plus_equal(questions, rankings.__getitem__, 2, ("zh", "en"), draw_from=frozenset({"q4", "q5", "q0"}))
    assert drawn[1].sample == ["q4", "q5"]  # the others come from draw_from when it holds enough of them
    short = misses_plus_equal(questions, rankings.__getitem__, 2, ("zh", "en"), draw_from=frozenset({"q4"}))
    assert short[1] == strata  # too few there: drawn from all the others, as without it


def test_reciprocal_rank_is_of_the_first_chunk_of_any_piece() -> None:
    ranking = _ranking("a", "b", "c")
    assert reciprocal_rank([frozenset({"c"}), frozenset({"b"})], ranking) == 0.5
    assert reciprocal_rank([frozenset({"zz"})], ranking) == 0.0


def test_the_weight_is_fitted_without_the_question_and_mixes_the_two_scores() -> None:
    # Three questions, gold "g". Dense (scaled) scores x 1, g 0.5, y 0 everywhere; the reranker gives g 1 for q0
    # and q1, and x 1 for q2. Mixed, g = 1 − 0.5 w beats x = w exactly when w < 2/3, so on q0 and q1 every
    # w up to 0.6 puts g first and larger ones second; the largest weight with the best mean wins (nearest
    # the baseline): 0.6, whichever question is left out.
    questions = [_Question(q, "g") for q in ("q0", "q1", "q2")]
    dense = {q.text("en"): Ranking(("x", "g", "y"), (1.0, 0.5, 0.0), source="dense") for q in questions}
    rerank = {"q0-en": [0.0, 1.0, 0.0], "q1-en": [0.0, 1.0, 0.0], "q2-en": [1.0, 0.0, 0.0]}
    wb = SimpleNamespace(embeddable=[SimpleNamespace(id=c, embed_input=c) for c in "xgy"],
                         benchmark=SimpleNamespace(questions=lambda answerable: questions))
    mixed = Interpolated(wb, dense.__getitem__, lambda text, passages: np.asarray(rerank[text]), n=3,
                         fit_ids=frozenset({"q0", "q1", "q2"}), languages=("en",))
    assert mixed.weight("q2", "en") == 0.6
    assert mixed("q2-en").ids[:2] == ("x", "g")  # x: 0.6 + 0.4 · 1; g: 0.3
    assert mixed("q0-en").ids[0] == "g"  # g: 0.3 + 0.4 · 1 = 0.7 beats x: 0.6
    assert mixed.chosen["en"] == {"q2": 0.6, "q0": 0.6}
    lopsided = Interpolated(wb, dense.__getitem__, lambda text, passages: np.asarray(rerank[text]), n=3,
                            fit_ids=frozenset({"q2"}), languages=("en",))
    assert lopsided.weight("q0", "en") == 1.0  # fitted on q2 alone, where only dense ranks g second: w = 1
    w = mixed.chosen["en"]["q0"]
    assert np.allclose(mixed.ranking("q0-en", w).scores[:3], sorted([w * 1 + (1 - w) * 0, w * 0.5 + (1 - w) * 1,
                                                                     w * 0 + (1 - w) * 0], reverse=True))
