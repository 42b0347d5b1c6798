"""Metrics on small hand-made runs with exact expected values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag_lib.evaluation import (
    MRR,
    HitAt,
    Layer,
    NDCGAt,
    PieceCoverage,
    RecallAt,
    diagnose,
    evaluate,
    paired_bootstrap,
    piece_ranks,
)
from rag_lib.retrieval import Ranking


def ranking(n: int = 60) -> Ranking:
    """c1 … cn in order: chunk ``c<r>`` sits at rank r."""
    return Ranking(tuple(f"c{i}" for i in range(1, n + 1)), tuple(float(n - i) for i in range(n)))


MEASURES = [HitAt(1), HitAt(5), RecallAt(1), RecallAt(3), MRR(), NDCGAt(10), PieceCoverage(1), PieceCoverage(3)]


def test_two_pieces_at_ranks_1_and_3() -> None:
    gold = {"q": [{"c1"}, {"c3"}]}
    row = evaluate(gold, {"q": ranking()}, MEASURES).loc["q"]
    assert row["mrr"] == 1.0
    # DCG = 1/log2(2) + 1/log2(4) = 1.5; ideal = 1 + 1/log2(3)
    assert row["ndcg@10"] == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert (row["hit@1"], row["hit@5"], row["recall@1"], row["recall@3"]) == (1.0, 1.0, 0.5, 1.0)
    assert (row["coverage@1"], row["coverage@3"]) == (0.5, 1.0)


def test_mrr_and_ndcg_when_the_first_gold_is_at_rank_4() -> None:
    row = evaluate({"q": [{"c4"}]}, {"q": ranking()}, [MRR(), NDCGAt(10), HitAt(3)]).loc["q"]
    assert row["mrr"] == 0.25
    assert row["ndcg@10"] == pytest.approx(1 / math.log2(5))  # ideal DCG is 1
    assert row["hit@3"] == 0.0


def test_q7_like_question_covers_one_of_four_pieces_at_10() -> None:
    gold = [{"c52"}, {"c36", "c59"}, {"c36"}, {"c7"}]  # C1 … C4 of the casebook
    r = ranking()
    assert piece_ranks(gold, r) == [52, 36, 36, 7]
    row = evaluate({"q7": gold}, {"q7": r}, [PieceCoverage(10), RecallAt(10)]).loc["q7"]
    assert row["coverage@10"] == 0.25
    assert row["recall@10"] == 0.25  # chunk-level: c7 of {c52, c36, c59, c7}
    d = diagnose(gold, r, k=5)
    assert (d.layer, d.worst_rank, d.piece_ranks) == (Layer.RANKED_DEEP, 52, (52, 36, 36, 7))


def test_a_piece_is_found_at_its_best_chunk() -> None:
    assert piece_ranks([{"c7", "c2"}, {"c9"}], ranking()) == [2, 9]
    assert piece_ranks([{"missing"}, set()], ranking()) == [None, None]


@pytest.mark.parametrize(
    ("worst", "layer"),
    [(1, Layer.IN_TOP_K), (5, Layer.IN_TOP_K), (6, Layer.JUST_OUTSIDE), (10, Layer.JUST_OUTSIDE),
     (11, Layer.RANKED_DEEP), (60, Layer.RANKED_DEEP)],
)
def test_diagnosis_boundaries_at_k_and_2k(worst: int, layer: Layer) -> None:
    d = diagnose([{"c1"}, {f"c{worst}"}], ranking(), k=5)
    assert d.layer is layer and d.worst_rank == worst


@pytest.mark.parametrize("gold", [[], [{"c1"}, set()], [{"c1"}, {"not-a-chunk"}]])
def test_diagnosis_not_in_corpus(gold: list[set[str]]) -> None:
    d = diagnose(gold, ranking(), k=5)
    assert d.layer is Layer.NOT_IN_CORPUS and d.worst_rank is None
    assert str(d.layer) == "not_in_corpus"


def test_questions_without_gold_score_nan_and_others_are_unaffected() -> None:
    runs = {"q9a": ranking(), "q5": ranking()}
    table = evaluate({"q9a": [], "q5": [{"c2"}]}, runs, [MRR(), PieceCoverage(5)])
    assert list(table.index) == ["q5", "q9a"]
    assert table.loc["q5", "mrr"] == 0.5 and table.loc["q5", "coverage@5"] == 1.0
    assert table.loc["q9a"].isna().all()
    with pytest.raises(KeyError, match="no ranking for questions"):
        evaluate({"q1": [{"c1"}]}, {}, [MRR()])


def test_ranx_sees_our_order_including_ties() -> None:
    tied = Ranking(("b", "a"), (1.0, 1.0))  # b is first although both score 1
    assert evaluate({"q": [{"a"}]}, {"q": tied}, [MRR()]).loc["q", "mrr"] == 0.5


def test_mrr_reads_past_every_cutoff_to_a_gold_chunk_at_rank_250() -> None:
    row = evaluate({"q": [{"c250"}]}, {"q": ranking(400)}, MEASURES).loc["q"]
    assert row["mrr"] == 1 / 250
    assert row["hit@5"] == row["recall@3"] == row["ndcg@10"] == 0.0


def test_scores_are_ranx_on_the_whole_rankings() -> None:
    """Runs are cut where the measures stop reading before ranx sees them: the scores must be ranx's on the
    uncut rankings, for gold anywhere in a long ranking, absent, or split over pieces."""
    import ranx

    rng = np.random.default_rng(7)
    ids = [f"c{i}" for i in range(1, 501)]
    gold, runs = {}, {}
    for q in range(60):
        order = list(rng.permutation(ids))
        runs[f"q{q}"] = Ranking(tuple(order), tuple(float(500 - i) for i in range(500)))
        picks = rng.choice([*ids, "absent"], size=int(rng.integers(1, 5)), replace=False)
        gold[f"q{q}"] = [{str(c)} for c in picks]
    measures = [HitAt(5), RecallAt(5), MRR(), NDCGAt(10)]
    got = evaluate(gold, runs, measures)
    qrels = ranx.Qrels({q: {c: 1 for piece in g for c in piece} for q, g in gold.items()})
    run = ranx.Run({q: {c: float(500 - i) for i, c in enumerate(r.ids)} for q, r in runs.items()})
    expected = ranx.evaluate(qrels, run, [m.ranx_metric for m in measures], return_mean=False)
    order = list(qrels.keys())  # ranx's order of the per-query arrays
    for m in measures:
        assert got[m.name].to_dict() == dict(zip(order, map(float, expected[m.ranx_metric]), strict=True)), m.name


def test_paired_bootstrap() -> None:
    a, b = [1.0, 0.5, 1.0, 0.0], [0.5, 0.5, 0.0, 0.0]
    mean, lo, hi = paired_bootstrap(a, b, n=2000, seed=0)
    assert mean == pytest.approx(0.375)
    assert 0.0 <= lo <= mean <= hi <= 1.0
    assert paired_bootstrap(a, b, n=2000, seed=0) == (mean, lo, hi)  # deterministic
    assert paired_bootstrap([0.3, 0.7], [0.1, 0.5]) == pytest.approx((0.2, 0.2, 0.2))  # constant gain
    assert paired_bootstrap(a, a) == (0.0, 0.0, 0.0)
    # resampled means of the 4 differences {0.5, 0, 1, 0} can only be multiples of 1/8
    assert (lo * 8) == pytest.approx(round(lo * 8)) and (hi * 8) == pytest.approx(round(hi * 8))
    with pytest.raises(ValueError, match="equally long"):
        paired_bootstrap([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="NaN"):
        paired_bootstrap([np.nan], [0.0])
