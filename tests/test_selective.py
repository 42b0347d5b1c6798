"""Selective answering on tiny hand-made data with exact expected values."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_lib.evaluation.logistic import (
    assign_folds,
    cross_validated_proba,
    cv_scheme,
    fit_logistic,
    penalised_gradient,
)
from rag_lib.evaluation.selective import (
    NOTE,
    accuracy_coverage,
    answer_everything,
    area_under_curve,
    selective_answering,
)
from rag_lib.evaluation.stats import wilson


def noisy_data(n: int = 30, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Three features, the first informative; outcomes not separable."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    return X, y


def rows_of(X: np.ndarray) -> list[dict[str, float | None]]:
    return [{"dense": float(a), "coverage": float(b), "judge": int(c > 0)} for a, b, c in X]


# ---------------------------------------------------------------------------------------------------- fit_logistic


def test_fit_matches_saturated_solution() -> None:
    # One binary feature, no penalty: the MLE reproduces each group's rate exactly (1/4 and 3/4).
    x = [0, 0, 0, 0, 1, 1, 1, 1]
    y = [0, 0, 0, 1, 0, 1, 1, 1]
    model = fit_logistic(x, y, l2=0.0)
    assert model.converged
    np.testing.assert_allclose(model.predict_proba([0, 1]), [0.25, 0.75], atol=1e-10)
    coef = model.coefficients_original_units
    assert coef["(intercept)"] == pytest.approx(np.log(1 / 3))
    assert coef["x0"] == pytest.approx(np.log(3) - np.log(1 / 3))


def test_penalised_gradient_is_zero_at_solution() -> None:
    X, y = noisy_data()
    for l2 in (0.0, 1.0, 10.0):
        model = fit_logistic(X, y, l2=l2)
        assert model.converged
        np.testing.assert_allclose(penalised_gradient(model, X, y), 0.0, atol=1e-9)


def test_penalty_shrinks_weights_not_intercept() -> None:
    X, y = noisy_data()
    small, large = fit_logistic(X, y, l2=0.1), fit_logistic(X, y, l2=100.0)
    assert np.linalg.norm(large.weights) < np.linalg.norm(small.weights)
    # A huge penalty leaves only the intercept: the base rate's log-odds.
    huge = fit_logistic(X, y, l2=1e12)
    assert huge.intercept == pytest.approx(np.log(y.mean() / (1 - y.mean())), abs=1e-6)
    np.testing.assert_allclose(huge.weights, 0.0, atol=1e-9)


def test_standardisation_uses_training_statistics() -> None:
    X, y = noisy_data()
    model = fit_logistic(X, y)
    shifted = fit_logistic(X * 1000.0 + 5.0, y)  # standardised inside: same fit in other units
    new = np.array([[0.3, -1.0, 2.0], [1.5, 0.0, 0.0]])
    np.testing.assert_allclose(shifted.predict_proba(new * 1000.0 + 5.0), model.predict_proba(new), atol=1e-10)
    np.testing.assert_allclose(model.mean, X.mean(axis=0))
    np.testing.assert_allclose(model.scale, X.std(axis=0))


def test_constant_feature_gets_scale_one_and_weight_zero() -> None:
    X, y = noisy_data()
    Xc = np.column_stack([X[:, 0], np.full(len(X), 7.0)])
    model = fit_logistic(Xc, y, names=["dense", "constant"])
    assert model.scale[1] == 1.0
    assert model.coefficients["constant"] == pytest.approx(0.0, abs=1e-12)
    assert list(model.coefficients) == ["(intercept)", "dense", "constant"]


def test_separable_fit_ordered_like_feature() -> None:
    x = np.arange(8.0)
    y = [0, 0, 0, 0, 1, 1, 1, 1]
    p = fit_logistic(x, y).predict_proba(x)
    assert np.all(np.diff(p) > 0)
    assert p[0] < 0.5 < p[-1]


def test_fit_is_deterministic_and_serialisable() -> None:
    X, y = noisy_data()
    a, b = fit_logistic(X, y, names=["a", "b", "c"]), fit_logistic(X, y, names=["a", "b", "c"])
    assert a.to_json() == b.to_json()
    text = json.dumps(a.to_json(), allow_nan=False)
    assert json.loads(text)["features"] == ["a", "b", "c"]


def test_fit_errors() -> None:
    with pytest.raises(ValueError, match="both outcomes"):
        fit_logistic([1.0, 2.0, 3.0], [1, 1, 1])
    with pytest.raises(ValueError, match="one entry per question"):
        fit_logistic([1.0, 2.0, 3.0], [0, 1])
    with pytest.raises(ValueError, match="0/1"):
        fit_logistic([1.0, 2.0, 3.0], [0, 1, 2])
    with pytest.raises(ValueError, match="NaN"):
        fit_logistic([1.0, np.nan, 3.0], [0, 1, 1])
    with pytest.raises(ValueError, match="l2"):
        fit_logistic([1.0, 2.0, 3.0], [0, 1, 1], l2=-1.0)
    model = fit_logistic([[1.0, 0.0], [2.0, 1.0], [3.0, 0.0]], [0, 1, 1])
    with pytest.raises(ValueError, match="same columns"):
        model.predict_proba([[1.0, 2.0, 3.0]])


# ---------------------------------------------------------------------------------------------------- folds, CV


def test_folds_stratified_and_deterministic() -> None:
    y = [0] * 12 + [1] * 18
    folds = assign_folds(y, folds=3, seed=4)
    np.testing.assert_array_equal(folds, assign_folds(y, folds=3, seed=4))
    ya = np.array(y)
    for f in range(3):
        assert np.sum((folds == f) & (ya == 0)) == 4
        assert np.sum((folds == f) & (ya == 1)) == 6
    assert cv_scheme(y, 3, 4) == {"scheme": "stratified k-fold", "folds": 3, "requested_folds": 3, "seed": 4}


def test_leave_one_out_when_a_class_is_small() -> None:
    y = [0] * 9 + [1] * 30  # 9 < 2 * 5
    np.testing.assert_array_equal(assign_folds(y, folds=5), np.arange(39))
    assert cv_scheme(y)["scheme"] == "leave-one-out"
    assert cv_scheme([0, 1, 0, 1], folds=5)["folds"] == 4
    with pytest.raises(ValueError, match="folds"):
        assign_folds(y, folds=1)


def test_cv_probability_ignores_own_label() -> None:
    # Leave-one-out: row i is scored by a model fitted on the other rows only, so flipping y[i] leaves it alone.
    X, y = noisy_data(n=12)
    assert cv_scheme(y)["scheme"] == "leave-one-out"
    before = cross_validated_proba(X, y)
    for i in (0, 5, 11):
        flipped = y.copy()
        flipped[i] = 1 - flipped[i]
        after = cross_validated_proba(X, flipped)
        assert after[i] == before[i]
        assert not np.allclose(np.delete(after, i), np.delete(before, i))  # the others did see the label


def test_cv_single_class_training_part_predicts_base_rate() -> None:
    x = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    y = [1, 1, 1, 1, 1, 0]
    p = cross_validated_proba(x, y)  # leave-one-out; without row 5 the training rows are all 1
    assert p[5] == 1.0
    assert np.all((p[:5] > 0) & (p[:5] < 1))


def test_cv_on_separable_data() -> None:
    x = np.concatenate([np.arange(10.0), np.arange(20.0, 30.0)])
    y = [0] * 10 + [1] * 10
    p = cross_validated_proba(x, y)
    assert cv_scheme(y)["scheme"] == "stratified k-fold"
    assert p[10:].min() > p[:10].max()  # every right row above every wrong one
    assert np.argmax(p) == 19 and np.argmin(p) == 0
    assert accuracy_coverage(p, y)[0]["selective_accuracy"] == 1.0


def test_cv_deterministic_and_seed_matters_for_folds() -> None:
    X, y = noisy_data(n=40)
    np.testing.assert_array_equal(cross_validated_proba(X, y, seed=3), cross_validated_proba(X, y, seed=3))
    assert not np.array_equal(assign_folds(y, seed=3), assign_folds(y, seed=4))


# ---------------------------------------------------------------------------------------------------- the curve


def test_accuracy_coverage_by_hand() -> None:
    proba = [0.4, 0.9, 0.8, 0.1, 0.8]
    y = [1, 1, 0, 0, 1]
    points = accuracy_coverage(proba, y)
    assert [p["threshold"] for p in points] == [0.9, 0.8, 0.4, 0.1]
    assert [p["coverage"] for p in points] == pytest.approx([0.2, 0.6, 0.8, 1.0])
    assert [p["n_answered"] for p in points] == [1, 3, 4, 5]
    assert [p["n_correct"] for p in points] == [1, 2, 3, 3]
    assert [p["selective_accuracy"] for p in points] == pytest.approx([1.0, 2 / 3, 3 / 4, 3 / 5])
    assert points[1]["ci95"] == pytest.approx(list(wilson(2, 3)))
    # Trapezoid over coverage 0.2 → 1, divided by the span 0.8.
    area = 0.4 * (1 + 2 / 3) / 2 + 0.2 * (2 / 3 + 3 / 4) / 2 + 0.2 * (3 / 4 + 3 / 5) / 2
    assert area_under_curve(points) == pytest.approx(area / 0.8)
    base = answer_everything(y)
    assert base == {**points[-1], "threshold": None}


def test_curve_single_point_and_errors() -> None:
    points = accuracy_coverage([0.5, 0.5, 0.5], [1, 0, 1])
    assert len(points) == 1 and points[0]["coverage"] == 1.0
    assert area_under_curve(points) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="one entry per question"):
        accuracy_coverage([0.5, 0.4], [1])
    with pytest.raises(ValueError, match="no points"):
        area_under_curve([])


# ---------------------------------------------------------------------------------------------------- end to end


def test_selective_answering_report() -> None:
    X, y = noisy_data(n=30)
    rows = rows_of(X)
    rows[3]["dense"] = None
    del rows[7]["coverage"]
    rows[9]["judge"] = float("nan")
    ids = [f"q{i}" for i in range(30)]
    result = selective_answering(rows, list(y), ["dense", "coverage", "judge"], ids=ids)
    json.dumps(result, allow_nan=False)
    assert result["n"] == 27 and result["n_input"] == 30
    assert [(r["row"], r["id"], r["reason"]) for r in result["left_out"]] == [
        (3, "q3", "missing feature(s): dense"),
        (7, "q7", "missing feature(s): coverage"),
        (9, "q9", "missing feature(s): judge"),
    ]
    assert result["features"] == ["dense", "coverage", "judge"]
    assert list(result["coefficients"]) == ["(intercept)", "dense", "coverage", "judge"]
    assert result["coefficients"]["dense"] > 0  # the informative signal
    assert result["cv"] == {"scheme": "stratified k-fold", "folds": 5, "requested_folds": 5, "seed": 0}
    assert result["curve"][-1]["coverage"] == 1.0
    assert result["answer_everything"]["selective_accuracy"] == pytest.approx(np.mean(np.delete(y, [3, 7, 9])))
    assert result["auc"] == pytest.approx(area_under_curve(result["curve"]))
    assert [s["id"] for s in result["scored"]] == [i for i in ids if i not in ("q3", "q7", "q9")]
    assert result["note"] == NOTE
    again = selective_answering(rows, list(y), ["dense", "coverage", "judge"], ids=ids)
    assert json.dumps(again) == json.dumps(result)


def test_selective_answering_one_class() -> None:
    rows = [{"dense": float(i)} for i in range(5)]
    result = selective_answering(rows, [1] * 5, ["dense"])
    assert result["coefficients"] is None and "warning" in result
    assert result["auc"] == 1.0 and len(result["curve"]) == 1
    json.dumps(result, allow_nan=False)


def test_selective_answering_errors() -> None:
    rows = [{"dense": 0.1 * i, "judge": i % 2} for i in range(6)]
    y = [0, 1, 0, 1, 1, 0]
    with pytest.raises(ValueError, match="one entry per question"):
        selective_answering(rows, y[:5], ["dense"])
    with pytest.raises(ValueError, match="0/1"):
        selective_answering(rows, [0, 1, 2, 1, 1, 0], ["dense"])
    with pytest.raises(ValueError, match="0/1"):
        selective_answering(rows, [0, 1, None, 1, 1, 0], ["dense"])
    with pytest.raises(ValueError, match="unknown feature name"):
        selective_answering(rows, y, ["dense", "coverag"])
    with pytest.raises(ValueError, match="repeat"):
        selective_answering(rows, y, ["dense", "dense"])
    with pytest.raises(ValueError, match="at least one feature"):
        selective_answering(rows, y, [])
    sparse = [dict(r, dense=None) if i < 3 else r for i, r in enumerate(rows)]
    with pytest.raises(ValueError, match="at least 4 rows"):
        selective_answering(sparse, y, ["dense"])
    with pytest.raises(ValueError, match="not a number"):
        selective_answering([dict(r, judge="yes") for r in rows], y, ["judge"])
