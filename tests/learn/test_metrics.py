"""Accuracy, R^2 and the mean squared error are NumPy arithmetic (so ``score`` and ``train`` do
not import ``sklearn.metrics``) and give what scikit-learn's functions give."""

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, mean_squared_error as sk_mse, r2_score

from dask_kernels.learn.metrics import accuracy, mean_squared_error, model_score, r2


@pytest.mark.parametrize("seed", range(5))
def test_equal_to_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    y, pred = rng.integers(0, 4, 200), rng.integers(0, 4, 200)
    assert accuracy(y, pred) == accuracy_score(y, pred)
    names = np.array(["a", "b", "c"], dtype=object)
    assert accuracy(names[y % 3], names[pred % 3].astype(str)) == accuracy_score(names[y % 3], names[pred % 3])
    t, p = rng.normal(size=200), rng.normal(size=200)
    assert r2(t, p) == pytest.approx(r2_score(t, p), rel=1e-12)
    assert mean_squared_error(t, p) == pytest.approx(sk_mse(t, p), rel=1e-12)


def test_constant_labels_and_a_single_row_as_scikit_learn():
    assert r2([2.0, 2.0], [2.0, 2.0]) == r2_score([2.0, 2.0], [2.0, 2.0]) == 1.0
    assert r2([2.0, 2.0], [2.0, 3.0]) == r2_score([2.0, 2.0], [2.0, 3.0]) == 0.0
    assert np.isnan(r2([1.0], [1.0]))


def test_model_score_names_its_metric():
    assert model_score(False, [0, 1], [0, 0]) == ("accuracy", 0.5)
    assert model_score(True, [1.0, 2.0, 3.0], [1.0, 2.0, 4.0]) == ("r2", 0.5)


@pytest.mark.parametrize("y, pred, message", [
    (["a", "b"], [0, 1], "mix of strings and numbers"),
    (np.array([0, 1], dtype=object), ["a", "b"], "mix of strings and numbers"),
    ([0, 1, 1], [0, 1], "one label per row"),
    ([], [], "no rows"),
])
def test_labels_that_cannot_be_scored(y, pred, message):
    with pytest.raises(ValueError, match=message):
        accuracy(y, pred)
