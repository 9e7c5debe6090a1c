"""KernelModel is a scikit-learn estimator: params, clone, Pipeline, GridSearchCV, lazy predict."""

import dask.array as da
import numpy as np
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.linear_model import SGDClassifier, SGDRegressor
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dask_kernels import GCWS, KernelModel, fit_incremental


def _xor(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, (X[:, 0] * X[:, 1] > 0).astype(int)


def _model(**kw):
    return KernelModel(GCWS(n_components=64, seed=0, scale=None),  # the alpha grid below is for raw rows
                       SGDClassifier(loss="log_loss", alpha=1e-4, random_state=0, **kw))


def test_params_reach_both_parts_and_clone_gives_unfitted_copies():
    m = _model()
    params = m.get_params()
    assert params["estimator__alpha"] == 1e-4 and params["feature_map__n_components"] == 64
    m.set_params(estimator__alpha=1e-3, feature_map__n_components=32)
    assert m.estimator.alpha == 1e-3 and m.feature_map.n_components == 32
    X, y = _xor()
    m.fit(X, y)
    c = clone(m)
    assert c.get_params()["estimator__alpha"] == 1e-3
    assert not hasattr(c.estimator, "coef_") and not hasattr(c.feature_map, "n_features_in_")


def test_kind_follows_the_estimator_and_classes_are_exposed():
    assert is_classifier(_model()) and not is_regressor(_model())
    assert is_regressor(KernelModel(GCWS(n_components=8), SGDRegressor()))
    X, y = _xor()
    m = _model().fit(X, y)
    assert m.classes_.tolist() == [0, 1] and m.n_features_in_ == 4
    assert m.score(X, y) > 0.85  # the xor target is not linear in X: the map is used


def test_pipeline_and_grid_search():
    X, y = _xor()
    pipe = make_pipeline(StandardScaler(), _model())
    assert pipe.fit(X[:900], y[:900]).score(X[900:], y[900:]) > 0.8
    search = GridSearchCV(_model(), {"estimator__alpha": [1e-1, 1e-4]}, cv=3).fit(X, y)
    # a strongly regularized linear model on 64 x 256 one-hot columns underfits: 1e-4 wins
    assert search.best_params_ == {"estimator__alpha": 1e-4}
    assert is_classifier(search.best_estimator_) and search.best_estimator_.classes_.tolist() == [0, 1]


def test_prediction_on_dask_arrays_is_lazy_and_blockwise():
    X, y = _xor()
    m = fit_incremental(SGDClassifier(loss="log_loss", random_state=0), X, y,
                        feature_map=GCWS(n_components=32, seed=0).fit(X), epochs=2, progress=False)
    calls = []

    def watch(b):
        if b.shape[0]:  # dask probes the function on 0-row meta arrays: not data
            calls.append(b.shape[0])
        return b

    Xd = da.from_array(X, chunks=(300, -1)).map_blocks(watch, dtype=X.dtype)
    pred = m.predict(Xd)
    proba = m.predict_proba(Xd)
    assert isinstance(pred, da.Array) and isinstance(proba, da.Array) and calls == []
    assert pred.chunks == ((300,) * 4,) and proba.shape == (1200, 2)
    np.testing.assert_array_equal(pred.compute(), m.predict(X))
    assert sorted(calls) == [300] * 4


def test_prediction_on_dask_input_with_empty_blocks():
    """A filtered DataFrame has partitions of no rows: they predict nothing, the others as numpy."""
    import dask.dataframe as dd
    import pandas as pd

    from dask_kernels import SoftmaxSGD

    X, y = _xor()
    for est in (SoftmaxSGD(code_bits=8, random_state=0), SGDClassifier(loss="log_loss", random_state=0)):
        m = KernelModel(GCWS(n_components=32, seed=0), est).fit(X, y)
        Xd = da.from_array(X[:30], chunks=((10, 0, 20), -1))
        for method in ("predict", "predict_proba", "decision_function"):
            np.testing.assert_allclose(getattr(m, method)(Xd).compute(), getattr(m, method)(X[:30]), rtol=1e-12)
        assert m.score(Xd, da.from_array(y[:30], chunks=((10, 0, 20),))) == m.score(X[:30], y[:30])
        df = dd.from_pandas(pd.DataFrame(X[:40], columns=list("abcd")), npartitions=4)
        kept = df[df["a"].abs() > 2.0]  # a few rows: some partitions keep none
        assert 0 in [len(p) for p in kept.partitions]
        keep = np.abs(X[:40, 0]) > 2.0
        np.testing.assert_array_equal(m.predict(kept).compute(), m.predict(X[:40][keep]))


def test_prediction_on_no_rows_names_the_rows_shape():
    X, y = _xor()
    m = _model().fit(X, y)
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(ValueError, match=r"X has no rows \(shape \(0, 4\)\): nothing to " + method):
            getattr(m, method)(X[:0])
