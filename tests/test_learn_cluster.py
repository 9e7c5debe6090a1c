"""Under a distributed Client, store blocks are read on the workers, and training is unchanged."""

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


def test_store_blocks_are_read_on_the_workers_and_coefficients_match_the_local_run(tmp_path, local_cluster):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2400, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    gcws = GCWS(n_components=32, seed=0).fit(X)
    path = str(tmp_path / "f.zarr")
    dask_kernels.featurize(da.from_array(X, chunks=(300, -1)), gcws, labels=y, store=path, progress=False)
    log = str(tmp_path / "reads.log")

    def run():
        store = dask_kernels.open_store(path)
        store.features = store.features.map_blocks(_log_pid, log, dtype=store.features.dtype)
        sgd = SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.01, random_state=0)
        return fit_incremental(sgd, store, epochs=2, validation=0.1, shuffle_window=3, progress=False)

    local = run()
    os.unlink(log)
    with Client(local_cluster):
        remote = run()
    readers = [line.split() for line in open(log).read().splitlines()]
    pids = {int(p) for p, n in readers if int(n)}
    assert readers and os.getpid() not in pids  # no feature block passed through the client
    assert sum(int(n) for _, n in readers) >= 3 * 2400  # held-out pass + 2 epochs, all on workers
    assert np.array_equal(local.estimator.coef_, remote.estimator.coef_)
    assert np.array_equal(local.estimator.intercept_, remote.estimator.intercept_)
