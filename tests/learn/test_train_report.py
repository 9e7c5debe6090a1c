"""What a training run shows while it runs and what its table says: the schedule's metric and
actions that agree with it, the minimum number of epochs before an early stop, progress within an
epoch, checkpoints at a time interval, and memory bounded by the shuffle window."""

import io
import json
import os
import subprocess
import sys
import time

import dask
import dask.array as da
import numpy as np
import pytest
from _schedule import check_history
from sklearn.linear_model import SGDClassifier

import dask_kernels
from dask_kernels import NRFF, fit_incremental
from dask_kernels.learn.checkpointer import Checkpointer
from dask_kernels.learn.config import TrainConfig
from dask_kernels.learn.loop import LoopState, Schedule
from dask_kernels.learn.report import header, row


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    return X, (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0).astype(int) + (X[:, 3] > 1)


def _sgd(eta0=0.05):
    return SGDClassifier(loss="log_loss", learning_rate="constant", eta0=eta0, random_state=0)


def test_the_table_shows_the_deciding_metric_and_actions_that_agree_with_it(capsys):
    X, y = _data()
    model = fit_incremental(_sgd(eta0=2.0), X, y, epochs=8, block_rows=200, validation_fraction=0.2,
                            early_stopping=False)
    actions = check_history(model.history)
    assert {"keep", "revert"} <= set(actions), actions  # a rate this high makes both happen
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("the schedule decides on held-out erp (lower is better)")
    assert err[1] == header(model.history[0]) and err[1].split()[-4:] == ["erp", "change", "eta0", "action"]
    assert err[2:] == [row(r) for r in model.history]
    for r, line in zip(model.history[1:], err[3:]):  # the change column: against the model the epoch started from
        assert line.split(", ")[0].split()[-3] == f"{100 * (r['erp'] - r['baseline']) / r['baseline']:+.2f}%"


@pytest.mark.parametrize("metric", ["accuracy", "log_loss", "error"])
def test_another_metric_decides_and_is_the_column_shown(metric):
    X, y = _data()
    model = fit_incremental(_sgd(eta0=2.0), X, y, epochs=6, block_rows=200, validation_fraction=0.2,
                            metric=metric, early_stopping=False, progress=False)
    check_history(model.history)
    assert header(model.history[0]).split()[-4] == metric


def test_early_stopping_waits_for_min_epochs():
    rule = Schedule(halve=True, revert=True, n_iter_no_change=2, min_epochs=4)
    s = LoopState(eta0=1.0)
    for loss in (1.0, 1.1, 1.2):  # 2 epochs without a new best by epoch 3
        rule.step(s, loss, can_revert=True)
        s.epoch += 1
    assert s.stale == 2 and not s.done
    rule.step(s, 1.3, can_revert=True)
    assert s.done  # epoch 4


@pytest.mark.parametrize("min_epochs, stopped_after", [(1, 4), (4, 4), (5, 5), (6, 6)])
def test_runs_stop_early_only_after_min_epochs(min_epochs, stopped_after):
    X, y = _data()
    # eta0 = 50 is far too high: epochs 3 to 5 get worse and are reverted, each halving eta0;
    # at eta0 / 8, epoch 6 is the best so far
    model = fit_incremental(_sgd(eta0=50.0), X, y, epochs=6, block_rows=200, validation_fraction=0.2,
                            n_iter_no_change=2, min_epochs=min_epochs, progress=False)
    assert len(model.history) == stopped_after
    actions = check_history(model.history, n_iter_no_change=2, min_epochs=min_epochs)
    assert actions[:stopped_after] == ["first", "keep", "revert", "revert", "revert", "keep"][:stopped_after]
    assert row(model.history[-1]).endswith(", stop") == (stopped_after < 6)
    if stopped_after == 6:  # what an earlier stop would have missed
        assert model.history[-1]["erp"] < 0.7 * min(r["erp"] for r in model.history[:-1])


def test_the_defaults_never_stop_a_default_run_early():
    cfg = TrainConfig()
    assert cfg.min_epochs == cfg.epochs == 5 and cfg.n_iter_no_change + 2 == cfg.min_epochs


@pytest.mark.parametrize("bad, match", [({"min_epochs": 0}, "min_epochs"), ({"min_epochs": 2.5}, "min_epochs"),
                                        ({"checkpoint_seconds": 0}, "checkpoint_seconds"),
                                        ({"checkpoint_seconds": float("inf")}, "checkpoint_seconds"),
                                        ({"checkpoint_seconds": True}, "checkpoint_seconds"),
                                        ({"checkpoint_seconds": 5, "replicas": 2}, "replicas > 1")])
def test_bad_new_options_are_refused_naming_them(bad, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**bad)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_a_bar_within_the_epoch_then_the_row(monkeypatch):
    X, y = _data()
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setattr("dask_kernels.learn.report.BAR_SECONDS", 0.0)  # redraw after every step
    model = fit_incremental(_sgd(), X, y, epochs=2, block_rows=200, validation_fraction=0.2, progress=True)
    out = term.getvalue()
    assert "\repoch 1/2 [" in out and "\repoch 2/2 [" in out and "100%" in out
    assert out.count("\r\x1b[K") == 2  # the bar's line cleared before each epoch's row
    assert out.rstrip("\n").endswith(row(model.history[-1]))
    assert "step 1/" not in out  # no plain lines on a terminal


def test_a_checkpoint_at_a_time_interval_resumes_bitwise(tmp_path, monkeypatch):
    X, y = _data()
    kw = dict(epochs=2, block_rows=100, seed=3, validation_fraction=0.2, early_stopping=False, progress=False)
    ref = fit_incremental(_sgd(), X, y, **kw)
    saved = []
    save = Checkpointer.save
    monkeypatch.setattr(Checkpointer, "save", lambda self, e, snap, st: (saved.append((st.epoch, st.position)),
                                                                         save(self, e, snap, st)))

    class Stop(Exception):
        pass

    def slow_then_stop(info):
        if (info["epoch"], info["position"]) == (1, 3):
            time.sleep(0.3)  # longer than checkpoint_seconds: the next step's end checkpoints
        if (info["epoch"], info["position"]) == (1, 6):
            raise Stop

    ck = tmp_path / "run.ckpt"
    with pytest.raises(Stop):
        fit_incremental(_sgd(), X, y, checkpoint=ck, checkpoint_seconds=0.25, callback=slow_then_stop, **kw)
    mid = [p for e, p in saved if e == 1 and p > 0]
    assert (1, 0) in saved and 4 <= mid[-1] <= 6, saved  # the first epoch's end, then within epoch 2 by time
    calls = []
    resumed = fit_incremental(_sgd(), X, y, checkpoint=ck, callback=calls.append, **kw)
    assert len(calls) == 12 - mid[-1]  # 12 steps per epoch: it resumed within the epoch
    assert np.array_equal(ref.estimator.coef_, resumed.estimator.coef_)
    assert np.array_equal(ref.estimator.intercept_, resumed.estimator.intercept_)
    assert ref.estimator.t_ == resumed.estimator.t_
    assert [r["action"] for r in ref.history] == [r["action"] for r in resumed.history]


def test_no_time_checkpoint_before_the_interval(tmp_path, monkeypatch):
    X, y = _data()
    saved = []
    save = Checkpointer.save
    monkeypatch.setattr(Checkpointer, "save", lambda self, e, snap, st: (saved.append(st.position),
                                                                         save(self, e, snap, st)))
    fit_incremental(_sgd(), X, y, epochs=2, block_rows=100, validation_fraction=0.2, progress=False,
                    checkpoint=tmp_path / "c.ckpt", checkpoint_seconds=3600)
    assert saved == [0, 0]  # the epochs' ends only


def _store(folder, n_blocks, rows=500, k=256):
    X = np.random.default_rng(n_blocks).normal(size=(n_blocks * rows, 8))
    y = (X[:, 0] > 0).astype(np.int64)
    path = os.path.join(folder, f"s{n_blocks}.zarr")
    dask_kernels.featurize(da.from_array(X, chunks=(rows, -1)), NRFF(n_components=k, seed=0).fit(X[:100]),
                           labels=y, store=path, progress=False)
    return dask_kernels.open_store(path)


# Run in a process of its own: tracemalloc counts every thread's allocations, and a pytest worker
# may still run threads that earlier tests started (an event loop, a thread pool), whose allocations
# would land in the peak by timing
_PEAKS = """
import json, sys, tracemalloc
import dask
from sklearn.linear_model import SGDClassifier
from dask_kernels import fit_incremental, open_store

few, many = open_store(sys.argv[1]), open_store(sys.argv[2])

def peak(store, prefetch):
    est = SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.01, random_state=0)
    tracemalloc.start()
    try:
        fit_incremental(est, store, epochs=1, shuffle_window=2, validation_fraction=None, progress=False,
                        prefetch=prefetch)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

for prefetch in (True, False):  # the first runs import, compile and start what is kept for the process
    peak(few, prefetch), peak(many, prefetch)
with dask.config.set(scheduler="synchronous"):
    serial = [peak(few, False), peak(many, False)]
print(json.dumps({"serial": serial, "ahead": [peak(many, True), peak(many, True)]}))
"""


def test_training_memory_is_bounded_by_the_shuffle_window_not_the_rows(tmp_path):
    # 10 and 80 blocks of 500 rows x 256 float32 features (512 KB a block): both more than two
    # windows of 2 blocks, so neither run keeps its rows from epoch to epoch
    _store(str(tmp_path), 10), _store(str(tmp_path), 80)
    out = subprocess.run([sys.executable, "-c", _PEAKS, str(tmp_path / "s10.zarr"), str(tmp_path / "s80.zarr")],
                         capture_output=True, text=True, check=True)
    peaks = json.loads(out.stdout.splitlines()[-1])
    block = 500 * 256 * 4
    # Read serially (no read-ahead, and dask's synchronous scheduler: a window's blocks are
    # otherwise read on two threads, whose transient buffers overlap or not by timing), what is
    # held at once does not depend on timing: 8x the rows (35 MB more stored features) cost less
    # than one more block (what grows is per-block bookkeeping, about 3 KB a block when this was
    # written)
    p_few, p_many = peaks["serial"]
    assert p_many - p_few < block, (p_few, p_many)
    # Read ahead in a thread (the default), the next window may or may not be read while the
    # current one trains and the previous is released, so peaks differ from run to run by up to a
    # window: the bound is that no run keeps a fixed share of its rows
    p_many = max(peaks["ahead"])
    assert p_many < 80 * block / 4, p_many
