"""The learners `neardup train` compares and `neardup label` refits, in numpy: an L2 logistic regression (Newton's
method), a gradient boosting of shallow regression trees (as scikit-learn's GradientBoostingClassifier fits it),
stratified folds and cross-validated decision values. A few hundred pairs of a few dozen features need no
scikit-learn, whose import alone takes longer than the fit. Trees are arrays, as core/item_scoring.py walks them.
Why: docs/fields.md ("A trained pair model").
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

#: L2 penalty of the logistic regression's coefficients (not its intercept), and Newton's steps at most.
PENALTY, STEPS = 1.0, 50
#: Gradient boosting's size: shallow trees, as a handful of per-field features needs no more.
TREES, DEPTH, LEARNING_RATE = 150, 3, 0.1
#: A leaf's Newton step where its hessian vanishes (every row of it predicted with certainty).
_TINY = 1e-150


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function, overflow-free."""
    return 1.0 / (1.0 + np.exp(-np.clip(x, -500, 500)))


class Logistic(NamedTuple):
    coef: np.ndarray
    intercept: float

    def decision(self, x: np.ndarray) -> np.ndarray:
        return x @ self.coef + self.intercept

    def probability(self, x: np.ndarray) -> np.ndarray:
        return sigmoid(self.decision(x))


def fit_logistic(x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None,
                 penalty: float = PENALTY) -> Logistic:
    """Minimises the weighted log loss plus penalty/2 times the squared coefficients (scikit-learn's
    LogisticRegression with C = 1/penalty) by Newton's method."""
    x = np.hstack([np.asarray(x, np.float64), np.ones((len(x), 1))])
    y = np.asarray(y, np.float64)
    weight = np.ones(len(y)) if weight is None else np.asarray(weight, np.float64)
    ridge = penalty * np.eye(x.shape[1])
    ridge[-1, -1] = 0.0
    beta = np.zeros(x.shape[1])
    for _ in range(STEPS):
        p = sigmoid(x @ beta)
        gradient = x.T @ (weight * (p - y)) + ridge @ beta
        hessian = (x.T * (weight * p * (1 - p))) @ x + ridge + 1e-10 * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return Logistic(beta[:-1], float(beta[-1]))


class Tree(NamedTuple):
    feature: list[int]
    threshold: list[float]
    left: list[int]
    right: list[int]
    value: list[float]

    def predict(self, x: np.ndarray) -> np.ndarray:
        node = np.zeros(len(x), np.int64)
        left, right = np.array(self.left), np.array(self.right)
        feature, threshold = np.array(self.feature), np.array(self.threshold)
        for _ in range(len(self.left)):
            inner = left[node] >= 0
            if not inner.any():
                break
            rows = np.flatnonzero(inner)
            goes_left = x[rows, feature[node[rows]]] <= threshold[node[rows]]
            node[rows] = np.where(goes_left, left[node[rows]], right[node[rows]])
        return np.array(self.value)[node]


def _best_split(x: np.ndarray, residual: np.ndarray) -> tuple[int, float, float] | None:
    """(feature, threshold, gain) of the split of these rows with the largest squared-error gain, or None."""
    n = len(residual)
    order = np.argsort(x, axis=0, kind="stable")
    values = np.take_along_axis(x, order, axis=0)
    sums = np.cumsum(residual[order], axis=0)[:-1]             # left sums after 1..n-1 rows
    counts = np.arange(1, n)[:, None]
    total = residual.sum()
    gain = sums ** 2 / counts + (total - sums) ** 2 / (n - counts) - total ** 2 / n
    gain[values[1:] <= values[:-1] + 1e-7] = -np.inf          # no split between equal values
    if not np.isfinite(gain).any():
        return None
    position, feature = np.unravel_index(np.argmax(gain), gain.shape)
    if gain[position, feature] <= 0:
        return None
    threshold = (values[position, feature] + values[position + 1, feature]) / 2
    return int(feature), float(threshold), float(gain[position, feature])


def _grow(x: np.ndarray, residual: np.ndarray, hessian: np.ndarray, depth: int) -> Tree:
    """A regression tree on the residuals, depth first; each leaf's value the Newton step of its rows."""
    tree = Tree([], [], [], [], [])

    def node(rows: np.ndarray, level: int) -> int:
        at = len(tree.left)
        for column in tree:
            column.append(0)
        split = _best_split(x[rows], residual[rows]) if level < depth and len(rows) >= 2 else None
        if split is None:
            step = hessian[rows].sum()
            tree.feature[at], tree.threshold[at], tree.left[at], tree.right[at] = -2, -2.0, -1, -1
            tree.value[at] = float(residual[rows].sum() / step) if abs(step) >= _TINY else 0.0
            return at
        feature, threshold, _ = split
        goes_left = x[rows, feature] <= threshold
        tree.feature[at], tree.threshold[at] = feature, threshold
        tree.value[at] = float(residual[rows].mean())
        tree.left[at] = node(rows[goes_left], level + 1)
        tree.right[at] = node(rows[~goes_left], level + 1)
        return at

    node(np.arange(len(residual)), 0)
    return tree


class Boosting(NamedTuple):
    init: float
    learning_rate: float
    trees: list[Tree]

    def decision(self, x: np.ndarray) -> np.ndarray:
        return self.init + self.learning_rate * sum((tree.predict(x) for tree in self.trees), np.zeros(len(x)))


def fit_boosting(x: np.ndarray, y: np.ndarray, trees: int = TREES, depth: int = DEPTH,
                 learning_rate: float = LEARNING_RATE) -> Boosting:
    """Gradient boosting with log loss (docs/fields.md)."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    prior = np.clip(y.mean(), 1e-12, 1 - 1e-12)
    init = float(np.log(prior / (1 - prior)))
    raw = np.full(len(y), init)
    grown = []
    for _ in range(trees):
        p = sigmoid(raw)
        tree = _grow(x, y - p, p * (1 - p), depth)
        grown.append(tree)
        raw += learning_rate * tree.predict(x)
    return Boosting(init, learning_rate, grown)


def stratified_folds(y: np.ndarray, folds: int, seed: int = 0) -> np.ndarray:
    """Each row's fold: every class shuffled and dealt round the folds, so each fold holds its share of each."""
    rng = np.random.default_rng(seed)
    fold = np.empty(len(y), np.int64)
    start = 0
    for label in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == label))
        fold[rows] = (np.arange(len(rows)) + start) % folds
        start += len(rows)
    return fold


def cross_validated(fit: Callable[[np.ndarray, np.ndarray], object], x: np.ndarray, y: np.ndarray,
                    folds: int, seed: int = 0) -> np.ndarray:
    """Each row's decision value by the model fitted on the other folds."""
    fold = stratified_folds(y, folds, seed)
    decision = np.empty(len(y))
    for k in range(folds):
        held = fold == k
        decision[held] = fit(x[~held], y[~held]).decision(x[held])
    return decision
