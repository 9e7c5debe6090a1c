"""The pipeline on real worker processes: LocalCluster(processes=True), and a `dask scheduler`
with `dask worker` started as subprocesses (127.0.0.1 only), including a worker killed mid-run.

Everything is compared bitwise with the single-process reference.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import dask.array as da
import numpy as np
import scipy.sparse as sp
import pytest
import zarr
from distributed import Client

from dask_kernels import GCWS, featurize, open_store
from dask_kernels.io import read_npy, read_svmlight

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
DASK = os.path.join(os.path.dirname(sys.executable), "dask")
RNG = np.random.default_rng(7)
X = np.abs(RNG.standard_normal((800, 40))) * (RNG.random((800, 40)) < 0.5)
G = GCWS(n_components=48, seed=11).fit(X[:1])
REF = G.transform(X)


class SlowRows:
    """Dense rows that take a while per block, so a worker can be killed mid-run."""

    def __init__(self, data, delay):
        self.data, self.delay = data, delay
        self.shape, self.dtype, self.ndim = data.shape, data.dtype, 2

    def __getitem__(self, key):
        time.sleep(self.delay)
        return self.data[key]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two single-threaded worker processes, as separate `dask` commands."""
    tmp = tmp_path_factory.mktemp("cluster")
    sched_file = str(tmp / "scheduler.json")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, HERE]), NUMBA_CACHE_DIR=str(tmp / "numba"))
    common = dict(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(tmp))
    procs = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", sched_file], **common)]
    try:
        deadline = time.time() + 60
        while not os.path.exists(sched_file) and time.time() < deadline:
            time.sleep(0.2)
        procs.append(subprocess.Popen([DASK, "worker", "--scheduler-file", sched_file, "--nworkers", "2",
                                       "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
                                       "--local-directory", str(tmp)], **common))
        with Client(scheduler_file=sched_file, timeout="60s") as client:
            client.wait_for_workers(2, timeout=60)
            yield client, sched_file, env
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("inputs")
    npy = str(tmp / "x.npy")
    np.save(npy, X)
    svm = str(tmp / "x.svm")
    with open(svm, "w") as f:
        for i, row in enumerate(X):
            f.write(f"{i % 2} " + " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(row) if v) + "\n")
    return npy, svm


def _features_bytes(path):
    g = zarr.open_group(path, mode="r")
    return g["features"][:].tobytes()


def test_real_cluster_matches_single_process(cluster, inputs, tmp_path):
    client, _, _ = cluster
    npy, svm = inputs
    a = featurize(read_npy(npy, block_rows=100), G, store=str(tmp_path / "a.zarr"), progress=False)
    b = featurize(read_svmlight(svm, n_features=40, blocksize=5000), G, store=str(tmp_path / "b.zarr"), block_rows=70,
                  progress=False)
    assert a.complete and b.complete
    assert np.array_equal(a.features.compute(), REF) and np.array_equal(b.features.compute(), REF)
    assert b.labels.compute().tolist() == [i % 2 for i in range(800)]
    lazy = featurize(read_npy(npy, block_rows=115), G).compute()
    assert np.array_equal(lazy, REF)
    # tasks really ran in the worker processes, which compiled into the NUMBA_CACHE_DIR they were given
    assert len(client.scheduler_info()["workers"]) == 2
    cache_dir = cluster[2]["NUMBA_CACHE_DIR"]
    assert any(f.endswith(".nbi") for _, _, files in os.walk(cache_dir) for f in files)


def test_cli_on_running_scheduler(cluster, inputs, tmp_path):
    _, sched_file, env = cluster
    with open(sched_file) as f:
        address = json.load(f)["address"]
    npy, _ = inputs
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(G.spec()))
    out = str(tmp_path / "cli.zarr")
    cmd = [sys.executable, "-m", "dask_kernels.cli", "featurize", npy, out, "--spec", str(spec), "--block-rows", "200",
           "--scheduler", address, "--no-progress"]
    # the timeouts detect a hang only: a loaded CI machine took 120 s
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "4 computed, 0 already done" in r.stdout
    assert np.array_equal(open_store(out).features.compute(), REF)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert "0 computed, 4 already done" in r.stdout, r.stderr[-3000:]


def test_worker_killed_mid_run_completes_identically(cluster, tmp_path):
    client, _, _ = cluster
    path = str(tmp_path / "k.zarr")
    Xd = da.from_array(SlowRows(X, 0.3), chunks=(50, 40), name="slow-rows")
    result, error = {}, []

    def job():
        try:
            result["store"] = featurize(Xd, G, store=path, progress=False)
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            error.append(e)

    t = threading.Thread(target=job)
    t.start()
    deadline = time.time() + 60
    done = 0
    while time.time() < deadline:
        try:
            done = int(zarr.open_group(path, mode="r", use_consolidated=False)["done"][:, 0].sum())
        except Exception:  # the store is not created yet
            done = 0
        if done >= 2:
            break
        time.sleep(0.05)
    pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    os.kill(victim, signal.SIGKILL)
    killed_at = done
    t.join(timeout=120)
    assert not t.is_alive() and not error, error
    assert 2 <= killed_at < 16, "the kill must happen while blocks are still pending"
    store = result["store"]
    assert store.complete and np.array_equal(store.features.compute(), REF)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed worker
    assert victim not in client.run(os.getpid).values()


def test_local_cluster_processes(tmp_path, local_cluster):
    with Client(local_cluster):
        s = featurize(da.from_array(X, chunks=(130, 40)), G, store=str(tmp_path / "l.zarr"), progress=True)
        assert s.run_stats == {"computed": 7, "skipped": 0}
        assert np.array_equal(s.features.compute(), REF)


@pytest.mark.parametrize("shards", [None, 2])
def test_the_cluster_runs_the_write_tasks_and_nothing_after_them(tmp_path, shards):
    """featurize hands the scheduler its write tasks themselves: a selection task after each
    write (what ``status.blocks[pending]`` made), and a task gathering them, took the worker's
    second queued slot, so every next write waited for a round trip to the scheduler (5 against
    2 ms between tasks)."""
    from distributed import LocalCluster, get_task_stream

    # a cluster of its own: the stream counts every task, and on the session's shared cluster
    # another test's tasks can show in it (seen once under xdist)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        with get_task_stream() as ts:
            s = featurize(da.from_array(X, chunks=(100, 40)), G, store=str(tmp_path / "t.zarr"), progress=False,
                          shards=shards)
        assert np.array_equal(s.features.compute(), REF)
    keys = [str(r["key"]) for r in ts.data]  # the writes (fused with reading their rows), and their aliases
    assert all("dk-write-" in k or "dk-featurize-" in k for k in keys), keys


@pytest.mark.parametrize("label", [None, "y"])
@pytest.mark.parametrize("shards", [None, 2])
def test_a_parquet_block_is_read_featurized_and_written_by_one_task(tmp_path, label, shards):
    """featurize of read_parquet (with its label column or not) runs one task per block: the read
    fused into the write under the write's key. A read layer of plain tasks was fused by dask's
    low-level fusion, which renames the fused task and leaves an alias task per block (two tasks
    a block); a label read jointly with the rows was three more (the joint read, an item of it
    for each of the rows and the label, and the label's reshaping)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from distributed import LocalCluster, get_task_stream

    from dask_kernels import read_parquet

    y = np.arange(len(X)) % 3
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({**{f"c{j}": X[:, j] for j in range(X.shape[1])}, "y": y}), path, row_group_size=100)
    columns = [f"c{j}" for j in range(X.shape[1])]
    read = read_parquet(path, columns=columns, label=label, block_rows=100)
    rows, labels = read if label else (read, None)
    # a cluster of its own: distributed 2025.5 picks the stream's records by their stop times,
    # which arrive out of order, so a shared cluster's earlier tasks showed in it (seen once)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        with get_task_stream() as ts:
            s = featurize(rows, G, labels=labels, store=str(tmp_path / "t.zarr"), progress=False, shards=shards)
        assert np.array_equal(s.features.compute(), REF)
        if label:
            assert np.array_equal(s.labels.compute(), y)
    keys = [str(r["key"]) for r in ts.data]
    writes = len(X) // 100 + (0 if shards is None else len(X) // 100 // shards)
    assert len(keys) == writes, sorted(keys)
    assert all("dk-write-" in k or "dk-featurize-" in k for k in keys), keys


def test_cli_local_cluster_svmlight(inputs, tmp_path):
    _, svm = inputs
    out = str(tmp_path / "svm.zarr")
    env = dict(os.environ, PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "dask_kernels.cli", "featurize", svm, out, "--method", "gcws", "--param",
           "n_components=48", "--param", "seed=11", "--n-features", "40", "--blocksize", "20000", "--workers", "1",
           "--no-progress"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    store = open_store(out)
    # the command's GCWS scales sparse rows by each column's largest |x| over all rows
    ref = GCWS(n_components=48, seed=11).fit(sp.csr_matrix(X)).transform(X)
    assert np.array_equal(store.features.compute(), ref)
    assert store.labels.compute().tolist() == [i % 2 for i in range(800)]
