"""Jobs own their store: a job whose store was replaced stops; the same job cooperates."""

import threading
import time

import dask
import dask.array as da
import numpy as np
import pytest
import zarr

from dask_kernels import GCWS, featurize, open_store

RNG = np.random.default_rng(4)
X = np.abs(RNG.standard_normal((400, 8)))
G = GCWS(n_components=16, seed=2).fit(X[:1])
REF = G.transform(X)


class SlowRows:
    """Rows that take ``delay`` seconds per block to read (a slow job to interfere with)."""

    def __init__(self, X, delay):
        self.X, self.delay = X, delay
        self.shape, self.dtype, self.ndim = X.shape, X.dtype, X.ndim

    def __getitem__(self, key):
        time.sleep(self.delay)
        return self.X[key]


def _done_blocks(path):
    try:
        return int((zarr.open_group(path, mode="r", use_consolidated=False)["done"][:, 0] == 1).sum())
    except Exception:  # noqa: BLE001 - not created yet, or an older layout
        try:
            return int(zarr.open_group(path, mode="r", use_consolidated=False)["done"][:].sum())
        except Exception:  # noqa: BLE001
            return 0


def _start(target, *args, **kwargs):
    out = {}

    def run():
        try:
            out["store"] = target(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - inspected by the test
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    return t, out


def _wait_for(path, n, timeout=60):
    deadline = time.time() + timeout
    while _done_blocks(path) < n and time.time() < deadline:
        time.sleep(0.02)
    assert _done_blocks(path) >= n


def test_job_whose_store_was_overwritten_stops_and_leaves_the_new_store_intact(tmp_path):
    p = str(tmp_path / "s.zarr")
    slow = da.from_array(SlowRows(X, 0.15), chunks=(20, 8), name="slow-a")  # 20 blocks
    with dask.config.set(scheduler="threads", num_workers=2):
        a, out_a = _start(featurize, slow, G, store=p, progress=False)
        _wait_for(p, 2)
        G_b = GCWS(n_components=16, seed=3).fit(X[:1])
        b = featurize(X, G_b, store=p, block_rows=20, overwrite=True, progress=False)
        a.join(120)
    assert "store" not in out_a, "job A returned a store after its store was replaced"
    assert "replaced by another job" in str(out_a.get("error")), out_a
    ref_b = G_b.transform(X)
    assert b.complete and np.array_equal(b.features.compute(), ref_b)
    again = open_store(p)  # every block of B's store reads and verifies
    assert again.complete and np.array_equal(again.features.compute(), ref_b) and again.spec == G_b.spec()


def test_two_runs_of_the_same_job_cooperate(tmp_path):
    p = str(tmp_path / "s.zarr")
    slow = da.from_array(SlowRows(X, 0.1), chunks=(20, 8), name="slow-c")
    with dask.config.set(scheduler="threads", num_workers=2):
        a, out_a = _start(featurize, slow, G, store=p, progress=False)
        _wait_for(p, 2)
        b = featurize(slow, G, store=p, progress=False)  # same job: resumes beside A
        a.join(120)
    assert "error" not in out_a, out_a.get("error")
    assert np.array_equal(b.features.compute(), REF)
    assert np.array_equal(out_a["store"].features.compute(), REF)
    assert b.run_stats["skipped"] >= 2
