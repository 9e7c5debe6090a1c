"""Inputs and feature stores on s3:// against a real S3 API: moto's server on a free loopback
port, started by the ``s3`` fixture of tests/conftest.py (no skips: if it cannot start, these
tests fail)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dask_kernels import GCWS, featurize, open_store, read_parquet
from dask_kernels.io import read_svmlight
from dask_kernels.pipeline.leases import LeaseLostError, check_lease
from dask_kernels.pipeline.location import StoreError, open_group
from dask_kernels.pipeline.store import StoreIntegrityError

RNG = np.random.default_rng(5)
X = np.abs(RNG.standard_normal((300, 8)))
Y = RNG.integers(0, 2, 300)
G = GCWS(n_components=16, seed=7).fit(X[:1])
REF = G.transform(X)


def test_parquet_and_svmlight_inputs_on_s3_into_an_s3_store(s3):
    opts, fs = s3
    table = pa.table({**{f"x{j}": X[:, j] for j in range(8)}, "y": Y})
    with fs.open("dk-test/in/t.parquet", "wb") as f:
        pq.write_table(table, f, row_group_size=50)
    Xp, yp = read_parquet("s3://dk-test/in/t.parquet", label="y", block_rows=100, storage_options=opts)
    assert Xp.chunks[0] == (100, 100, 100)
    s = featurize(Xp, G, labels=yp, store="s3://dk-test/stores/p.zarr", storage_options=opts, progress=False)
    assert s.complete and s.run_stats == {"computed": 3, "skipped": 0}
    s = open_store("s3://dk-test/stores/p.zarr", storage_options=opts)
    assert np.array_equal(s.features.compute(), REF) and np.array_equal(s.labels.compute(), Y)
    again = featurize(read_parquet("s3://dk-test/in/t.parquet", label="y", block_rows=100, storage_options=opts)[0],
                      G, labels=yp, store="s3://dk-test/stores/p.zarr", storage_options=opts, progress=False)
    assert again.run_stats == {"computed": 0, "skipped": 3}

    with fs.open("dk-test/in/d.svm", "wb") as f:
        f.write("".join(f"{Y[i]} " + " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(r)) + "\n"
                        for i, r in enumerate(X)).encode())
    src = read_svmlight("s3://dk-test/in/d.svm", n_features=8, blocksize=3000, storage_options=opts)
    s = featurize(src, G, store="s3://dk-test/stores/s.zarr", block_rows=64, shards=2, storage_options=opts,
                  progress=False)
    assert np.array_equal(s.features.compute(), REF) and s.info["shard_blocks"] == 2
    assert len(fs.ls("dk-test/stores/s.zarr/features/c")) == 3  # 5 blocks in 3 shards


def test_integrity_and_lease_rules_on_s3(s3):
    opts, fs = s3
    url = "s3://dk-test/stores/i.zarr"
    a = featurize(X, G, store=url, block_rows=60, storage_options=opts, progress=False)
    fs.rm("dk-test/stores/i.zarr/features/c/2/0")  # a lost object
    bad = open_store(url, storage_options=opts).verify_blocks()
    assert list(bad) == [2] and "block 2" in bad[2]
    with pytest.raises(StoreIntegrityError, match="block 2"):
        open_store(url, storage_options=opts).features.compute()
    fixed = featurize(X, G, store=url, block_rows=60, storage_options=opts, progress=False)
    assert fixed.run_stats == {"computed": 1, "skipped": 4}
    assert np.array_equal(open_store(url, storage_options=opts).features.compute(), REF)
    # another job replaces the store: the first job's lease is gone, it must stop
    b = featurize(X[:100], G, store=url, block_rows=60, overwrite=True, storage_options=opts, progress=False)
    assert b.lease != a.lease
    with pytest.raises(LeaseLostError, match="replaced by another job"):
        check_lease(url, opts, a.lease, "writing block 0")
    # objects we did not write are never replaced, with or without overwrite
    with fs.open("dk-test/stores/user/data.csv", "wb") as f:
        f.write(b"a,b\n")
    with pytest.raises(StoreError, match="not a dask_kernels feature store"):
        featurize(X, G, store="s3://dk-test/stores/user", storage_options=opts, overwrite=True, progress=False)
    assert fs.cat("dk-test/stores/user/data.csv") == b"a,b\n"


def test_half_made_store_on_s3_is_replaced(s3):
    """No atomic rename on S3: the attributes are written first, so a creation killed before its
    arrays exist is recognised as ours (no 'done' array) and replaced by the next run."""
    opts, fs = s3
    url = "s3://dk-test/stores/h.zarr"
    open_group(url, "w", opts, attributes={"dask_kernels": {"format": 2}, "complete": False})
    assert fs.ls("dk-test/stores/h.zarr", detail=False) == ["dk-test/stores/h.zarr/zarr.json"]
    s = featurize(X, G, store=url, block_rows=100, storage_options=opts, progress=False)
    assert s.run_stats == {"computed": 3, "skipped": 0} and np.array_equal(s.features.compute(), REF)


WRITER = textwrap.dedent("""
    import json, sys
    import time
    import dask, numpy as np
    from dask_kernels import GCWS, featurize
    import importlib
    opts = json.loads(sys.argv[1])
    X = np.abs(np.random.default_rng(5).standard_normal((300, 8)))[:80]
    writer = importlib.import_module("dask_kernels.pipeline.tasks")  # the module featurize writes from
    check = writer.check_lease

    def slow_check(*args):  # ~0.2 s per block: the kill comes mid-job, not after it
        time.sleep(0.1)
        return check(*args)

    writer.check_lease = slow_check
    with dask.config.set(scheduler="sync"):
        featurize(X, GCWS(n_components=16, seed=7).fit(X[:1]), store=sys.argv[2], block_rows=2, shards=None,
                  storage_options=opts, progress=False)
""")


def test_resume_after_kill_on_s3(s3, tmp_path):
    opts, fs = s3
    url = "s3://dk-test/stores/k.zarr"
    script = tmp_path / "w.py"
    script.write_text(WRITER)
    env = dict(os.environ, NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", str(tmp_path / "nc")))
    proc = subprocess.Popen([sys.executable, str(script), json.dumps(opts), url], env=env)
    try:
        deadline = time.time() + 600  # the writer's start (imports) takes long on a loaded machine
        done = 0
        while time.time() < deadline and proc.poll() is None:
            fs.invalidate_cache()
            try:  # one listing: the done records written so far
                done = len(fs.ls("dk-test/stores/k.zarr/done/c", detail=False))
            except FileNotFoundError:
                done = 0
            if done >= 6:
                break
            time.sleep(0.05)  # each listing costs the in-process S3 server CPU the writer needs
        assert proc.poll() is None, "the writer finished before it could be killed"
        assert done >= 6, f"the writer wrote {done} done records in 600 s"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    s = open_store(url, storage_options=opts)
    kept = int(s.done.sum())
    assert 6 <= kept < 40 and not s.complete
    resumed = featurize(X[:80], G, store=url, block_rows=2, shards=None, storage_options=opts, progress=False)
    assert resumed.run_stats == {"computed": 40 - kept, "skipped": kept}
    assert resumed.complete and np.array_equal(resumed.features.compute(), REF[:80]) and resumed.verify_blocks() == {}


def test_append_on_s3(s3):
    opts, fs = s3
    url = "s3://dk-test/stores/a.zarr"
    for day in range(3):
        rows = slice(100 * day, 100 * (day + 1))
        s = featurize(X[rows], G, labels=Y[rows], store=url, mode="append", block_rows=40, storage_options=opts,
                      progress=False)
    s = open_store(url, storage_options=opts)
    assert len(s.segments) == 2 and s.n_rows == 300 and s.complete and s.verify_blocks() == {}
    assert np.array_equal(s.features.compute(), REF) and np.array_equal(s.labels.compute(), Y)
