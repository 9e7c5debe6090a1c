"""Randomized kill test: SIGKILLs at random (seeded) points of store jobs, with the
threaded scheduler and with a LocalCluster of worker processes, each followed by a re-run; every
finished store is bitwise identical to an uninterrupted reference.

Jobs run in children forked from one server process that has imported everything once (a kill
then costs the job's time, not an interpreter start); each child leads its own process group,
which the kill takes down. On the LocalCluster (started once, worker processes) a kill takes down
the job's client at a random point; tasks already running on the workers may still finish beside
the re-run (same job: same bytes). Killing a worker mid-task is
tests/pipeline/test_pipeline_cluster.py::test_worker_killed_mid_run_completes_identically.
"""

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import zarr

from dask_kernels.pipeline.records import FIELD

SERVER = textwrap.dedent("""
    import os, sys, traceback
    import numpy as np
    import dask
    from dask_kernels import GCWS, featurize
    from dask_kernels.io import read_npy

    npy = sys.argv[1]
    G = GCWS(n_components=64, seed=11).fit(np.zeros((1, 32), np.float32))
    G.transform_block(np.ones((2, 32), np.float32))  # Numba loaded once, before any fork
    import distributed  # and featurize's own (lazy) imports and first use: a job's time is its writes
    with dask.config.set(scheduler="sync"):
        featurize(read_npy(npy, block_rows=100)[:200], G, store=os.path.join(os.path.dirname(npy), "warm.zarr"),
                  progress=False)
    print("server ready", flush=True)
    for line in sys.stdin:
        mode, store = line.split()[0], line.split()[-1]
        pid = os.fork()
        if pid == 0:
            os.setpgid(0, 0)
            code = 0
            try:
                if mode == "cluster":
                    from distributed import Client
                    with Client(line.split()[1]):
                        print(f"ready {os.getpid()}", flush=True)
                        featurize(read_npy(npy, block_rows=100), G, store=store, progress=False)
                else:
                    with dask.config.set(scheduler="threads", num_workers=2):
                        print(f"ready {os.getpid()}", flush=True)
                        featurize(read_npy(npy, block_rows=100), G, store=store, progress=False)
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(f"exit {os.waitstatus_to_exitcode(status)}", flush=True)
""")


class Server:
    def __init__(self, npy):
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, npy], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.expect("server ready", 120)

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def expect(self, prefix, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.time()))
            except queue.Empty:
                break
            if line.startswith(prefix):
                return line
        raise AssertionError(f"no {prefix!r} from the job server: {self.proc.stderr.read()[-3000:] if self.proc.poll() is not None else ''}")

    def run(self, mode, store, kill_after=None):
        """Run one job; SIGKILL its process group ``kill_after`` s after it is ready. Returns
        the job's exit code."""
        self.proc.stdin.write(f"{mode} {store}\n")
        self.proc.stdin.flush()
        pid = int(self.expect("ready", 120).split()[1])
        if kill_after is not None:
            try:
                line = self.lines.get(timeout=kill_after)  # finished before the kill
                assert line.startswith("exit"), line
                return int(line.split()[1])
            except queue.Empty:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:  # the job ended (and was reaped) as the wait did: its exit line follows
                    pass
        return int(self.expect("exit", 180).split()[1])

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


def _files(path, array):
    root = os.path.join(path, array)
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".partial"):  # Zarr's temporary file of a write the kill interrupted
                out[os.path.relpath(os.path.join(d, f), root)] = open(os.path.join(d, f), "rb").read()
    return out


def _assert_identical(path, ref):
    assert _files(path, "features") == _files(ref, "features")
    a = zarr.open_group(path, mode="r")
    b = zarr.open_group(ref, mode="r")
    assert a.attrs["complete"] is True
    ra, rb = a["done"][:], b["done"][:]
    keep = [i for i in range(ra.shape[1]) if i != FIELD["lease"]]  # the lease is per store
    assert np.array_equal(ra[:, keep], rb[:, keep])
    ia, ib = dict(a.attrs["dask_kernels"]), dict(b.attrs["dask_kernels"])
    ia.pop("lease"), ib.pop("lease")
    assert ia == ib


def _partial(path):
    try:
        done = zarr.open_group(path, mode="r", use_consolidated=False)["done"][:, 0]
        return 0 < int((done == 1).sum()) < done.shape[0]
    except Exception:  # noqa: BLE001 - not created yet
        return False


def test_random_sigkills_then_rerun_give_identical_stores(tmp_path):
    from distributed import LocalCluster

    rng = np.random.default_rng(20261122)
    npy = str(tmp_path / "rows.npy")
    X = rng.random((2000, 32), dtype=np.float32) * (rng.random((2000, 32)) < 0.3)
    np.save(npy, X)
    server = Server(npy)
    kills, mid_write, stores = {"threads": 0, "cluster": 0}, 0, 0

    def round_(mode, target, path):
        nonlocal mid_write, stores
        for _ in range(2):  # up to 2 kills (the second one hits the re-run), then the finishing re-run
            # a random point of the job: its uninterrupted duration on this machine, now, scaled
            code = server.run(target, path, kill_after=float(rng.uniform(0.05, 0.95)) * seconds[mode])
            kills[mode] += code == -signal.SIGKILL
            mid_write += code == -signal.SIGKILL and _partial(path)
            if code == 0:  # finished before the kill: jobs run faster now (warm workers, less load)
                seconds[mode] *= 0.6
        assert server.run(target, path) == 0
        _assert_identical(path, ref)
        stores += 1

    def timed(target, path):
        t0 = time.perf_counter()
        assert server.run(target, path) == 0
        return time.perf_counter() - t0

    try:
        ref = str(tmp_path / "ref.zarr")
        seconds = {"threads": timed("threads", ref)}
        for s in range(24):  # more rounds only when the machine's load made kills miss the writes
            if kills["threads"] >= 12 and mid_write >= 3:
                break
            round_("threads", "threads", str(tmp_path / f"threads-{s}.zarr"))
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                          memory_limit=0) as lc:
            target = f"cluster {lc.scheduler_address}"
            seconds["cluster"] = timed(target, str(tmp_path / "cluster-ref.zarr"))
            _assert_identical(str(tmp_path / "cluster-ref.zarr"), ref)
            for s in range(16):
                if kills["cluster"] >= 8 and mid_write >= 4:
                    break
                round_("cluster", target, str(tmp_path / f"cluster-{s}.zarr"))
    finally:
        server.close()
    assert kills["threads"] >= 12 and kills["cluster"] >= 8, kills
    assert mid_write >= 4, f"only {mid_write} of {kills} kills landed while blocks were being written"
