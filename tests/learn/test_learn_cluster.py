"""Under a distributed Client, blocks are read, featurized and expanded on the workers (and
replicas train there), and training is bitwise the local run's."""

import os

import dask.array as da
import numpy as np
from distributed import Client
from sklearn.linear_model import SGDClassifier

import dask_kernels
from dask_kernels import GCWS, fit_incremental


def _log_pid(block, log):
    with open(log, "a") as f:  # one line per block that passes through a process
        f.write(f"{os.getpid()} {block.shape[0]}\n")
    return block


def _readers(log):
    return [(int(p), int(n)) for p, n in (line.split() for line in open(log).read().splitlines())]


def _sgd():
    return SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.01, random_state=0)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2400, 4))
    return X, (X[:, 0] * X[:, 1] > 0).astype(int)


def test_store_blocks_are_read_on_the_workers_and_coefficients_match_the_local_run(tmp_path, local_cluster):
    X, y = _data()
    gcws = GCWS(n_components=32, seed=0).fit(X)
    path = str(tmp_path / "f.zarr")
    dask_kernels.featurize(da.from_array(X, chunks=(300, -1)), gcws, labels=y, store=path, progress=False)
    log = str(tmp_path / "reads.log")

    def run():
        store = dask_kernels.open_store(path)
        store.features = store.features.map_blocks(_log_pid, log, dtype=store.features.dtype)
        return fit_incremental(_sgd(), store, epochs=2, validation_fraction=0.1, shuffle_window=3, progress=False)

    local = run()
    os.unlink(log)
    with Client(local_cluster):
        remote = run()
    readers = _readers(log)
    pids = {p for p, n in readers if n}
    assert readers and os.getpid() not in pids  # no feature block passed through the client
    assert sum(n for _, n in readers) >= 3 * 2400  # held-out pass + 2 epochs, all on workers
    assert np.array_equal(local.estimator.coef_, remote.estimator.coef_)
    assert np.array_equal(local.estimator.intercept_, remote.estimator.intercept_)


def test_raw_rows_are_featurized_and_expanded_on_the_workers_and_read_once(tmp_path, local_cluster, monkeypatch):
    X, y = _data()
    gcws = GCWS(n_components=32, seed=0).fit(X)
    log = str(tmp_path / "reads.log")
    rows = da.from_array(X, chunks=(300, -1)).map_blocks(_log_pid, log, dtype=X.dtype)
    # the automatic window holds all 8 blocks: their rows stay on the workers between epochs
    kw = dict(feature_map=gcws, epochs=2, validation_fraction=None, progress=False)
    local = fit_incremental(_sgd(), rows, y, client=False, **kw)
    os.unlink(log)
    calls = []
    for name in ("transform_block", "expand"):  # this process's class only: workers import their own
        real = getattr(GCWS, name)
        monkeypatch.setattr(GCWS, name, lambda self, *a, _real=real, _n=name, **k: calls.append(_n) or _real(self, *a, **k))
    with Client(local_cluster) as client:
        remote = fit_incremental(_sgd(), rows, y, client=client, **kw)
    assert calls == []  # the client featurized and expanded nothing
    assert os.getpid() not in {p for p, _ in _readers(log)}
    assert sum(n for _, n in _readers(log)) == 2400  # every row read once in the run, on a worker
    assert np.array_equal(local.estimator.coef_, remote.estimator.coef_)
    assert np.array_equal(local.estimator.intercept_, remote.estimator.intercept_)


def test_replicas_on_the_workers_equal_replicas_in_threads(tmp_path, local_cluster):
    X, y = _data()
    gcws = GCWS(n_components=32, seed=0).fit(X)
    path = str(tmp_path / "f.zarr")
    dask_kernels.featurize(da.from_array(X, chunks=(300, -1)), gcws, labels=y, store=path, progress=False)
    log = str(tmp_path / "reads.log")

    def run(client):
        store = dask_kernels.open_store(path)
        store.features = store.features.map_blocks(_log_pid, log, dtype=store.features.dtype)
        return fit_incremental(_sgd(), store, epochs=2, validation_fraction=0.1, replicas=2, client=client,
                               progress=False)

    local = run(False)
    os.unlink(log)
    with Client(local_cluster) as client:
        remote = run(client)
    readers = _readers(log)
    assert os.getpid() not in {p for p, n in readers if n}
    assert len({p for p, n in readers if n}) == 2  # both workers trained a replica
    assert np.array_equal(local.estimator.coef_, remote.estimator.coef_)
    assert np.array_equal(local.estimator.intercept_, remote.estimator.intercept_)
    assert [r["accuracy"] for r in local.history] == [r["accuracy"] for r in remote.history]


def test_raw_rows_that_fit_two_windows_are_read_once_on_the_workers(tmp_path, local_cluster):
    # 8 blocks in 2 windows of 4: the workers hold this window and the next (read ahead) anyway,
    # so each window's rows stay there and the next epoch's windows take their blocks from them
    # (the local run's rule, learn.shuffle.keeps_rows); in 4 windows of 2 they are read each epoch
    X, y = _data()
    gcws = GCWS(n_components=32, seed=0).fit(X)
    log = str(tmp_path / "reads.log")
    rows = da.from_array(X, chunks=(300, -1)).map_blocks(_log_pid, log, dtype=X.dtype)
    kw = dict(feature_map=gcws, epochs=3, validation_fraction=None, progress=False)
    with Client(local_cluster) as client:
        remote = fit_incremental(_sgd(), rows, y, client=client, shuffle_window=4, **kw)
        assert sum(n for _, n in _readers(log)) == 2400  # every row read once in the run
        os.unlink(log)
        fit_incremental(_sgd(), rows, y, client=client, shuffle_window=2, **kw)
        assert sum(n for _, n in _readers(log)) == 3 * 2400  # more blocks than two windows hold
    local = fit_incremental(_sgd(), X, y, block_rows=300, client=False, shuffle_window=4, **kw)
    assert np.array_equal(local.estimator.coef_, remote.estimator.coef_)
    assert np.array_equal(local.estimator.intercept_, remote.estimator.intercept_)
