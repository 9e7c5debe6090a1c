"""Gather-free steps of the SGD fast path (learn/_gather.StepRows, learn/shuffle.KeptRows,
sgd_fast reading rows in place): bitwise the model of the gathered step and of scikit-learn's
``partial_fit`` on the gathered rows; the old way for everything the indexed path does not take."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Perceptron, SGDClassifier

from dask_kernels import fit_incremental
from dask_kernels.learn import learner, sgd_fast
from dask_kernels.learn._gather import StepRows
from dask_kernels.learn.shuffle import KeptRows, _Window, step_features
from test_sgd_fast import _same, _set  # bitwise equal fitted state; a config key



def _kept(dtype, sizes=(37, 50, 23, 41), m=9, seed=0):
    """Blocks of distinct random rows kept in a KeptRows, stored in another order than the
    window serves them (so a block's offset in the arena differs from its offset in the window)."""
    rng = np.random.default_rng(seed)
    blocks = {b: (rng.normal(size=(n, m)).astype(dtype), rng.integers(0, 6, n)) for b, n in enumerate(sizes)}
    kept = KeptRows(sum(sizes) + 5)
    kept.update((b, blocks[b]) for b in (2, 0, 3, 1))
    window = [3, 1, 0]  # a window of three of the blocks, in the plan's order
    X = _Window([kept[b][0] for b in window], kept.arena, [kept.offsets[b] for b in window])
    y = np.concatenate([blocks[b][1] for b in window])
    whole = np.concatenate([blocks[b][0] for b in window])  # the window as one array, independently
    return X, y, whole


def test_kept_rows_are_the_blocks_rows():
    X, y, whole = _kept(np.float32)
    rows = np.random.default_rng(1).permutation(whole.shape[0])[:60]
    for dtype in (np.float64, np.float32):
        got = X.step_rows(rows, dtype)
        assert got.dtype == dtype and got.shape == (60, whole.shape[1]) and got.size == 60 * whole.shape[1]
        assert got.gather().tobytes() == whole[rows].astype(dtype).tobytes()
        assert got.gather().tobytes() == X.take(rows, dtype).tobytes()  # the gathered step
    # the window's first row of each block, and the last
    edges = np.array([0, 40, 41, 90, 91, 127])
    assert np.array_equal(X.step_rows(edges, np.float32).gather(), whole[edges])


def test_kept_rows_keep_other_blocks_as_they_are():
    kept = KeptRows(100)
    codes = np.arange(20, dtype=np.int32).reshape(10, 2)
    kept[0] = (codes, None)  # integer codes: not in the arena
    assert kept.arena is None and 0 not in kept.offsets and kept[0][0] is codes
    kept[1] = (np.ones((10, 3), np.float32), None)
    kept[2] = (np.ones((10, 4), np.float32), None)  # another width
    kept[3] = (np.ones((10, 3), np.float64), None)  # another dtype
    kept[4] = (np.ones((95, 3), np.float32), None)  # beyond the capacity
    assert list(kept.offsets) == [1] and kept.used == 10
    assert kept[1][0].base is kept.arena


CASES = [(src, model, n_classes, shuffle, rs)
         for i, (src, model, n_classes) in enumerate([(np.float32, np.float64, 2), (np.float32, np.float64, 4),
                                                       (np.float64, np.float64, 6), (np.float32, np.float32, 4),
                                                       (np.float64, np.float32, 2), (np.float64, np.float32, 5)])
         for shuffle, rs in [(True, [0, None, "instance"][i % 3]), (False, [None, "instance", 7][i % 3])]]


@pytest.mark.parametrize("src_dtype, model_dtype, n_classes, shuffle, random_state", CASES)
def test_indexed_equals_gathered_and_sklearn(src_dtype, model_dtype, n_classes, shuffle, random_state):
    X, y, whole = _kept(src_dtype)
    y = y % n_classes
    classes = np.arange(n_classes)
    rng = np.random.default_rng(n_classes)

    def make():
        rs = np.random.RandomState(5) if random_state == "instance" else random_state
        est = SGDClassifier(loss="log_loss", alpha=1e-3, learning_rate="constant", eta0=0.05, shuffle=shuffle,
                            random_state=rs)
        np.random.seed(11)  # random_state None: the global generator
        return est.partial_fit(whole[:20].astype(model_dtype), y[:20], classes=classes)

    ref, gathered, indexed = make(), make(), make()
    for step, n in enumerate((60, 127, 1)):  # several calls (one of a single row), rows from every block
        rows = rng.permutation(whole.shape[0])[:n]
        F = whole[rows].astype(model_dtype)
        if random_state is None:
            np.random.seed(step)
        ref.partial_fit(F, y[rows])
        state = np.random.get_state()[1] if random_state is None else None
        for est, X_step in ((gathered, X.take(rows, model_dtype)), (indexed, X.step_rows(rows, model_dtype))):
            if random_state is None:
                np.random.seed(step)
            assert sgd_fast.applies(est, X_step, y[rows], classes=classes)
            sgd_fast.partial_fit(est, X_step, y[rows], classes, threads=2, finite=step % 2 == 0)
            _same(ref, est)
            if random_state is None:
                assert np.array_equal(state, np.random.get_state()[1])
        if random_state == "instance":
            for est in (gathered, indexed):
                assert np.array_equal(ref.random_state.get_state()[1], est.random_state.get_state()[1])


def test_an_aborted_call_goes_to_sklearn_on_the_gathered_rows():
    """eta * alpha >= 1: the kernel aborts and scikit-learn makes the call on the step's rows."""
    X, y, whole = _kept(np.float32)
    y = y % 4
    rows = np.arange(0, whole.shape[0], 2)

    def make():
        est = SGDClassifier(loss="hinge", learning_rate="constant", eta0=20.0, alpha=0.1, random_state=0)
        return est.partial_fit(whole[:30].astype(np.float64), y[:30], classes=np.arange(4))

    ref, fast = make(), make()
    ref.partial_fit(whole[rows].astype(np.float64), y[rows])
    sgd_fast.partial_fit(fast, X.step_rows(rows, np.float64), y[rows])
    _same(ref, fast)


def test_nonfinite_kept_rows_raise_as_sklearn():
    X, y, whole = _kept(np.float32)
    rows = np.arange(30)
    est = SGDClassifier(random_state=0).partial_fit(whole[:30].astype(np.float64), y[:30], classes=np.arange(6))
    X.base[X.offsets[0] + 4, 2] = np.nan  # the window's row 4, a row of the step
    with pytest.raises(ValueError, match="NaN"):
        sgd_fast.partial_fit(est, X.step_rows(rows, np.float64), y[rows])


def test_what_the_indexed_path_does_not_take(monkeypatch):
    X, y, whole = _kept(np.float32)
    y = y % 4
    classes = np.arange(4)
    rows = np.arange(50)
    step = X.step_rows(rows, np.float64)

    def fitted(cls=SGDClassifier, **kw):
        return cls(random_state=0, **kw).partial_fit(whole[:20].astype(np.float64), y[:20], classes=classes)

    est = fitted()
    assert sgd_fast.takes_rows(est) and sgd_fast.applies(est, step, y[rows], classes=classes)
    assert sgd_fast.takes_rows(SGDClassifier())  # unfitted: its first call is primed (test_sgd_fast.py)
    assert not sgd_fast.takes_rows(fitted(average=True)) and not sgd_fast.takes_rows(fitted(Perceptron))
    assert not sgd_fast.applies(est, X.step_rows(rows, np.float32), y[rows], classes=classes)  # coef_ float64
    assert not sgd_fast.applies(est, StepRows(X.base, np.array([0, X.base.shape[0]]), np.float64), y[:2])
    assert not sgd_fast.applies(est, StepRows(X.base, np.array([-1, 0]), np.float64), y[:2])
    assert not sgd_fast.applies(est, StepRows(np.asfortranarray(whole), rows, np.float64), y[rows])
    assert not sgd_fast.applies(est, StepRows(whole.astype(np.float16), rows, np.float64), y[rows])
    _set(monkeypatch, "sgd_fast_in_place", False)
    assert not sgd_fast.takes_rows(est)
    _set(monkeypatch, "sgd_fast_in_place", True)
    _set(monkeypatch, "sgd_fast", False)
    assert not sgd_fast.takes_rows(est) and not sgd_fast.applies(est, step, y[rows], classes=classes)


@pytest.mark.parametrize("cls", [Perceptron, SGDClassifier])
def test_learner_gathers_for_other_estimators(monkeypatch, cls):
    """learner.partial_fit hands scikit-learn the gathered rows when the fast path does not apply
    (another estimator, or an SGDClassifier configuration it does not replicate)."""
    X, y, whole = _kept(np.float32)
    y = y % 4
    rows = np.arange(5, 70)
    kw = {"average": True} if cls is SGDClassifier else {}
    est = cls(random_state=0, **kw).partial_fit(whole[:20].astype(np.float64), y[:20], classes=np.arange(4))
    ref = cls(random_state=0, **kw).partial_fit(whole[:20].astype(np.float64), y[:20], classes=np.arange(4))
    seen = []
    real = cls.partial_fit
    monkeypatch.setattr(cls, "partial_fit", lambda self, F, *a, **k: seen.append(F) or real(self, F, *a, **k))
    learner.partial_fit(est, X.step_rows(rows, np.float64), y[rows], {"classes": np.arange(4)})
    assert isinstance(seen[0], np.ndarray) and seen[0].tobytes() == whole[rows].astype(np.float64).tobytes()
    real(ref, whole[rows].astype(np.float64), y[rows])
    assert est.coef_.tobytes() == ref.coef_.tobytes()


def test_step_features_gathers_where_rows_are_not_kept_in_one_array():
    from dask_kernels.learn import ArraySource

    X, y, whole = _kept(np.float32)
    src = ArraySource(whole, y % 4, block_rows=40)
    est = SGDClassifier(random_state=0).partial_fit(whole[:20].astype(np.float64), y[:20] % 4, classes=np.arange(4))
    rows = np.arange(0, 100, 3)
    def steps(X, est):  # the step as the learner asks for it (in place where it reads kept rows)
        return step_features(src, X, y, rows, est, learner.Fitter.in_place(est))

    F, _, n = steps(X, est)
    assert isinstance(F, StepRows) and n == rows.size
    plain = _Window(X.parts)  # blocks read for one window, not kept
    F, _, _ = steps(plain, est)
    assert isinstance(F, np.ndarray) and F.tobytes() == whole[rows].astype(np.float64).tobytes()
    F, _, _ = steps(X, SGDClassifier())  # not fitted yet: its first call is primed
    assert isinstance(F, StepRows) and F.dtype == np.float64
    F, _, _ = steps(X, SGDClassifier(average=True))  # a configuration not replicated
    assert isinstance(F, np.ndarray)
    F, _, _ = steps(X, Perceptron().partial_fit(whole[:20], y[:20] % 4, classes=range(4)))
    assert isinstance(F, np.ndarray)
    assert not sp.issparse(F)


def _spy(monkeypatch):
    kinds = []
    real = sgd_fast.partial_fit
    monkeypatch.setattr(sgd_fast, "partial_fit", lambda est, F, *a, **k: kinds.append(type(F)) or real(est, F, *a, **k))
    return kinds


@pytest.mark.parametrize("dtype, validation, shuffle", [(np.float32, None, True), (np.float64, 0.2, False),
                                                         (np.float32, 0.1, True)])
def test_fit_incremental_same_model(monkeypatch, dtype, validation, shuffle):
    """The model with the gather-free steps, without them, and without the fast path: bitwise
    the same (held-out rows make blocks of unequal lengths in the arena)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1500, 16)).astype(dtype)
    y = rng.integers(0, 4, 1500)

    def fit():
        est = SGDClassifier(alpha=1e-4, learning_rate="constant", eta0=0.05, random_state=3, shuffle=shuffle)
        return fit_incremental(est, X, y, classes=np.arange(4), epochs=2, block_rows=200, shuffle_window=4,
                               validation_fraction=validation, schedule=None, n_jobs=2, progress=False).estimator

    kinds = _spy(monkeypatch)
    indexed = fit()
    assert kinds == [StepRows] * 16, kinds  # every step, the first one too (primed, not scikit-learn's)
    _set(monkeypatch, "sgd_fast_in_place", False)
    del kinds[:]
    gathered = fit()
    assert StepRows not in kinds and len(kinds) >= 14
    _set(monkeypatch, "sgd_fast", False)
    sklearn_only = fit()
    _same(indexed, gathered)
    _same(indexed, sklearn_only)


def test_fit_incremental_on_a_store(monkeypatch, tmp_path):
    """A float32 store of NRFF features (the benchmark's kind): rows read in place."""
    import dask.array as da

    import dask_kernels
    from dask_kernels import NRFF

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 5))
    y = rng.integers(0, 3, 1200)
    nrff = NRFF(n_components=32, gamma=0.5, seed=0).fit(X)
    store = dask_kernels.featurize(da.from_array(X, chunks=(150, -1)), nrff, labels=y,
                                   store=str(tmp_path / "s.zarr"), progress=False)

    def fit():
        est = SGDClassifier(alpha=1e-4, learning_rate="constant", eta0=0.5, random_state=1)
        return fit_incremental(est, store, epochs=2, validation_fraction=0.1, progress=False).estimator

    kinds = _spy(monkeypatch)
    indexed = fit()
    assert kinds.count(StepRows) >= 12
    _set(monkeypatch, "sgd_fast_in_place", False)
    _same(indexed, fit())


def test_keep_frees_each_read_block_once_kept():
    """A window's reads are copied into the arena a block at a time and each freed after its
    copy (not all held until the last is copied): at most one block beside the kept rows."""
    import weakref

    from dask_kernels.learn.shuffle import keep

    parts = [(np.full((50, 8), b, np.float32), np.zeros(50)) for b in range(4)]
    refs = [weakref.ref(X) for X, _ in parts]
    alive = []

    class Spy(KeptRows):
        def __setitem__(self, block, item):
            alive.append(sum(r() is not None for r in refs))
            super().__setitem__(block, item)

    kept = Spy(200)
    keep(kept, [7, 5, 6, 4], parts)
    assert parts == [] and alive == [4, 3, 2, 1] and all(r() is None for r in refs)
    assert [kept.offsets[b] for b in (7, 5, 6, 4)] == [0, 50, 100, 150]
    assert [kept[b][0][0, 0] for b in (7, 5, 6, 4)] == [0, 1, 2, 3]


@pytest.mark.parametrize("n_classes", [2, 4])
def test_first_call_reads_in_place(n_classes):
    """An unfitted estimator's first call on a step's rows in place: scikit-learn's first call
    on the gathered rows, bitwise (the model in the step's dtype, float64)."""
    X, y, whole = _kept(np.float32)
    y = y % n_classes
    rows = np.random.default_rng(2).permutation(whole.shape[0])[:70]
    classes = np.arange(n_classes)
    ref = SGDClassifier(random_state=4).partial_fit(whole[rows].astype(np.float64), y[rows], classes=classes)
    fast = SGDClassifier(random_state=4)
    step = X.step_rows(rows, np.float64)
    assert sgd_fast.applies(fast, step, y[rows], classes=classes)
    sgd_fast.partial_fit(fast, step, y[rows], classes=classes, threads=2)
    _same(ref, fast)
    assert fast.coef_.dtype == np.float64 and sorted(vars(ref)) == sorted(vars(fast))
