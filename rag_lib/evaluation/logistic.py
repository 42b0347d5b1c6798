"""An L2-penalised logistic regression and its stratified cross-validation, in NumPy (no scikit-learn).

:mod:`rag_lib.evaluation.selective` fits it to decide when to abstain: ``P(y = 1 | signals)`` scored out of
sample by :func:`cross_validated_proba` (stratified K-fold, or leave-one-out when a class is small).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

INTERCEPT = "(intercept)"
COEFFICIENT_SCALE = ("log-odds per standard deviation of each feature (features are standardised inside the "
                     "model); '(intercept)' is the log-odds at the feature means")


# ---------------------------------------------------------------------------------------------------- validation


def _as_matrix(X: Any, what: str = "X") -> np.ndarray:
    """``X`` as a 2-D float array; a 1-D input is one feature (a column)."""
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{what} must be a 2-D array (rows = questions, columns = features); got {arr.ndim} dims")
    if not np.isfinite(arr).all():
        raise ValueError(f"{what} has NaN or infinite values; drop or impute those rows first "
                         "(selective_answering drops rows with a missing feature)")
    return arr


def as_labels(y: Any, n: int | None = None) -> np.ndarray:
    """``y`` as a 1-D int array of 0/1; a clear error for anything else."""
    if np.ndim(y) != 1:
        raise ValueError(f"y must be a flat sequence of 0/1, one per question; got {np.ndim(y)} dimensions")
    values = list(y)
    bad = [v for v in values if isinstance(v, str) or v is None or v not in (0, 1)]
    if bad:
        raise ValueError(f"y must be 0/1 (1 = the system behaved right, 0 = it did not); got {bad[:5]!r}: "
                         "map the outcomes to 0/1 first")
    arr = np.asarray([int(v) for v in values], dtype=np.int64)
    if n is not None and len(arr) != n:
        raise ValueError(f"X and y must have one entry per question; got {n} rows of features and {len(arr)} "
                         "labels: pass them in the same order and length")
    return arr


# ---------------------------------------------------------------------------------------------------- the model


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """Logistic function without overflow."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))


@dataclass(frozen=True)
class LogisticModel:
    """A fitted L2-penalised logistic regression on standardised features.

    Attributes
    ----------
    names : tuple of str
        Feature names, in column order (``x0``, ``x1``, … when none were given).
    mean, scale : np.ndarray
        Training means and standard deviations of the features (a constant feature has scale 1);
        :meth:`predict_proba` standardises new rows with these.
    intercept : float
        Log-odds at the feature means.
    weights : np.ndarray
        Log-odds per standard deviation of each feature.
    l2 : float
        Penalty ``l2/2 · ||weights||²`` (the intercept is not penalised).
    n_iter : int
        Newton iterations run.
    converged : bool
        Whether the step fell below the tolerance before ``max_iter``.
    """

    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    intercept: float
    weights: np.ndarray
    l2: float
    n_iter: int
    converged: bool

    def decision_function(self, X: Any) -> np.ndarray:
        """Log-odds of ``y = 1`` for each row of ``X`` (same columns as in training)."""
        Z = self._standardise(X)
        return self.intercept + Z @ self.weights

    def predict_proba(self, X: Any) -> np.ndarray:
        """``P(y = 1)`` for each row of ``X`` (same columns as in training), as a 1-D float array.

        Parameters
        ----------
        X : array-like, shape (n, d) — or (n,) when the model has one feature

        Returns
        -------
        np.ndarray, shape (n,)
        """
        return _sigmoid(self.decision_function(X))

    def _standardise(self, X: Any) -> np.ndarray:
        arr = _as_matrix(X)
        if arr.shape[1] != len(self.names):
            raise ValueError(f"the model was fitted on {len(self.names)} features {list(self.names)}; "
                             f"got {arr.shape[1]} columns: pass the same columns in the same order")
        return (arr - self.mean) / self.scale

    @property
    def coefficients(self) -> dict[str, float]:
        """``{"(intercept)": b, name: w, …}``: log-odds per standard deviation of each feature."""
        out = {INTERCEPT: float(self.intercept)}
        out.update({name: float(w) for name, w in zip(self.names, self.weights, strict=True)})
        return out

    @property
    def coefficients_original_units(self) -> dict[str, float]:
        """The same model in the features' own units: log-odds per unit, intercept at all features = 0."""
        w = self.weights / self.scale
        out = {INTERCEPT: float(self.intercept - np.sum(w * self.mean))}
        out.update({name: float(v) for name, v in zip(self.names, w, strict=True)})
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable description (plain floats and lists)."""
        return {
            "features": list(self.names),
            "coefficients": self.coefficients,
            "coefficient_scale": COEFFICIENT_SCALE,
            "coefficients_original_units": self.coefficients_original_units,
            "mean": [float(v) for v in self.mean],
            "scale": [float(v) for v in self.scale],
            "l2": float(self.l2),
            "n_iter": int(self.n_iter),
            "converged": bool(self.converged),
        }


def _objective(A: np.ndarray, y: np.ndarray, beta: np.ndarray, l2: float) -> float:
    """Penalised negative log-likelihood: ``Σ log(1 + e^z) − y·z + l2/2 · ||w||²`` (intercept unpenalised)."""
    z = A @ beta
    return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * np.sum(beta[1:] ** 2))


def penalised_gradient(model: LogisticModel, X: Any, y: Any) -> np.ndarray:
    """Gradient of the penalised objective at ``model``, in its standardised parameters ``(intercept, weights)``.

    About zero at the solution of :func:`fit_logistic` on the same ``X``, ``y`` (a check of the fit).
    """
    Z = model._standardise(X)
    yy = as_labels(y, len(Z)).astype(np.float64)
    A = np.column_stack([np.ones(len(Z)), Z])
    beta = np.concatenate([[model.intercept], model.weights])
    penalty = np.concatenate([[0.0], model.l2 * model.weights])
    return A.T @ (_sigmoid(A @ beta) - yy) + penalty


def fit_logistic(
    X: Any,
    y: Any,
    l2: float = 1.0,
    max_iter: int = 100,
    tol: float = 1e-8,
    names: Sequence[str] | None = None,
) -> LogisticModel:
    """Fit ``P(y = 1 | X)`` by Newton's method (IRLS) with an L2 penalty on the weights.

    Features are standardised inside the model (training mean and standard deviation, stored on the model; a
    constant feature gets scale 1, so its weight is 0). The objective is
    ``Σ_i [log(1 + e^{z_i}) − y_i z_i] + l2/2 · ||w||²`` with ``z = b + Z w``; the intercept ``b`` is not
    penalised. Each Newton step is halved until the objective does not increase, so the fit is monotone even
    where the unpenalised problem has no finite solution (separable data with ``l2 = 0``: the weights then grow
    until the probabilities saturate in floating point; keep ``l2 > 0`` for such data). Deterministic: no
    randomness anywhere.

    Parameters
    ----------
    X : array-like, shape (n, d) — or (n,) for one feature
        Finite feature values.
    y : sequence of 0/1
        Outcomes; both classes must occur.
    l2 : float
        Penalty strength (>= 0) on the standardised weights.
    max_iter : int
        Newton iterations at most.
    tol : float
        Stop when the largest parameter change of a step is below ``tol``.
    names : sequence of str, optional
        Feature names for :attr:`LogisticModel.coefficients`; ``x0``, ``x1``, … by default.

    Returns
    -------
    LogisticModel

    Raises
    ------
    ValueError
        Mismatched lengths, labels not 0/1, non-finite features, a negative ``l2``, or a single class (its
        intercept would diverge: predict the base rate instead, as :func:`cross_validated_proba` does).
    """
    Xa = _as_matrix(X)
    n, d = Xa.shape
    ya = as_labels(y, n).astype(np.float64)
    if n == 0:
        raise ValueError("fit_logistic got no rows: pass at least one row of each class")
    if l2 < 0 or not math.isfinite(l2):
        raise ValueError(f"l2 must be a finite number >= 0; got {l2}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1; got {max_iter}")
    if ya.min() == ya.max():
        raise ValueError(f"fit_logistic needs both outcomes (0 and 1); all {n} labels are {int(ya[0])}: "
                         "with one class the intercept diverges, so predict that class's base rate instead")
    feature_names = tuple(names) if names is not None else tuple(f"x{j}" for j in range(d))
    if len(feature_names) != d:
        raise ValueError(f"got {len(feature_names)} names for {d} feature columns: give one name per column")

    mean = Xa.mean(axis=0)
    scale = Xa.std(axis=0)
    scale = np.where(scale > 1e-12 * np.maximum(1.0, np.abs(mean)), scale, 1.0)
    A = np.column_stack([np.ones(n), (Xa - mean) / scale])
    penalty = np.full(d + 1, float(l2))
    penalty[0] = 0.0

    rate = ya.mean()
    beta = np.zeros(d + 1)
    beta[0] = math.log(rate / (1.0 - rate))  # start at the base rate: the exact answer when no feature helps
    current = _objective(A, ya, beta, l2)
    converged = False
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        p = _sigmoid(A @ beta)
        grad = A.T @ (p - ya) + penalty * beta
        hess = (A * (p * (1.0 - p))[:, None]).T @ A + np.diag(penalty)
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        factor = 1.0
        for _ in range(60):
            candidate = beta - factor * step
            value = _objective(A, ya, candidate, l2)
            if value <= current:
                break
            factor *= 0.5
        else:  # no decrease even for a tiny step: at the optimum up to rounding
            converged = True
            break
        change = float(np.max(np.abs(factor * step)))
        beta, current = candidate, value
        if change < tol:
            converged = True
            break
    return LogisticModel(names=feature_names, mean=mean, scale=scale, intercept=float(beta[0]),
                         weights=beta[1:].copy(), l2=float(l2), n_iter=n_iter, converged=converged)


# ---------------------------------------------------------------------------------------------------- out of sample


def _split(y: np.ndarray, folds: int, seed: int) -> tuple[np.ndarray, bool]:
    """Fold number of each row and whether the split is leave-one-out (see :func:`assign_folds`)."""
    n = len(y)
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ValueError(f"folds must be an integer >= 2; got {folds!r}")
    counts = [int(np.sum(y == c)) for c in (0, 1)]
    if folds >= n or min(c for c in counts if c > 0) < 2 * folds:
        return np.arange(n), True
    rng = np.random.default_rng(seed)
    assignment = np.empty(n, dtype=np.int64)
    offset = 0
    for c in (0, 1):
        idx = rng.permutation(np.flatnonzero(y == c))
        assignment[idx] = (offset + np.arange(len(idx))) % folds
        offset = (offset + len(idx)) % folds
    return assignment, False


def assign_folds(y: Any, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Fold number of each row: stratified K-fold, or leave-one-out when a class is small.

    Leave-one-out (row ``i`` in fold ``i``) when ``folds >= n`` or when a class present in ``y`` has fewer
    than ``2 · folds`` rows (stratified folds would then hold at most one row of that class); otherwise each
    class is shuffled by :func:`numpy.random.default_rng` (``seed``) and dealt round-robin into the folds,
    continuing from class to class so that the fold sizes differ by at most one. Same ``y`` and seed, same
    folds.

    Returns
    -------
    np.ndarray of int, shape (n,)
    """
    if len(y) == 0:
        raise ValueError("assign_folds got no rows")
    return _split(as_labels(y), folds, seed)[0]


def cv_scheme(y: Any, folds: int = 5, seed: int = 0) -> dict[str, Any]:
    """How :func:`cross_validated_proba` splits these labels: ``{"scheme", "folds", "requested_folds", "seed"}``.

    ``scheme`` is ``"stratified k-fold"`` or ``"leave-one-out"``; ``folds`` is the number of folds used.
    """
    assignment, loo = _split(as_labels(y), folds, seed)
    return {"scheme": "leave-one-out" if loo else "stratified k-fold",
            "folds": len(np.unique(assignment)), "requested_folds": int(folds), "seed": int(seed)}


def cross_validated_proba(X: Any, y: Any, folds: int = 5, seed: int = 0, l2: float = 1.0) -> np.ndarray:
    """Out-of-sample ``P(y = 1)`` for every row: each row is scored by a model fitted without its fold.

    Folds come from :func:`assign_folds` (stratified K-fold with a fixed seed; leave-one-out when a class has
    fewer than ``2 · folds`` rows). A fold whose training part has only one class predicts that class's base
    rate there (1.0 if the training rows are all 1, 0.0 if all 0), since a logistic fit would diverge.

    Parameters
    ----------
    X : array-like, shape (n, d) — or (n,) for one feature
    y : sequence of 0/1
    folds : int
        Requested number of folds (>= 2).
    seed : int
        Seed of the fold shuffle.
    l2 : float
        Penalty of :func:`fit_logistic`.

    Returns
    -------
    np.ndarray of float, shape (n,)
    """
    Xa = _as_matrix(X)
    ya = as_labels(y, len(Xa))
    if len(ya) < 2:
        raise ValueError(f"cross_validated_proba needs at least 2 rows; got {len(ya)}")
    assignment = assign_folds(ya, folds, seed)
    proba = np.empty(len(ya), dtype=np.float64)
    for f in np.unique(assignment):
        test = assignment == f
        train_y = ya[~test]
        if train_y.min() == train_y.max():
            proba[test] = float(train_y[0])
            continue
        model = fit_logistic(Xa[~test], train_y, l2=l2)
        proba[test] = model.predict_proba(Xa[test])
    return proba
