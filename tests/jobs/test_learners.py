"""jobs/learners.py, the numpy learners of `neardup train` and `neardup label`, held equal to scikit-learn's
LogisticRegression and GradientBoostingClassifier (the reference; training itself never imports it)."""
from __future__ import annotations

import numpy as np
import pytest

from neardup.core.item_scoring import PairModel
from neardup.jobs import learners, train


def labelled(seed: int, rows: int = 240) -> tuple[np.ndarray, np.ndarray]:
    """Continuous features (no ties: every split is unique) and labels that depend on them non-linearly."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 5))
    return x, x[:, 0] + 0.6 * x[:, 1] ** 2 - 0.4 * x[:, 2] + rng.normal(scale=0.5, size=rows) > 0.4


@pytest.mark.parametrize("penalty", [1.0, 1e-6])
def test_the_logistic_regression_is_scikit_learns(penalty):
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415 - seconds to load: not at collection

    x, y = labelled(1)
    weight = np.random.default_rng(2).uniform(0.1, 3.0, len(y))
    ours = learners.fit_logistic(x, y, weight, penalty=penalty)
    reference = LogisticRegression(C=1 / penalty, tol=1e-12, max_iter=100_000).fit(x, y, sample_weight=weight)
    assert np.allclose(ours.coef, reference.coef_[0], atol=1e-5)
    assert ours.intercept == pytest.approx(reference.intercept_[0], abs=1e-5)


def test_the_boosting_fits_the_training_rows_as_scikit_learns_does():
    """The same greedy trees on the training rows (scikit-learn may break a tie between features that split a
    small node alike otherwise, so rows elsewhere may land in other leaves)."""
    from sklearn.ensemble import GradientBoostingClassifier  # noqa: PLC0415 - seconds to load: not at collection

    x, y = labelled(3)
    ours = learners.fit_boosting(x, y)
    reference = GradientBoostingClassifier(n_estimators=learners.TREES, max_depth=learners.DEPTH,
                                           learning_rate=learners.LEARNING_RATE, random_state=0).fit(x, y)
    assert np.allclose(ours.decision(x), reference.decision_function(x), atol=1e-6)
    unseen, truth = labelled(4)
    assert np.mean((ours.decision(unseen) > 0) == truth) >= np.mean(reference.predict(unseen) == truth) - 0.05


def test_a_stored_boosting_scores_as_it_was_fitted():
    """What train stores (_dump) is what the server walks: the same decision values."""
    x, y = labelled(5, rows=120)
    fitted = learners.fit_boosting(x, y, trees=20)
    document = {"format": "neardup-pair-model", "version": 1, "config_digest": "d", "threshold": 0.5,
                "calibration": {"a": 1.0, "b": 0.0}, "inputs": [f"c{i}" for i in range(5)],
                **train._dump("gradient-boosting", fitted)}
    model = PairModel(document)
    assert np.allclose(model.raw(x), fitted.decision(x))


def test_folds_keep_each_class_share():
    y = np.array([True] * 10 + [False] * 37)
    fold = learners.stratified_folds(y, 5)
    for k in range(5):
        assert 2 == (fold[y] == k).sum()
        assert 7 <= (fold[~y] == k).sum() <= 8
    assert not np.array_equal(fold, learners.stratified_folds(y, 5, seed=1))
