"""Selective answering (Joren et al., "Sufficient Context", ICLR 2025): abstain when a small model says the
system is likely wrong.

For each question we have a few signals (the retrieval gate's best dense score, the aspect coverage, the LLM
judge's sufficiency verdict, …) and an outcome ``y``: 1 when the system behaved right (answered correctly, or
declined an unanswerable question), else 0. A logistic regression estimates ``P(y = 1 | signals)``; the system
answers when that probability is at least a threshold ``t`` and abstains otherwise. Sweeping ``t`` traces an
accuracy-versus-coverage curve:

- coverage = share of questions answered (not abstained);
- selective accuracy = share right among the answered ones.

The probabilities behind the curve are out of sample: each question is scored by a model fitted without it
(stratified K-fold cross-validation, or leave-one-out when a class is small), so the curve does not reward a
model for memorising its own training rows (the model: :mod:`rag_lib.evaluation.logistic`). NumPy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag_lib.evaluation.logistic import COEFFICIENT_SCALE, as_labels, cross_validated_proba, cv_scheme, fit_logistic
from rag_lib.evaluation.stats import wilson

NOTE = "probabilities are cross-validated (out of sample); the coefficients shown are fitted on all rows"


# ---------------------------------------------------------------------------------------------------- the curve


def _point(threshold: float | None, n_correct: int, n_answered: int, n: int) -> dict[str, Any]:
    interval = wilson(n_correct, n_answered)
    return {
        "threshold": threshold,
        "coverage": n_answered / n,
        "n_answered": int(n_answered),
        "n_correct": int(n_correct),
        "selective_accuracy": n_correct / n_answered,
        "ci95": [float(interval[0]), float(interval[1])] if interval is not None else None,
    }


def accuracy_coverage(proba: Any, y: Any) -> list[dict[str, Any]]:
    """Selective accuracy against coverage, one point per distinct threshold.

    At threshold ``t`` the system answers the questions with ``proba >= t`` and abstains on the rest. The
    thresholds are the distinct probabilities in descending order, so coverage grows along the list and the
    last point (the smallest probability) answers everything. Tied probabilities enter together.

    Parameters
    ----------
    proba : sequence of float
        ``P(y = 1)`` per question (out of sample, e.g. from :func:`cross_validated_proba`).
    y : sequence of 0/1
        Whether the system behaved right on each question.

    Returns
    -------
    list of dict
        Each ``{"threshold", "coverage", "n_answered", "n_correct", "selective_accuracy", "ci95": [lo, hi]}``;
        ``ci95`` is the Wilson 95% interval of the selective accuracy
        (:func:`rag_lib.evaluation.stats.wilson`).
    """
    p = np.asarray(proba, dtype=np.float64).reshape(-1)
    ya = as_labels(y)
    if len(p) != len(ya):
        raise ValueError(f"proba and y must have one entry per question; got {len(p)} and {len(ya)}")
    if len(p) == 0:
        raise ValueError("accuracy_coverage got no questions")
    if not np.isfinite(p).all():
        raise ValueError("proba has NaN or infinite values; score every question first")
    order = np.argsort(-p, kind="stable")
    p_sorted, y_sorted = p[order], ya[order]
    correct = np.cumsum(y_sorted)
    n = len(p)
    points = []
    for i in range(n):
        if i + 1 < n and p_sorted[i + 1] == p_sorted[i]:
            continue  # the last row of a tie block closes the point
        points.append(_point(float(p_sorted[i]), int(correct[i]), i + 1, n))
    return points


def answer_everything(y: Any) -> dict[str, Any]:
    """The baseline "never abstain": coverage 1, selective accuracy = share of ``y`` that is 1 (threshold None)."""
    ya = as_labels(y)
    if len(ya) == 0:
        raise ValueError("answer_everything got no questions")
    return _point(None, int(ya.sum()), len(ya), len(ya))


def area_under_curve(points: Sequence[Mapping[str, Any]]) -> float:
    """Mean selective accuracy over coverage: trapezoid rule over the points, divided by the coverage span.

    The span runs from the smallest coverage of the points (the top tie block) to the largest (1 for a curve
    from :func:`accuracy_coverage`); below the first point no threshold can answer fewer questions, so that
    stretch is not part of the curve. A single point (all probabilities tied) returns its selective accuracy.
    Answering everything regardless of the model scores the base rate; a useful model scores above it.
    """
    if not points:
        raise ValueError("area_under_curve got no points: compute them with accuracy_coverage first")
    pairs = sorted((float(pt["coverage"]), float(pt["selective_accuracy"])) for pt in points)
    cov = np.array([c for c, _ in pairs])
    acc = np.array([a for _, a in pairs])
    span = cov[-1] - cov[0]
    if span <= 0:
        return float(acc.mean())
    area = float(np.sum((cov[1:] - cov[:-1]) * (acc[1:] + acc[:-1]) / 2.0))
    return area / span


# ---------------------------------------------------------------------------------------------------- end to end


def _feature_value(value: Any, name: str, label: str) -> float | None:
    """A row's feature as float, ``None`` when missing (None or NaN); a clear error for non-numbers."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (bool, int, float, np.integer, np.floating)):
        raise ValueError(f"feature {name!r} of {label} is {value!r}, not a number: map it to a number "
                         "first (e.g. the judge's verdict to 1 sufficient / 0 insufficient)")
    out = float(value)
    if math.isnan(out):
        return None
    if math.isinf(out):
        raise ValueError(f"feature {name!r} of {label} is {out}: pass finite values, or None when missing")
    return out


def selective_answering(
    features: Sequence[Mapping[str, float | None]],
    y: Sequence[int],
    names: Sequence[str],
    folds: int = 5,
    seed: int = 0,
    l2: float = 1.0,
    ids: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Fit the abstention model on the given signals and report its out-of-sample accuracy-coverage curve.

    Rows with a missing feature (key absent, ``None`` or NaN) are left out and listed with the reason. The
    curve uses :func:`cross_validated_proba`; the coefficients are fitted on all kept rows, for display only.

    Parameters
    ----------
    features : sequence of mapping
        One mapping per question, feature name → value (bools count as 1/0).
    y : sequence of 0/1
        1 when the system behaved right on the question (answered correctly, or declined an unanswerable one).
    names : sequence of str
        The features to use, in this order; each must occur in at least one row.
    folds, seed : int
        Cross-validation folds requested and the seed of their shuffle.
    l2 : float
        Penalty of :func:`fit_logistic`.
    ids : sequence of str, optional
        Question ids, for the ``left_out`` and ``scored`` lists (row numbers otherwise).

    Returns
    -------
    dict
        ``{"n", "n_input", "left_out": [{"row", "id", "reason"}], "features", "coefficients",
        "coefficient_scale", "cv": {"scheme", "folds", "requested_folds", "seed"}, "curve", "auc",
        "answer_everything", "scored": [{"row", "id", "proba", "y"}], "note"}``. ``coefficients`` is ``None``
        (with a ``warning``) when all kept outcomes are equal. JSON-serialisable, no NaN.

    Raises
    ------
    ValueError
        Mismatched lengths, labels not 0/1, no or duplicate or unknown feature names, non-numeric feature
        values, or fewer than 4 rows with every feature present.
    """
    rows = list(features)
    labels = as_labels(y)
    if len(rows) != len(labels):
        raise ValueError(f"features and y must have one entry per question; got {len(rows)} feature rows and "
                         f"{len(labels)} labels: pass them in the same order and length")
    if ids is not None and len(ids) != len(rows):
        raise ValueError(f"ids must have one entry per question; got {len(ids)} ids for {len(rows)} rows")
    names = list(names)
    if not names:
        raise ValueError("selective_answering needs at least one feature name in `names`")
    if len(set(names)) != len(names):
        raise ValueError(f"feature names repeat in {names}: give each feature once")
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise ValueError(f"row {i} of features is a {type(row).__name__}, not a mapping of feature → value")
    present = set().union(*(row.keys() for row in rows)) if rows else set()
    unknown = [name for name in names if name not in present]
    if unknown:
        raise ValueError(f"unknown feature name(s) {unknown}: no row has them; the rows have "
                         f"{sorted(map(str, present))}: fix `names` or add the feature to the rows")

    kept: list[int] = []
    matrix: list[list[float]] = []
    left_out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        label = f"row {i}" if ids is None else f"row {i} ({ids[i]})"
        values = [_feature_value(row.get(name), name, label) for name in names]
        missing = [name for name, v in zip(names, values, strict=True) if v is None]
        if missing:
            left_out.append({"row": i, "id": None if ids is None else ids[i],
                             "reason": "missing feature(s): " + ", ".join(missing)})
            continue
        kept.append(i)
        matrix.append([float(v) for v in values if v is not None])
    if len(kept) < 4:
        raise ValueError(f"selective_answering needs at least 4 rows with every feature present; got {len(kept)} "
                         f"of {len(rows)} ({len(left_out)} left out for a missing feature): supply more questions "
                         "or drop a feature that is often missing")

    X = np.asarray(matrix, dtype=np.float64)
    yk = labels[kept]
    proba = cross_validated_proba(X, yk, folds=folds, seed=seed, l2=l2)
    curve = accuracy_coverage(proba, yk)
    result: dict[str, Any] = {
        "n": len(kept),
        "n_input": len(rows),
        "left_out": left_out,
        "features": names,
    }
    if yk.min() == yk.max():
        result["coefficients"] = None
        result["warning"] = (f"all {len(kept)} kept outcomes are {int(yk[0])}: no model can separate them, so "
                             "the probabilities are the base rate and no coefficients are fitted")
    else:
        model = fit_logistic(X, yk, l2=l2, names=names)
        result["coefficients"] = model.coefficients
    result["coefficient_scale"] = COEFFICIENT_SCALE
    result["cv"] = cv_scheme(yk, folds, seed)
    result["curve"] = curve
    result["auc"] = area_under_curve(curve)
    result["answer_everything"] = answer_everything(yk)
    result["scored"] = [{"row": i, "id": None if ids is None else ids[i], "proba": float(p), "y": int(t)}
                        for i, p, t in zip(kept, proba, yk, strict=True)]
    result["note"] = NOTE
    return result
