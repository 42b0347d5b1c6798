"""Experiments 04 (top-k) and 05 (Q7 diagnosis): their helpers, and their results.json / report.md."""

from __future__ import annotations

import pytest
from report_checks import load_results, report_numbers_not_in_json

from rag_lib.evaluation.margins import at_the_cut, margin_to_cut, median_gap
from rag_lib.experiments.q7_diagnosis import piece_layer
from rag_lib.experiments.topk import approx_tokens, completes_late, coverage_at, first_full_k, verdict
from rag_lib.retrieval import Ranking

# A number standing on its own (not part of an identifier such as "q08", "C1" or "e5").


# --------------------------------------------------------------------------- helpers
def test_approx_tokens_counts_cjk_one_each_and_other_text_by_four() -> None:
    assert approx_tokens("") == 0
    assert approx_tokens("abcd") == 1
    assert approx_tokens("abcde") == 2  # rounded up
    assert approx_tokens("环境变量") == 4
    assert approx_tokens("环境 vars？") == 2 + 2 + 1  # 环境, " vars" (5 → 2), full-width ？ counts as CJK


def test_coverage_and_first_full_k() -> None:
    ranks = [3, 6]  # the casebook's Q8 shape: one piece in the top 5, the other at 6
    assert [coverage_at(ranks, k) for k in (2, 3, 5, 6, 20)] == [0, 1, 1, 2, 2]
    assert first_full_k(ranks) == 6
    assert first_full_k([1, None]) is None
    assert first_full_k([]) is None
    assert coverage_at([None, 1], 1) == 1


def test_q8_testability_needs_the_last_piece_between_6_and_10() -> None:
    assert completes_late([3, 6], 5) and completes_late([1, 10], 5)
    assert not completes_late([1, 3], 5) and not completes_late([1, 11], 5)
    assert not completes_late([1, None], 5)
    assert not completes_late([3, 6], 6)  # k is the caller's: at k = 6 the last piece is already inside
    assert verdict({"C1": 1, "C2": 3}, 5).startswith("not testable on this corpus: C1 at rank 1, C2 at rank 3, all")
    assert verdict({"C1": 8, "C2": 1}, 5) == "testable: C1 at rank 8, C2 at rank 1; the last piece enters at k = 8"
    assert "beyond the Top-10" in verdict({"C1": 12, "C2": 1}, 5)


@pytest.mark.parametrize(("rank", "layer"), [
    (None, "not_in_corpus"), (1, "in_top_k"), (5, "in_top_k"), (6, "just_outside"), (10, "just_outside"),
    (11, "ranked_deep"), (52, "ranked_deep"),
])
def test_piece_layer_boundaries(rank: int | None, layer: str) -> None:
    assert piece_layer(rank, 5) == layer


# --------------------------------------------------------------------------- results.json and report.md
def test_margin_to_the_top_10_boundary_and_the_median_gap() -> None:
    scores = [1.0 - 0.01 * i for i in range(10)] + [0.905, 0.5]  # rank 10: 0.91, rank 11: 0.905
    ranking = Ranking(tuple(f"c{i}" for i in range(12)), tuple(scores))
    assert margin_to_cut(ranking, 10) == pytest.approx(0.005)  # what rank 10 may lose and stay in
    assert margin_to_cut(ranking, 11) == pytest.approx(-0.005)  # what rank 11 must gain to get in
    assert margin_to_cut(ranking, 12) == pytest.approx(-0.41)
    assert margin_to_cut(ranking, None) is None and margin_to_cut(ranking, 3, n=12) is None
    assert median_gap(ranking) == pytest.approx(0.01)  # nine gaps of 0.01, one of 0.005
    assert median_gap(Ranking(("c0",), (1.0,))) is None
    # A margin below the median gap is a tie at the cut (neither in nor out); a clear gap is not.
    assert at_the_cut(ranking, 10) and at_the_cut(ranking, 11)
    assert not at_the_cut(ranking, 12) and not at_the_cut(ranking, 3) and not at_the_cut(ranking, None)


def test_topk_results() -> None:
    results, report = load_results("04_q8_topk")
    assert results["experiment"] == "04_q8_topk"
    ks = [str(k) for k in range(1, results["max_k"] + 1)]
    for lang in results["languages"]:
        q8 = results["q8"][lang]
        ranks = list(q8["piece_ranks"].values())
        assert q8["n_pieces"] == len(ranks) == 2
        assert [q8["covered"][k] for k in ks] == [coverage_at(ranks, int(k)) for k in ks]
        assert q8["first_full_k"] == first_full_k(ranks)
        assert results["q8_testable"][lang] == q8["testable"] == completes_late(ranks, 5)
        # The report's Q8 table: one row per language, "covered/pieces" at every k.
        row = results["q8_rows"][results["languages"].index(lang)]
        assert row == {"language": lang, **{f"k={k}": f"{q8['covered'][k]}/{q8['n_pieces']}" for k in ks}}
        assert all(completes_late([r[p] for p in r if p.startswith("C")], 5) for r in results["late_complete"][lang])
        assert results["late_complete_count"][lang] == len(results["late_complete"][lang])
        curve = results["curve"][lang]
        assert sorted(curve, key=int) == ks  # results.json keeps keys sorted as text
        cov = [curve[k]["coverage"] for k in ks]
        cost = [curve[k]["chars"] for k in ks]
        assert cov == sorted(cov) and cost == sorted(cost), "coverage and context size only grow with k"
        assert all(0.0 <= curve[k]["full"] <= curve[k]["coverage"] <= 1.0 for k in ks)
    assert results["casebook_q8"]["k5"] == "1/2" and results["casebook_q8"]["k6"] == "2/2"
    # k values written in the report's own sentences ("k = 5") are parameters, not measurements
    assert not report_numbers_not_in_json(results, report)


def test_q7_diagnosis_results() -> None:
    results, report = load_results("05_q7_diagnosis")
    assert results["experiment"] == "05_q7_diagnosis"
    k = results["k"]
    assert set(results["cases"]) == {"original", "terms", "aligned"}
    for by_lang in results["cases"].values():
        for case in by_lang.values():
            ranks = case["piece_ranks"]
            assert list(ranks) == ["C1", "C2", "C3", "C4"]
            assert [row["rank"] for row in case["top10"]] == list(range(1, 11))
            scores = [row["score"] for row in case["top10"]]
            assert scores == sorted(scores, reverse=True)
            # a piece is listed in the Top-10 table exactly when its first rank is ≤ 10
            listed = {p for row in case["top10"] for p in row["covers"].split(",") if p != "-"}
            assert listed == {p for p, r in ranks.items() if r is not None and r <= 10}
            assert case["coverage_top10"] == f"{len(listed)}/4"
            assert case["piece_layers"] == {p: piece_layer(r, k) for p, r in ranks.items()}
            worst = max(ranks.values())
            assert case["worst_rank"] == worst
            assert case["layer"] == piece_layer(worst, k)
            for piece, margin in case["top10_margins"].items():  # inside the Top-10 exactly when the margin is ≥ 0
                assert (margin >= 0) == (ranks[piece] <= 10)
    theirs = [row for row in results["rank_rows"] if row["source"].startswith("casebook")]
    assert theirs and theirs[0]["C1"] == 52 and theirs[0]["C2"] == 36 and theirs[0]["C3"] == 36
    assert "theirs" in theirs[0]["source"]
    assert not report_numbers_not_in_json(results, report)
