"""What the learner is handed, and how often the store is read (the store path's throughput fixes)."""

import os

import dask.array as da
import numpy as np
import pytest
from sklearn.cluster import MiniBatchKMeans
from sklearn.linear_model import SGDClassifier

import dask_kernels
from dask_kernels import GCWS, NRFF, fit_incremental
from dask_kernels.learn import ArraySource


SEEN = []  # (dtype, type, C-contiguous) of every _Spy.partial_fit input (not on the estimator:
#            its state is checkpointed without pickle)


class _Spy(SGDClassifier):
    """SGDClassifier that records the dtype and layout of every partial_fit input."""

    def partial_fit(self, X, y=None, classes=None, sample_weight=None):
        dense = isinstance(X, np.ndarray)
        SEEN.append((X.dtype, type(X).__name__,
                                                      X.flags["C_CONTIGUOUS"] if dense else None))
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)


def _data(n=1200, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] * X[:, 1] > 0).astype(np.int64)


@pytest.fixture(scope="module")
def float_store(tmp_path_factory):
    X, y = _data()
    nrff = NRFF(n_components=32, gamma=0.5, seed=0).fit(X)
    path = os.path.join(tmp_path_factory.mktemp("feed"), "nrff.zarr")
    dask_kernels.featurize(da.from_array(X, chunks=(200, -1)), nrff, labels=y, store=path, progress=False)
    store = dask_kernels.open_store(path)
    assert store.features.dtype == np.float32
    return store


@pytest.mark.parametrize("prefetch", [True, False])
def test_sgd_gets_float64_rows_from_a_float32_store_and_learns_as_in_memory(float_store, prefetch):
    SEEN.clear()
    spy = _Spy(loss="log_loss", learning_rate="constant", eta0=0.1, random_state=0)
    model = fit_incremental(spy, float_store, epochs=2, validation_fraction=None, shuffle_window=1,
                            prefetch=prefetch, progress=False)
    assert set(SEEN) == {(np.dtype(np.float64), "ndarray", True)}  # nothing left to convert
    assert model.estimator.coef_.dtype == np.float64
    # the same steps in memory, converted by hand: bitwise the same model
    src = dask_kernels.learn.StoreSource(float_store)
    from dask_kernels.learn.shuffle import EpochPlan

    ref = SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.1, random_state=0)
    for epoch in range(2):
        for X, y, rows in EpochPlan(src, 0, epoch, 1, 0.0).steps(0):
            ref.partial_fit(X[rows].astype(np.float64), y[rows], classes=np.array([0, 1]))
    np.testing.assert_array_equal(model.estimator.coef_, ref.coef_)


def test_other_learners_and_one_hot_rows_keep_their_dtype(float_store):
    X, y = _data()
    km = fit_incremental(MiniBatchKMeans(n_clusters=2, random_state=0, n_init=1), float_store, epochs=1,
                         validation_fraction=None, progress=False)
    assert km.estimator.cluster_centers_.dtype == np.float32  # k-means trains on float32 as given
    SEEN.clear()
    spy = _Spy(loss="log_loss", random_state=0)
    fit_incremental(spy, X, y, feature_map=GCWS(n_components=16, seed=0).fit(X), block_rows=300, epochs=1,
                    validation_fraction=None, progress=False)
    # one-hot CSR stays float32: scikit-learn's SGD is faster on sparse float32 than float64
    assert {s[:2] for s in SEEN} == {(np.dtype(np.float32), "csr_matrix")}
