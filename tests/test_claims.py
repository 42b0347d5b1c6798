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
    return compare(mechanism, baseline, n_boot=2000, seed=0).stored()  # binary: McNemar's exact test


def _comparison(subject: str, metric: str, moved: int, scope: str = "zh") -> claims.Comparison:
    return claims.Comparison.from_stored(subject, scope, metric, _metric(moved), n_boot=2000, seed=0)


def test_the_adjusted_level_makes_the_interval_agree_with_holm() -> None:
    ps = [0.01, 0.04, 0.03, 0.5]
    adjusted = holm(ps)  # 0.04, 0.09, 0.09, 0.5: only the first is rejected
    ranks = [0, 2, 1, 3]
    levels = [claims.adjusted_level(p, a, r, 4) for p, a, r in zip(ps, adjusted, ranks, strict=True)]
    # an interval that inverts its test excludes 0 exactly when p < its level, i.e. when p_Holm < 0.05
    assert [p < level for p, level in zip(ps, levels, strict=True)] == [a < 0.05 for a in adjusted]
    assert claims.adjusted_level(0.0, 0.0, 0, 4) == pytest.approx(0.05 / 4)  # p = 0: Holm's own level


def test_a_bound_that_excludes_0_is_never_printed_as_0() -> None:
    assert claims.bound_text(0.0004) == "+0.0004" and claims.bound_text(-0.0123) == "-0.012"
    assert claims.bound_text(0.0) == "0.000"  # zero has no sign


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
        "no effect survives the adjustment (closest: mrr +0.050, adjusted [-") and b.text().endswith(
        "includes 0)")
    stored = family.get("a", "zh", "mrr")
    assert claims.Judgement.read("a", "zh", "mrr", {"diff": stored.diff, **stored.stored()}) == stored
    with pytest.raises(KeyError, match="re-run"):
        claims.Comparison.from_stored("a", "zh", "mrr", {"diff": 0.1, "p": 0.5})


def _stored_comparisons(node, where=""):
    """Every dict in a results.json tree that holds a comparison (``p`` and ``ci95`` with ``diffs``, or a Holm
    judgement ``p_holm`` and ``adjusted``), with where it is."""
    if isinstance(node, dict):
        if "diffs" in node or "p_holm" in node:
            yield where, node
        for key, value in node.items():
            yield from _stored_comparisons(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _stored_comparisons(value, f"{where}[{i}]")


def test_no_stored_interval_disagrees_with_its_p() -> None:
    import json

    from rag_lib.core.config import REPO_ROOT

    checked, problems = 0, []
    for path in sorted((REPO_ROOT / "results").glob("*/results.json")):
        for where, c in _stored_comparisons(json.loads(path.read_text(encoding="utf-8"))):
            if c.get("in_family") and c.get("adjusted") is not None:
                lo, hi = c["adjusted"]
                checked += 1
                if (lo > 0 or hi < 0) != (c["p_holm"] < 0.05):
                    problems.append(f"{path.parent.name}{where}: adjusted [{lo}, {hi}] but p_Holm {c['p_holm']}")
            if "ci95" in c and "p" in c and "diffs" in c and any(c["diffs"]):
                lo, hi = c["ci95"]
                checked += 1
                if (lo > 0 or hi < 0) != (c["p"] < 0.05):
                    problems.append(f"{path.parent.name}{where}: 95% interval [{lo}, {hi}] but p {c['p']}")
    assert checked > 100
    assert problems == [], "\n".join(problems[:20])
