"""The SGD fast path (learn/sgd_fast.py, learn/_sgd_kernels.py): bitwise scikit-learn's
``SGDClassifier.partial_fit`` (coef_, intercept_, t_, n_iter_ and the random state after) for
every configuration it takes, scikit-learn's own call for every other, and fit_incremental's
model the same with the fast path on and off."""

import itertools

import dask.config
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Perceptron, SGDClassifier

from dask_kernels import fit_incremental
from dask_kernels.learn import learner, sgd_fast



def _set(monkeypatch, key, value):
    """The dask config key ``dask_kernels.<key>`` for the rest of the test."""
    monkeypatch.setitem(dask.config.config, "dask_kernels", {**dask.config.config.get("dask_kernels", {}), key: value})


def _data(n=240, m=12, classes=4, dtype=np.float64, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)) * scale
    X[::7] = 0.0  # whole rows of zeros
    X[:, 3] = 0.0  # and a column
    y = rng.integers(0, classes, n)
    return np.ascontiguousarray(X, dtype=dtype), y


def _same(a, b):
    """Bitwise equal fitted state."""
    assert a.coef_.dtype == b.coef_.dtype and a.intercept_.dtype == b.intercept_.dtype
    assert a.coef_.tobytes() == b.coef_.tobytes()
    assert a.intercept_.tobytes() == b.intercept_.tobytes()
    assert a.t_ == b.t_ and type(a.t_) is type(b.t_)
    assert a.n_iter_ == b.n_iter_


def _states_equal(s, t):
    return s[0] == t[0] and np.array_equal(s[1], t[1]) and s[2:] == t[2:]


def _pair(params, X, y, classes, random_state):
    """Two estimators after the first (scikit-learn) call: one to continue with
    scikit-learn, one with the fast path; their random states separate but equal."""
    def make():
        rs = np.random.RandomState(5) if random_state == "instance" else random_state
        est = SGDClassifier(random_state=rs, **params)
        if random_state is None:
            np.random.seed(11)
        return est.partial_fit(X[:40], y[:40], classes=classes)

    return make(), make()


GRID = list(itertools.product(["log_loss", "hinge", "modified_huber", "squared_hinge", "perceptron"],
                              ["constant", "optimal", "invscaling"], [np.float64, np.float32], [2, 4, 6]))


@pytest.mark.parametrize("i", range(len(GRID)))
def test_bitwise_sklearn(i):
    loss, rate, dtype, n_classes = GRID[i]
    random_state = [0, None, "instance"][i % 3]
    params = dict(loss=loss, learning_rate=rate, eta0=0.05, alpha=1e-3, penalty=["l2", None][i % 2 if i % 5 else 0],
                  shuffle=bool(i % 4), fit_intercept=bool(i % 6), power_t=0.3)
    X, y = _data(classes=n_classes, dtype=dtype, seed=i)
    classes = np.arange(n_classes)
    ref, fast = _pair(params, X, y, classes, random_state)
    for a, b in ((0, 100), (100, 240), (30, 31)):  # several calls, one of a single row
        if random_state is None:
            np.random.seed(a)
        ref.partial_fit(X[a:b], y[a:b], classes=classes)
        ref_state = np.random.get_state() if random_state is None else ref.random_state
        if random_state is None:
            np.random.seed(a)
        assert sgd_fast.applies(fast, X[a:b], y[a:b], classes=classes)
        sgd_fast.partial_fit(fast, X[a:b], y[a:b], classes=classes, threads=1 + i % 2)
        _same(ref, fast)
        if random_state is None:
            assert _states_equal(ref_state, np.random.get_state())
        elif random_state == "instance":
            assert _states_equal(ref_state.get_state(), fast.random_state.get_state())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_wscale_reset_and_clip(dtype, n_classes):
    """A decay of 0.51 per row resets the weight scale every ~30 (float64) or ~20 (float32)
    rows; squared hinge on rows of 1e7 has gradients beyond MAX_DLOSS (clipped)."""
    X, y = _data(n=300, classes=n_classes, dtype=dtype, scale=1e7)
    classes = np.arange(n_classes)
    params = dict(loss="squared_hinge", learning_rate="constant", eta0=4.9, alpha=0.1)
    ref, fast = _pair(params, X, y, classes, 1)
    for _ in range(2):
        ref.partial_fit(X, y)
        sgd_fast.partial_fit(fast, X, y, threads=2)
        _same(ref, fast)
    assert np.abs(ref.coef_).max() > 0


def test_zero_scale_falls_back():
    """eta * alpha >= 1 sets the weight scale to zero: the kernel aborts, the estimator and the
    random state are restored and scikit-learn makes the call (same model)."""
    X, y = _data()
    classes = np.arange(4)
    params = dict(loss="hinge", learning_rate="constant", eta0=20.0, alpha=0.1)
    ref, fast = _pair(params, X, y, classes, "instance")
    ref.partial_fit(X, y)
    sgd_fast.partial_fit(fast, X, y)
    _same(ref, fast)
    assert _states_equal(ref.random_state.get_state(), fast.random_state.get_state())


def test_overflow_raises_as_sklearn():
    """Steps of 1e300 on rows of 1e10 overflow: scikit-learn raises at the end of the epoch;
    the kernel aborts, and scikit-learn's call raises the same (and leaves the same coef_)."""
    X, y = _data(scale=1e10)
    classes = np.arange(4)
    params = dict(loss="hinge", learning_rate="constant", eta0=1e300, alpha=1e-12, penalty=None)
    ref, fast = _pair(params, X * 1e-10, y, classes, 0)
    with pytest.raises(ValueError, match="Floating-point under-/overflow"):
        ref.partial_fit(X, y)
    assert sgd_fast.applies(fast, X, y)
    with pytest.raises(ValueError, match="Floating-point under-/overflow"):
        sgd_fast.partial_fit(fast, X, y)
    assert ref.coef_.tobytes() == fast.coef_.tobytes()


def test_nonfinite_rows_raise_as_sklearn():
    X, y = _data()
    est = SGDClassifier(random_state=0).partial_fit(X, y, classes=np.arange(4))
    X[5, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        sgd_fast.partial_fit(est, X, y)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_a_label_outside_the_classes_raises_as_sklearn(n_classes):
    X, y = _data(classes=n_classes)
    est = SGDClassifier(random_state=0).partial_fit(X, y, classes=np.arange(n_classes))
    before = est.coef_.copy()
    y = y.copy()
    y[7] = n_classes  # not a class: scikit-learn refuses it, it must not train as a negative
    with pytest.raises(ValueError, match="classes should include all valid labels"):
        sgd_fast.partial_fit(est, X, y)
    assert est.coef_.tobytes() == before.tobytes()


def test_a_call_with_many_classes_allocates_a_group_at_a_time():
    """Labels and row orders are made per group of classes (as scikit-learn makes them per
    class), not for every class at once: 64 classes x 20000 rows took 15 MB for them before."""
    import tracemalloc

    X, y = _data(n=20000, m=4, classes=64)
    est = SGDClassifier(random_state=0).partial_fit(X[:500], y[:500], classes=np.arange(64))
    ref = SGDClassifier(random_state=0).partial_fit(X[:500], y[:500], classes=np.arange(64))
    sgd_fast.partial_fit(est, X[:500], y[:500], threads=2)  # loads the kernels and the thread pool
    ref.partial_fit(X[:500], y[:500])
    tracemalloc.start()
    try:
        sgd_fast.partial_fit(est, X, y, threads=2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # two groups of 4 classes at once: 2 x 4 x 20000 x (8 + 4) bytes = 1.9 MB, plus the seeds
    assert peak < 4e6, peak
    ref.partial_fit(X, y)
    _same(ref, est)


def test_warm_start_from_fit():
    X, y = _data(n=400)
    ref = SGDClassifier(max_iter=3, tol=None, random_state=2).fit(X, y)
    fast = SGDClassifier(max_iter=3, tol=None, random_state=2).fit(X, y)
    for a in (0, 200):
        ref.partial_fit(X[a:a + 200], y[a:a + 200])
        sgd_fast.partial_fit(fast, X[a:a + 200], y[a:a + 200])
        _same(ref, fast)


def test_fallback_for_other_configurations(monkeypatch):
    X, y = _data()
    classes = np.arange(4)

    def fitted(cls=SGDClassifier, **kw):
        return cls(random_state=0, **kw).partial_fit(X[:40], y[:40], classes=classes)

    est = fitted()
    assert sgd_fast.applies(est, X, y, classes=classes)
    assert sgd_fast.applies(SGDClassifier(), X, y, classes=classes)  # unfitted: primed as scikit-learn sets it up
    assert not sgd_fast.applies(SGDClassifier(), X, y)  # scikit-learn needs the classes on a first call
    for kw in (dict(average=True), dict(class_weight={0: 2.0}), dict(early_stopping=True), dict(penalty="l1"),
               dict(penalty="elasticnet"), dict(learning_rate="adaptive", eta0=0.1), dict(verbose=1)):
        assert not sgd_fast.applies(fitted().set_params(**kw), X, y, classes=classes), kw
    assert not sgd_fast.applies(fitted(Perceptron), X, y, classes=classes)  # only SGDClassifier itself
    assert not sgd_fast.applies(est, X, y, sample_weight=np.ones(len(y)), classes=classes)
    assert not sgd_fast.applies(est, sp.csr_matrix(X), y, classes=classes)
    assert not sgd_fast.applies(est, X.astype(np.float32), y, classes=classes)  # coef_ is float64
    assert not sgd_fast.applies(est, np.asfortranarray(X), y, classes=classes)
    assert not sgd_fast.applies(est, X[:, :5].copy(), y, classes=classes)
    readonly = fitted()
    readonly.coef_.flags.writeable = False  # scikit-learn's loop writes coef_ in place: it fails, so must we
    assert not sgd_fast.applies(readonly, X, y, classes=classes)
    ro = X.copy()
    ro.flags.writeable = False  # read-only rows (a memory map) are fine
    assert sgd_fast.applies(est, ro, y, classes=classes)
    ref = fitted()
    ref.partial_fit(ro, y)
    sgd_fast.partial_fit(est, ro, y)
    _same(ref, est)
    assert not sgd_fast.applies(est, X, y, classes=np.arange(5))  # scikit-learn raises
    assert not sgd_fast.applies(est, X, y, classes=np.array([0, 1, 2, 5]))
    for same in (est.classes_, [3, 1, 0, 2], np.arange(4.0), np.array([0, 1, 1, 2, 3])):  # unique_labels: classes_
        assert sgd_fast.applies(est, X, y, classes=same), same
    supported = sgd_fast.SUPPORTED
    monkeypatch.setattr(sgd_fast, "SUPPORTED", ((0, 1), (0, 2)))  # a scikit-learn it does not replicate
    assert not sgd_fast.applies(est, X, y, classes=classes)
    monkeypatch.setattr(sgd_fast, "SUPPORTED", supported)
    _set(monkeypatch, "sgd_fast", False)
    assert not sgd_fast.applies(est, X, y, classes=classes)


def test_learner_hook(monkeypatch):
    """learner.partial_fit takes the fast path for a fitted SGDClassifier on dense rows (not
    scikit-learn's partial_fit), and scikit-learn's for the rest."""
    X, y = _data()
    classes = np.arange(4)
    est = SGDClassifier(random_state=0).partial_fit(X[:40], y[:40], classes=classes)
    calls = []
    monkeypatch.setattr(SGDClassifier, "partial_fit", lambda self, *a, **k: calls.append(1))
    learner.partial_fit(est, X, y, {"classes": classes}, threads=2, finite=True)
    assert calls == [] and est.t_ == 41.0 + len(y)
    learner.partial_fit(est, sp.csr_matrix(X), y, {"classes": classes})
    assert calls == [1]


@pytest.mark.parametrize("loss", ["log_loss", "hinge"])
def test_fit_incremental_same_model(monkeypatch, loss):
    X, y = _data(n=1200, m=16)
    classes = np.arange(4)

    def fit():
        est = SGDClassifier(loss=loss, alpha=1e-4, learning_rate="constant", eta0=0.05, random_state=3)
        return fit_incremental(est, X, y, classes=classes, epochs=2, block_rows=200, validation_fraction=None,
                               n_jobs=2, progress=False).estimator

    calls = []
    real = sgd_fast.partial_fit
    monkeypatch.setattr(sgd_fast, "partial_fit", lambda *a, **k: calls.append(1) or real(*a, **k))
    on = fit()
    assert len(calls) == 12  # every call, the first one too (primed)
    _set(monkeypatch, "sgd_fast", False)
    off = fit()
    assert len(calls) >= 10 and on.t_ == off.t_
    _same(on, off)


def test_a_run_reading_ahead_keeps_four_classes_in_one_group(monkeypatch):
    """With prefetch (steps read and gathered by the run's own threads meanwhile) the 4 classes
    train as one group of four on one thread, not two groups of 2 on 2 threads (~1.3x the
    CPU); without it they are split; the model is the same."""
    X, y = _data(n=1200, m=16)
    groups, real = [], sgd_fast.K.ovr_epoch
    monkeypatch.setattr(sgd_fast.K, "ovr_epoch", lambda *a: groups.append(a[7]) or real(*a))
    monkeypatch.setattr(learner, "MIN_THREADED_WORK", 0)  # threads for these small steps too

    def fit(prefetch):
        groups.clear()
        est = SGDClassifier(alpha=1e-4, learning_rate="constant", eta0=0.05, random_state=3)
        model = fit_incremental(est, X, y, classes=np.arange(4), epochs=2, block_rows=200, validation_fraction=None,
                                n_jobs=2, prefetch=prefetch, progress=False).estimator
        return model, sorted(set(groups))

    ahead, sizes = fit(True)
    assert sizes == [4]
    plain, sizes = fit(False)
    assert sizes == [2]
    _same(ahead, plain)


@pytest.mark.parametrize("classes", [4, 6, 9])
def test_whole_groups_give_the_same_model(classes):
    X, y = _data(n=600, classes=classes)
    split, whole = (SGDClassifier(random_state=0).partial_fit(X[:40], y[:40], classes=np.arange(classes))
                    for _ in range(2))
    for a in range(40, 600, 140):
        sgd_fast.partial_fit(split, X[a:a + 140], y[a:a + 140], threads=2)
        sgd_fast.partial_fit(whole, X[a:a + 140], y[a:a + 140], threads=2, whole_groups=True)
    _same(split, whole)


FIRST = list(itertools.product(["log_loss", "hinge"], [np.float64, np.float32], [2, 4], [0, None, "instance"],
                               [True, False]))


@pytest.mark.parametrize("i", range(len(FIRST)))
def test_first_call_bitwise_sklearn(i):
    """The first call (an unfitted estimator) through the kernels: every attribute scikit-learn's
    first ``partial_fit`` sets, bitwise, and the random state after it; then a second call."""
    from dask_kernels.learn.state import get_state

    loss, dtype, n_classes, random_state, shuffle = FIRST[i]
    X, y = _data(classes=n_classes, dtype=dtype, seed=i)
    classes = np.arange(n_classes)

    def make():
        rs = np.random.RandomState(5) if random_state == "instance" else random_state
        return SGDClassifier(loss=loss, learning_rate="optimal" if i % 3 else "constant", eta0=0.05, alpha=1e-3,
                             shuffle=shuffle, random_state=rs)

    ref, fast = make(), make()
    for a, b in ((0, 100), (100, 240)):
        np.random.seed(a)
        ref.partial_fit(X[a:b], y[a:b], classes=classes)
        ref_global = np.random.get_state()
        np.random.seed(a)
        assert sgd_fast.applies(fast, X[a:b], y[a:b], classes=classes)
        sgd_fast.partial_fit(fast, X[a:b], y[a:b], classes=classes, threads=1 + i % 2)
        _same(ref, fast)
        assert sorted(vars(ref)) == sorted(vars(fast))
        rs, fs = get_state(ref), get_state(fast)
        assert rs[1] == fs[1] and rs[0].keys() == fs[0].keys()
        assert all(rs[0][k].tobytes() == fs[0][k].tobytes() and rs[0][k].dtype == fs[0][k].dtype for k in rs[0])
        if random_state is None:
            assert _states_equal(ref_global, np.random.get_state())
        elif random_state == "instance":
            assert _states_equal(ref.random_state.get_state(), fast.random_state.get_state())


def test_first_call_refused_as_sklearn_leaves_the_estimator_as_sklearn_does():
    """A first call scikit-learn refuses (a label outside ``classes``, rows that are not finite)
    raises its error and leaves the estimator as scikit-learn's call leaves it (no primed
    attribute behind)."""
    X, y = _data()
    bad_label = y.copy()
    bad_label[7] = 9
    nan = X.copy()
    nan[3, 1] = np.nan
    for rows, labels in ((X, bad_label), (nan, y)):
        ref, est = SGDClassifier(random_state=0), SGDClassifier(random_state=0)
        with pytest.raises(ValueError) as want:
            ref.partial_fit(rows, labels, classes=np.arange(4))
        assert sgd_fast.applies(est, rows, labels, classes=np.arange(4))
        with pytest.raises(ValueError) as got:
            sgd_fast.partial_fit(est, rows, labels, classes=np.arange(4))
        assert str(got.value) == str(want.value)
        assert sorted(vars(est)) == sorted(vars(ref)) and not hasattr(est, "coef_")
    est = SGDClassifier(random_state=0)
    assert sgd_fast.takes_rows(est) and not sgd_fast.applies(est, X, y)  # classes needed on a first call


def test_the_declared_scikit_learn_versions_are_supported():
    """The gate is pyproject.toml's range (its lowest and highest releases are what CI checks
    the replica against), not one release: 1.6.1 had it off, training half as fast."""
    import re
    import sklearn

    text = open(__file__.rsplit("/tests/", 1)[0] + "/pyproject.toml").read()
    lo, hi = re.search(r'"scikit-learn>=(\d+\.\d+),<(\d+\.\d+)"', text).groups()
    assert sgd_fast.SUPPORTED == (tuple(map(int, lo.split("."))), tuple(map(int, hi.split("."))))
    for v in ("1.6.0", "1.6.1", "1.7.2", "1.8.0", "1.9.1", sklearn.__version__):
        assert sgd_fast.supported(v), v
    for v in ("1.5.2", "1.10.0", "1.10.dev0", "2.0.0", "nightly"):
        assert not sgd_fast.supported(v), v


@pytest.mark.parametrize("why", ["config", "version"])
def test_off_says_so_once(monkeypatch, caplog, why):
    X, y = _data()
    classes = np.arange(4)
    est = SGDClassifier(random_state=0).partial_fit(X[:40], y[:40], classes=classes)
    sgd_fast._off.cache_clear()  # (it says so once per process)
    if why == "config":
        _set(monkeypatch, "sgd_fast", False)
    else:
        monkeypatch.setattr(sgd_fast, "SUPPORTED", ((0, 1), (0, 2)))
    with caplog.at_level("INFO", logger="dask_kernels"):
        for _ in range(3):
            assert not sgd_fast.applies(est, X, y, classes=classes)
        learner.partial_fit(est, X, y, {"classes": classes})
    said = [r for r in caplog.records if r.name == "dask_kernels" and "fast path is off" in r.getMessage()]
    assert len(said) == 1
    assert ("dask_kernels.sgd_fast" if why == "config" else "scikit-learn") in said[0].getMessage()
    sgd_fast._off.cache_clear()


def test_on_says_nothing(caplog):
    X, y = _data()
    classes = np.arange(4)
    est = SGDClassifier(random_state=0).partial_fit(X[:40], y[:40], classes=classes)
    sgd_fast._off.cache_clear()
    with caplog.at_level("DEBUG", logger="dask_kernels"):
        assert sgd_fast.applies(est, X, y, classes=classes)
    assert not [r for r in caplog.records if "fast path" in r.getMessage()]
