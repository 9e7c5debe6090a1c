"""SoftmaxSGD on dense float rows: the blocked kernel against a plain sequential reference,
float32 rows as they are, and a step's kept rows read in place (bitwise the gathered step)."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from dask_kernels import NRFF, SoftmaxSGD, fit_incremental
from dask_kernels.learn import ArraySource, learner, softmax
from dask_kernels.learn._gather import StepRows
from dask_kernels.learn.feeds import LocalFeed
from dask_kernels.learn.shuffle import KeptRows, Order
from test_sgd_fast import _set  # a config key


def _reference(X, y, order, C, eta, alpha):
    """One pass of the full model in plain Python floats, one operation at a time in the
    kernel's order (weights stored as (features, classes) times a decay scale s; every score a
    sequential sum over the columns): what the kernel must give bitwise."""
    d = X.shape[1]
    A = [[0.0] * C for _ in range(d)]
    c = [0.0] * C
    s = 1.0
    for i in order:
        x = [float(v) for v in X[i]]  # float32 -> float64: exact
        z = []
        for a in range(C):
            acc = 0.0
            for j in range(d):
                acc += A[j][a] * x[j]
            z.append(acc * s + c[a])
        mx = max(z)
        e = [math.exp(v - mx) for v in z]
        tot = 0.0
        for v in e:
            tot += v
        g = [v / tot for v in e]
        g[y[i]] -= 1.0
        s *= 1.0 - eta * alpha
        step = eta / s
        gh = [v * -step for v in g]
        for j in range(d):
            for a in range(C):
                A[j][a] += gh[a] * x[j]
        for a in range(C):
            c[a] -= eta * g[a]
    return np.array(A) * s, np.array(c)


@pytest.mark.parametrize("n_classes", [2, 3, 4, 5, 7, 9])
def test_blocked_scores_equal_the_sequential_reference_bitwise(n_classes):
    # 2..9 classes: blocks of 4 outputs, of 2, and a last block overlapping the one before
    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(40, 11)).astype(np.float32)
    y = rng.integers(0, n_classes, 40)
    y[:n_classes] = np.arange(n_classes)
    clf = SoftmaxSGD(alpha=0.01, eta0=0.3, shuffle=False).partial_fit(X, y, classes=np.arange(n_classes))
    A, c = _reference(X, y, range(40), n_classes, 0.3, 0.01)
    assert clf.weights_.tobytes() == A.tobytes()
    assert clf.intercept_.tobytes() == c.tobytes()


@pytest.mark.parametrize("params", [{}, {"rank": 3}, {"average": 25}, {"learning_rate": "invscaling"}])
def test_float32_rows_equal_their_float64_cast_and_csr_bitwise(params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 9)).astype(np.float32)
    y = rng.integers(0, 6, 120)
    kw = dict(alpha=1e-3, eta0=0.05, max_iter=2, random_state=0, **params)
    f32 = SoftmaxSGD(**kw).fit(X, y)
    f64 = SoftmaxSGD(**kw).fit(X.astype(np.float64), y)
    full = sp.csr_matrix(X.astype(np.float64))  # no zeros in X: every column stored
    assert full.nnz == X.size
    csr = SoftmaxSGD(**kw).fit(full, y)
    for other in (f64, csr):
        for name in ("weights_", "output_weights_", "intercept_"):
            assert getattr(f32, name).tobytes() == getattr(other, name).tobytes()
        assert np.array_equal(f32.coef_, other.coef_)


def _kept_rows(n=150, m=7, seed=0):
    rng = np.random.default_rng(seed)
    src = rng.normal(size=(n, m)).astype(np.float32)
    at = rng.permutation(n)[:90]  # the step's rows, out of order, in a bigger array
    return src, at, rng.integers(0, 5, 90)


@pytest.mark.parametrize("params", [{}, {"rank": 2}, {"average": True}])
def test_rows_read_in_place_equal_the_gathered_step_bitwise(params):
    src, at, y = _kept_rows()
    classes = np.arange(5)
    gathered, in_place = (SoftmaxSGD(alpha=1e-3, eta0=0.1, random_state=3, **params) for _ in range(2))
    for step in range(3):  # the first call (classes, initialization) and later ones
        rows = at[step * 30:(step + 1) * 30]
        gathered.partial_fit(src[rows], y[step * 30:(step + 1) * 30], classes=classes)
        learner.partial_fit(in_place, StepRows(src, rows, np.float32), y[step * 30:(step + 1) * 30],
                            {"classes": classes}, finite=True)
        for name in ("weights_", "output_weights_", "intercept_"):
            assert getattr(gathered, name).tobytes() == getattr(in_place, name).tobytes()
        assert gathered.t_ == in_place.t_ and in_place.n_features_in_ == 7


def test_in_place_rows_are_checked_and_gathered_unless_finite(monkeypatch):
    src, at, y = _kept_rows()
    clf = SoftmaxSGD(random_state=0).partial_fit(src[:10], y[:10], classes=np.arange(5))
    with pytest.raises(ValueError, match="X has 3 features, but SoftmaxSGD is expecting 7"):
        clf._partial_fit_rows(StepRows(src[:, :3].copy(), at[:5], np.float32), y[:5])
    with pytest.raises(ValueError, match="labels not in classes_"):
        clf._partial_fit_rows(StepRows(src, at[:2], np.float32), [0, 9])
    src[at[0], 2] = np.nan  # rows not finite by construction: gathered and checked as partial_fit checks them
    with pytest.raises(ValueError, match="NaN"):
        learner.partial_fit(clf, StepRows(src, at[:5], np.float32), y[:5], {"classes": np.arange(5)})
    assert softmax.takes_rows(clf) and learner.Fitter.in_place(clf)
    assert not softmax.takes_rows(SoftmaxSGD(code_bits=8))  # codes are gathered (small)
    _set(monkeypatch, "sgd_fast_in_place", False)
    assert not softmax.takes_rows(clf) and not learner.Fitter.in_place(clf)


def test_fit_incremental_reads_kept_rows_in_place_for_the_gathered_model(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int) + 2 * (X[:, 2] > 0)
    fmap = NRFF(n_components=16, seed=0).fit(X)
    calls = []
    real = SoftmaxSGD._partial_fit_rows
    monkeypatch.setattr(SoftmaxSGD, "_partial_fit_rows", lambda self, *a: calls.append(1) or real(self, *a))

    def fit():
        return fit_incremental(SoftmaxSGD(eta0=0.2, random_state=0), X, y, feature_map=fmap, block_rows=100,
                               epochs=3, validation_fraction=0.1, client=False, progress=False).estimator

    in_place = fit()
    assert len(calls) == 3 * 6  # every step of every epoch read in place
    _set(monkeypatch, "sgd_fast_in_place", False)
    gathered = fit()
    assert len(calls) == 18
    assert in_place.weights_.tobytes() == gathered.weights_.tobytes()
    assert in_place.intercept_.tobytes() == gathered.intercept_.tobytes()


@pytest.mark.parametrize("epochs, fraction, kept", [(1, 0.0, False), (2, 0.0, True), (1, 0.1, True)])
def test_rows_are_kept_only_when_read_again(epochs, fraction, kept):
    src = ArraySource(np.zeros((60, 3), np.float32), np.arange(60) % 2, block_rows=10)
    feed = LocalFeed(src, Order(seed=0, window=6, fraction=fraction), learner.Fitter({}, True), epochs, True)
    assert isinstance(feed.cache, KeptRows) is kept
