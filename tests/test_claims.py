"""One rule for claims (rag_lib.evaluation.claims): Holm's step levels, adjusted intervals that agree with the
adjusted p, fixed comparisons left out of the family, and verdicts that name the metric that earned them."""

from __future__ import annotations

import re

import pytest

from rag_lib.evaluation import claims
from rag_lib.evaluation.stats import compare, holm


def _metric(moved: int, n: int = 40) -> dict[str, object]:
    """A stored comparison (as compare() writes it) in which ``moved`` of ``n`` questions go 0 → 1 (or 1 → 0)."""
    baseline = [1.0 if moved < 0 and i < -moved else 0.0 for i in range(n)]
    mechanism = [1.0 - b if i < abs(moved) else b for i, b in enumerate(baseline)]
    return compare(mechanism, baseline, n_boot=2000, seed=0).stored()


def _comparison(subject: str, metric: str, moved: int, scope: str = "zh") -> claims.Comparison:
    return claims.Comparison.from_stored(subject, scope, metric, _metric(moved), n_boot=2000, seed=0)


def test_holm_levels_step_down_and_stop_where_holm_stops() -> None:
    levels = claims.holm_levels([0.01, 0.04, 0.03, 0.5])
    # 0.01 < 0.05/4 is rejected; 0.03 >= 0.05/3 stops the step-down, and every larger p keeps that level.
    assert levels == pytest.approx([0.05 / 4, 0.05 / 3, 0.05 / 3, 0.05 / 3])
    assert [p < level for p, level in zip([0.01, 0.04, 0.03, 0.5], levels, strict=True)] == [
        adjusted < 0.05 for adjusted in holm([0.01, 0.04, 0.03, 0.5])]


def test_an_adjusted_interval_excludes_0_exactly_when_holm_rejects_and_fixed_cells_stay_out() -> None:
    items = [_comparison(f"v{moved}", "hit@5", moved) for moved in (-12, -6, -4, -3, -2, 1, 2, 3, 5, 9)]
    family = claims.judge([*items, _comparison("flat", "hit@5", 0)], "test")
    assert family.size == 10 and family.fixed == 1 and not family.get("flat", "zh", "hit@5").in_family
    for j in family.judgements[:-1]:
        assert j.excludes_0 == (j.p_holm < 0.05), j
        assert j.adjusted[0] <= j.diff <= j.adjusted[1]
    assert {j.effect for j in family.judgements[:-1]} == {True, False}  # the family holds both kinds
    # A fixed cell changes nobody's adjustment; a family of one is the unadjusted 95% interval.
    assert [j.p_holm for j in claims.judge(items, "test").judgements] == [j.p_holm for j in family.judgements[:-1]]
    alone = claims.judge([items[0]], "one").judgements[0]
    assert alone.adjusted_confidence == 0.95 and list(alone.adjusted) == _metric(-12)["ci95"]


def test_a_verdict_names_the_metric_that_earned_it_or_the_closest_one() -> None:
    family = claims.judge([_comparison("a", "mrr", -20), _comparison("a", "hit@5", 1), _comparison("b", "mrr", 2),
                           _comparison("b", "hit@5", 0)], "test")
    a, b = family.verdict("a", "zh"), family.verdict("b")
    assert a.kind == "hurts" and [j.metric for j in a.effects] == ["mrr"]
    assert a.text() == "hurts: " + family.get("a", "zh", "mrr").text()
    assert re.fullmatch(r"hurts: mrr \(zh\) -0\.500, adjusted \[-0\.\d{3}, -0\.\d{3}\]", a.text())
    assert b.kind == "no clear effect" and b.text(scoped=False).startswith(
        "no effect survives the adjustment (closest: mrr +0.050, adjusted [+0.000, +") and b.text().endswith(
        "includes 0)")
    stored = family.get("a", "zh", "mrr")
    assert claims.Judgement.read("a", "zh", "mrr", {"diff": stored.diff, **stored.stored()}) == stored
    with pytest.raises(KeyError, match="re-run"):
        claims.Comparison.from_stored("a", "zh", "mrr", {"diff": 0.1, "p": 0.5})
