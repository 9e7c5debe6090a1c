"""The cross-block shuffle: label-sorted input trains like shuffled input; order is exact."""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split

from dask_kernels import GCWS, fit_incremental
from dask_kernels.learn import ArraySource
from dask_kernels.learn.shuffle import EpochPlan, held_out_rows


def _digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X / 16.0, y, test_size=0.3, random_state=0, stratify=y)


def _sgd():
    return SGDClassifier(loss="log_loss", alpha=1e-4, learning_rate="constant", eta0=0.01, random_state=0)


def test_label_sorted_input_trains_as_well_as_shuffled_input():
    # digits in label order, 100-row blocks: each block holds one or two labels. Shuffling only
    # within blocks leaves the last blocks' labels dominating (the control below loses > 5
    # points); the cross-block shuffle must come within 1 point (about 5 of 540 test rows) of
    # the same rows pre-shuffled.
    Xtr, Xte, ytr, yte = _digits()
    order = np.argsort(ytr, kind="stable")
    Xs, ys = Xtr[order], ytr[order]
    kw = dict(epochs=8, block_rows=100, validation_fraction=None, progress=False)
    shuffled = fit_incremental(_sgd(), Xtr, ytr, **kw).score(Xte, yte)
    sorted_ = fit_incremental(_sgd(), Xs, ys, **kw).score(Xte, yte)
    within = fit_incremental(_sgd(), Xs, ys, shuffle_window=1, **kw).score(Xte, yte)
    assert shuffled > 0.9
    assert abs(sorted_ - shuffled) <= 0.01, (sorted_, shuffled)
    assert within < shuffled - 0.05, (within, shuffled)  # the test can tell the two apart


def test_a_small_window_draws_every_step_from_every_block_of_the_window():
    # a window of 4 of 10 blocks (a bounded shuffle buffer): each step holds rows of every block
    # of its window (sizes 4, 3, 3), so label-sorted blocks are mixed within each step
    n, block = 1000, 100
    src = ArraySource(np.zeros((n, 1)), np.arange(n), block_rows=block)
    plan = EpochPlan(src, seed=0, epoch=0, window=4, fraction=0.0)
    assert [w.size for w in plan.windows] == [4, 3, 3]
    steps = [y[rows] for _, y, rows in plan.steps(0)]
    for i, rows in enumerate(steps):
        window = plan.windows[plan.window_of(i)[0]]
        assert set(np.unique(rows // block)) == set(window.tolist()), (i, window)


@pytest.mark.parametrize("window", [1, 3, 7])
def test_each_training_row_is_used_once_per_epoch_and_held_out_rows_never(window):
    n, block = 700, 100
    X = np.arange(n, dtype=np.float64)[:, None]
    src = ArraySource(X, np.arange(n), block_rows=block)
    plan = EpochPlan(src, seed=5, epoch=2, window=window, fraction=0.2)
    steps = [y[rows] for _, y, rows in plan.steps(0)]
    assert len(steps) == src.n_blocks
    held = np.concatenate([a + held_out_rows(5, i, b - a, 0.2) for i, (a, b) in enumerate(src.bounds)])
    used = np.concatenate(steps)
    assert np.array_equal(np.sort(used), np.setdiff1d(np.arange(n), held))
    if window > 1:  # steps draw rows from several blocks
        assert max(np.unique(s // block).size for s in steps) > 1
    # resuming at any step serves exactly the remaining steps
    for start in range(len(steps)):
        rest = [y[rows] for _, y, rows in plan.steps(start)]
        assert all(np.array_equal(a, b) for a, b in zip(rest, steps[start:])) and len(rest) == len(steps) - start


def test_resume_inside_a_window_is_bitwise_identical(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((900, 4))
    y = (X[:, 0] * X[:, 1] > 0.25).astype(int)
    gcws = GCWS(n_components=16, seed=0).fit(X)
    kw = dict(feature_map=gcws, block_rows=100, epochs=2, seed=1, shuffle_window=4, early_stopping=False,
              progress=False)
    ref = fit_incremental(_sgd(), X, y, **kw)
    ck = tmp_path / "run.ckpt"

    class Stop(Exception):
        pass

    def cb(info):
        if info["epoch"] == 1 and info["position"] == 6:  # second window of three (4 + 3 + 2 blocks)
            raise Stop

    with pytest.raises(Stop):
        fit_incremental(_sgd(), X, y, checkpoint=ck, checkpoint_every=1, callback=cb, **kw)
    res = fit_incremental(_sgd(), X, y, checkpoint=ck, **kw)
    assert np.array_equal(ref.estimator.coef_, res.estimator.coef_)
    assert np.array_equal(ref.estimator.intercept_, res.estimator.intercept_)


def test_checkpoint_of_another_window_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    y = (X[:, 0] > 0.5).astype(int)
    ck = tmp_path / "c.ckpt"
    fit_incremental(_sgd(), X, y, block_rows=100, epochs=1, checkpoint=ck, progress=False)
    with pytest.raises(ValueError, match="different shuffle_window"):
        fit_incremental(_sgd(), X, y, block_rows=100, epochs=1, checkpoint=ck, shuffle_window=1, progress=False)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "all", True])
def test_bad_shuffle_window_is_refused(bad):
    X = np.random.default_rng(0).random((50, 2))
    with pytest.raises(ValueError, match="shuffle_window"):
        fit_incremental(_sgd(), X, (X[:, 0] > 0.5).astype(int), shuffle_window=bad, progress=False)


def test_input_without_rows_is_refused_clearly():
    with pytest.raises(ValueError, match="no rows"):
        fit_incremental(_sgd(), np.zeros((0, 3)), np.zeros(0), validation_fraction=None, classes=[0, 1], progress=False)


class _CountingSource(ArraySource):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.reads = []

    def read_blocks(self, blocks, rows):
        self.reads += list(blocks)
        return super().read_blocks(blocks, rows)


def test_one_window_of_every_block_is_read_once_per_run_with_the_same_steps():
    n, block = 700, 100
    X = np.arange(n, dtype=np.float64)[:, None]
    cached, plain, cache = _CountingSource(X, np.arange(n), block_rows=block), ArraySource(X, np.arange(n), block_rows=block), {}
    for epoch in range(3):
        a = [(X_[r], y[r]) for X_, y, r in EpochPlan(cached, 5, epoch, 7, 0.2, cache=cache).steps(0)]
        b = [(X_[r], y[r]) for X_, y, r in EpochPlan(plain, 5, epoch, 7, 0.2).steps(0)]
        assert all(np.array_equal(p[0], q[0]) and np.array_equal(p[1], q[1]) for p, q in zip(a, b))
    assert sorted(cached.reads) == list(range(7))  # every block once, not once per epoch
    # fit_incremental keeps the rows when the automatic window holds every block
    src = _CountingSource(np.random.default_rng(0).random((700, 3)), np.arange(700) % 2, block_rows=100)
    fit_incremental(_sgd(), src, epochs=3, validation_fraction=None, progress=False)
    assert sorted(src.reads) == list(range(7))
