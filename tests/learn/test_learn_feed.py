"""What the learner is handed, and how often the store is read (the store path's throughput fixes)."""

import os
import threading

import dask.array as da
import numpy as np
import pytest
from sklearn.cluster import MiniBatchKMeans
from sklearn.linear_model import SGDClassifier

import dask_kernels
from dask_kernels import GCWS, NRFF, fit_incremental
from dask_kernels.learn import ArraySource, StoreSource
import dask_kernels.learn.incremental as incremental


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_estimator_fitted_before_keeps_training_in_its_dtype(float_store, dtype):
    X = np.asarray(float_store.features.compute())
    y = np.asarray(float_store.labels.compute())
    sgd = SGDClassifier(loss="log_loss", random_state=0).partial_fit(X[:100].astype(dtype), y[:100], classes=[0, 1])
    fit_incremental(sgd, float_store, epochs=1, validation_fraction=None, progress=False)  # scikit-learn refuses
    assert sgd.coef_.dtype == dtype  # rows of another dtype than the coefficients' (SequentialDataset32/64)


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


class _Counting(StoreSource):
    """A store's blocks, counting every read of each (by any of the sources' read methods)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.reads = {}

    def _count(self, blocks):
        for i in blocks:
            self.reads[i] = self.reads.get(i, 0) + 1

    def read(self, i, rows=None):
        self._count([i])
        return super().read(i, rows)

    def read_blocks(self, blocks, rows):
        self._count(blocks)
        return [StoreSource.read(self, b, r) for b, r in zip(blocks, rows)]


@pytest.mark.parametrize("make", ["store", "raw"])
def test_with_a_held_out_fraction_one_window_of_every_block_is_read_once_per_run(float_store, make):
    if make == "store":
        src = _Counting(float_store)
        model = fit_incremental(SGDClassifier(loss="log_loss", random_state=0), src, epochs=3, validation_fraction=0.2,
                                early_stopping=False, progress=False)
        assert len(model.history) == 3
        assert src.reads == {i: 1 for i in range(6)}  # held-out and training rows: one read of each block
    # the same held-out set and training rows as reading them separately
    from dask_kernels.learn.feeds import Feed, LocalFeed
    from dask_kernels.learn.shuffle import EpochPlan, Order

    X, y = _data()
    fmap = NRFF(n_components=32, gamma=0.5, seed=0).fit(X)

    def source():
        return StoreSource(float_store) if make == "store" else ArraySource(X, y, fmap, block_rows=200)

    fraction, order = 0.2, Order(seed=0, window=6, fraction=0.2)
    feed = LocalFeed(source(), order, None, epochs=1, prefetch=True)
    cache = feed.cache
    held = feed.held_out()
    plain = Feed(source(), order, None, epochs=1, prefetch=True).held_out()
    assert sum(len(p[1]) for p in held) == sum(len(p[1]) for p in plain) > 0 and sorted(cache) == list(range(6))
    for (a, b), (c, d) in zip(held, plain):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    plan = EpochPlan(source(), 0, 0, 6, fraction)
    for i, (Xi, yi) in cache.items():
        Xr, yr = source().read(i, plan.training_rows(i))
        np.testing.assert_array_equal(Xi, Xr)
        np.testing.assert_array_equal(yi, yr)


def test_the_next_epochs_first_window_is_read_during_the_epoch_and_changes_nothing():
    X, y = _data(1200)
    reads, fits = [], []
    waits = {}  # partial_fit call -> the read it waits for (prefetch=True only)
    read_started = threading.Condition()

    class Logged(ArraySource):
        def read_blocks(self, blocks, rows):
            with read_started:
                reads.append((threading.current_thread().name, len(fits)))  # partial_fit calls so far
                read_started.notify_all()
            return super().read_blocks(blocks, rows)

    class Counted(SGDClassifier):
        def partial_fit(self, X, y=None, classes=None, sample_weight=None):
            # An epoch's last step gives the read ahead of the next epoch's first window time to
            # start (steps take microseconds here; without the wait, whether the reader thread is
            # scheduled first is a matter of thread timing). Without read ahead the read never comes
            # before this step, the wait times out and the assertion below fails.
            if len(fits) + 1 in waits:
                with read_started:
                    read_started.wait_for(lambda: len(reads) >= waits[len(fits) + 1], timeout=10)
            fits.append(1)
            return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)

    def fit(prefetch):
        reads.clear(), fits.clear()
        waits.clear()
        waits.update({12: 4, 24: 7} if prefetch else {})
        return fit_incremental(Counted(loss="log_loss", random_state=0), Logged(X, y, block_rows=100), epochs=3,
                               shuffle_window=4, validation_fraction=0.1, early_stopping=False, prefetch=prefetch,
                               progress=False)

    a = fit(True)  # 12 blocks: 3 windows of 4 blocks, 12 steps per epoch
    assert len(reads) == 9 and threading.main_thread().name not in {name for name, _ in reads}
    # epochs 2 and 3 start reading before the previous epoch's last step (and its held-out score)
    assert reads[3][1] < 12 and reads[6][1] < 24
    b = fit(False)
    assert [n for _, n in reads] == [0, 4, 8, 12, 16, 20, 24, 28, 32]
    np.testing.assert_array_equal(a.estimator.coef_, b.estimator.coef_)
    assert [h["accuracy"] for h in a.history] == [h["accuracy"] for h in b.history]


def test_parquet_rows_and_labels_of_a_training_block_are_read_once(tmp_path, monkeypatch):
    # read_parquet(label=...) gives two arrays over the same partitions; a block's rows and its
    # labels come from one task reading each of its row groups once (the feature columns and the
    # label column together), not a task each; the classes' pass reads the label column alone.
    # Same model as the NumPy rows.
    import pyarrow as pa
    import pyarrow.parquet as pq

    X, y = _data(600)
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({**{f"c{j}": X[:, j] for j in range(X.shape[1])}, "y": y}), path, row_group_size=100)
    reads = []
    real = pq.ParquetFile.read_row_group
    monkeypatch.setattr(pq.ParquetFile, "read_row_group",
                        lambda self, g, columns=None, **k: reads.append(list(columns)) or
                        real(self, g, columns=columns, **k))
    R, labels = dask_kernels.read_parquet(path, label="y", block_rows=200)
    gcws = GCWS(n_components=16, seed=0).fit(X)
    kw = dict(feature_map=gcws, epochs=1, shuffle_window=1, validation_fraction=None, progress=False)
    sgd = lambda: SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.01, random_state=0)  # noqa: E731
    model = fit_incremental(sgd(), R, labels, **kw)
    features = [f"c{j}" for j in range(X.shape[1])]
    assert reads == [["y"]] * 6 + [[*features, "y"]] * 6  # classes; then 3 blocks of 2 row groups, one task each
    ref = fit_incremental(sgd(), X, y, block_rows=200, **kw)
    assert np.array_equal(model.estimator.coef_, ref.estimator.coef_)


def test_rows_that_fit_two_windows_are_read_once_per_run_with_the_same_model():
    # 12 blocks in 2 windows of 6: the read-ahead holds both windows (every block) anyway, so
    # each block is read once in the run (held-out and training rows together), not once per
    # epoch; the model is bitwise the one of a run that reads every window every epoch (without
    # prefetch only one window is in memory at a time: nothing is kept)
    X, y = _data(1200)

    class Counting(ArraySource):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.reads = []

        def _block(self, i):  # the one raw read of a block, whichever method asks for it
            self.reads.append(i)
            return super()._block(i)

    fmap = NRFF(n_components=16, gamma=0.5, seed=0).fit(X)

    def fit(validation_fraction, prefetch=True):
        src = Counting(X, y, fmap, block_rows=100)
        model = fit_incremental(SGDClassifier(loss="log_loss", random_state=0), src, epochs=3, shuffle_window=6,
                                validation_fraction=validation_fraction, early_stopping=False, prefetch=prefetch,
                                progress=False)
        return model, sorted(src.reads)

    for fraction in (None, 0.1):
        kept, reads = fit(fraction)  # with a fraction: held-out and training rows, 6 blocks at a time
        assert reads == list(range(12))
        again, reads = fit(fraction, prefetch=False)
        assert reads == sorted(list(range(12)) * (3 if fraction is None else 4))
        np.testing.assert_array_equal(kept.estimator.coef_, again.estimator.coef_)
        np.testing.assert_array_equal(kept.estimator.intercept_, again.estimator.intercept_)
        assert [h.get("accuracy") for h in kept.history] == [h.get("accuracy") for h in again.history]
    # more blocks than two windows hold: read every epoch, as before
    src = Counting(X, y, fmap, block_rows=100)
    fit_incremental(SGDClassifier(loss="log_loss", random_state=0), src, epochs=3, shuffle_window=5,
                    validation_fraction=None, progress=False)
    assert sorted(src.reads) == sorted(list(range(12)) * 3)


def test_the_one_read_of_every_block_takes_the_runs_shuffle_window_at_a_time():
    # 12 blocks that the automatic window holds at once, an explicit shuffle_window of 6 (and
    # a held-out fraction): the read of each block for its held-out and training rows (kept
    # for the epochs) holds at most 6 whole blocks at once, the window the user asked for
    X, y = _data(1200)
    held_at_once = []  # blocks per read call: whole blocks held until the call returns

    class Counting(ArraySource):
        def read_split(self, blocks, selections):
            held_at_once.append(len(blocks))
            return super().read_split(blocks, selections)

        def read_blocks(self, blocks, rows):
            held_at_once.append(len(blocks))
            return super().read_blocks(blocks, rows)

    src = Counting(X, y, NRFF(n_components=16, gamma=0.5, seed=0).fit(X), block_rows=100)
    assert incremental.auto_window(src) == 12
    fit_incremental(SGDClassifier(loss="log_loss", random_state=0), src, epochs=2, shuffle_window=6,
                    validation_fraction=0.1, early_stopping=False, progress=False)
    assert held_at_once == [6, 6]  # every block read once in the run, a window at a time
