"""The commands at scale: featurize and train 10^8 dense rows and 2 x 10^7 svmlight rows, and the
task graph of 10^9 rows.

    python benchmarks/bench_scale.py [--rows 100000000] [--sparse-rows 20000000]
        [--graph-rows 1000000000] [--workers 2] [--workdir DIR] [--no-one-thread] [--no-train]
        [--without-labels]

CI never runs it (about 12.8 GB of input at the default size; ``--rows 10000000`` is a tenth).
What it does, in ``--workdir`` (default: a temporary folder, removed at exit):

1. writes the inputs deterministically, in chunks of 2^20 rows (each chunk from its own seeded
   generator, so any size is reproducible and never held in memory whole): ``X.npy``, ``--rows``
   x 32 float32 uniform in [0, 1), with ``y.npy``, int64 labels (the argmax of the first 4
   columns); and ``X.svm``, ``--sparse-rows`` svmlight rows of 8 nonzeros out of 5000 columns
   with labels 0-3 (fixed-width text: 4-digit columns, 3-decimal values);
2. ``dask-kernels featurize X.npy dense.zarr --labels y.npy --param n_components=128 --workers
   W`` (GCWS, uint8 codes), and for comparison the same job in a fresh process on one thread
   (``featurize`` on dask's synchronous scheduler), both start and stop included;
3. the same command on ``X.svm``, then ``dask-kernels train STORE -o MODEL --epochs 1 --workers
   W`` on each store;
4. the graph of ``--graph-rows`` dense rows (a sparse file of that size: nothing is written or
   read) built by ``featurize`` and submitted to a scheduler that has no workers: build time,
   submit time, graph size (pickled), tasks, and the scheduler process's memory. No compute.

Every command is a fresh process whose process tree is sampled every 0.2 s (psutil): its peak
RSS, each worker's peak RSS and CPU seconds. The machine is shared, so wall-clock speed-ups swing
with other jobs' load; the table also gives each run's CPU seconds (the command and all its
workers), and the CPU-time speed-up: one thread's CPU seconds over the busiest worker's, the
speed-up the cluster reaches when it has its cores to itself, less the command's own start
before its workers run (not counted: an upper bound). The load average is printed with each run.

The last lines extrapolate to a 100-worker cluster, under the assumptions printed with them.
"""

import argparse
import importlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import numpy as np
import psutil

D, CLASSES, SPARSE_D, SPARSE_NNZ = 32, 4, 5000, 8
CHUNK = 1 << 20

ONE_THREAD = textwrap.dedent(
    """
    import sys, dask, numpy as np
    from dask_kernels import GCWS, featurize
    from dask_kernels.io import read_npy
    dask.config.set(scheduler="synchronous")
    X, y = read_npy(sys.argv[1]), np.load(sys.argv[3], mmap_mode="r")
    featurize(X, GCWS(n_components=128), labels=y, store=sys.argv[2], overwrite=True, progress=False)
    """
)


def write_dense(path, labels, n):
    """``n`` rows x D float32 in [0, 1) and their labels (argmax of the first CLASSES columns),
    chunk i drawn from ``default_rng([7, i])``."""
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, D))
    y = np.lib.format.open_memmap(labels, mode="w+", dtype=np.int64, shape=(n,))
    for i, a in enumerate(range(0, n, CHUNK)):
        b = min(a + CHUNK, n)
        x = np.random.default_rng([7, i]).random((b - a, D), dtype=np.float32)
        X[a:b], y[a:b] = x, np.argmax(x[:, :CLASSES], axis=1)
    X.flush(), y.flush()


def write_svmlight(path, n):
    """``n`` svmlight rows of SPARSE_NNZ nonzeros (labels 0-3), chunk i drawn from
    ``default_rng([8, i])``. Fixed-width text built as bytes (Python's or scikit-learn's writers
    take minutes per million rows): columns in [1000, SPARSE_D) have 4 digits, values are
    ``0.ddd``, so a row is ``y`` and SPARSE_NNZ fields `` cccc:0.ddd``."""
    field = 11  # " cccc:0.ddd"
    with open(path, "wb") as f:
        for i, a in enumerate(range(0, n, CHUNK)):
            m = min(a + CHUNK, n) - a
            rng = np.random.default_rng([8, i])
            cols = np.sort(rng.integers(1000, SPARSE_D, (m, SPARSE_NNZ)), axis=1)
            cols[:, 1:] += np.cumsum(np.diff(cols, axis=1) == 0, axis=1)  # no repeats (still < SPARSE_D + 8)
            vals = rng.integers(1, 1000, (m, SPARSE_NNZ))
            line = np.empty((m, 2 + field * SPARSE_NNZ), dtype=np.uint8)
            line[:, 0] = ord("0") + cols[:, 0] % CLASSES
            line[:, -1] = ord("\n")
            for j in range(SPARSE_NNZ):
                o = 1 + j * field
                line[:, o] = ord(" ")
                for p, div in enumerate((1000, 100, 10, 1)):
                    line[:, o + 1 + p] = ord("0") + cols[:, j] // div % 10
                line[:, o + 5:o + 8] = np.frombuffer(b":0.", dtype=np.uint8)
                for p, div in enumerate((100, 10, 1)):
                    line[:, o + 8 + p] = ord("0") + vals[:, j] // div % 10
            f.write(line.tobytes())


class Sampler:
    """Peak RSS and last CPU seconds of a process and of each of its descendants, sampled every
    ``interval`` seconds in a thread until :meth:`stop`."""

    def __init__(self, pid, interval=0.2):
        self.root, self.interval, self.peak, self.cpu, self.name, self.parent = pid, interval, {}, {}, {}, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self):
        try:
            root = psutil.Process(self.root)
            procs = [root] + root.children(recursive=True)
        except psutil.Error:
            return
        for p in procs:
            try:
                with p.oneshot():
                    rss, t = p.memory_info().rss, p.cpu_times()
                    if p.pid not in self.name:
                        self.name[p.pid], self.parent[p.pid] = " ".join(p.cmdline()), p.ppid()
            except psutil.Error:
                continue
            self.peak[p.pid] = max(self.peak.get(p.pid, 0), rss)
            self.cpu[p.pid] = t.user + t.system

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join()

    def workers(self):
        """pids of the worker processes: descendants with no children of their own (a forkserver
        has the workers), other than multiprocessing's resource tracker."""
        parents = set(self.parent.values())
        return [p for p, n in self.name.items() if p != self.root and p not in parents
                and "resource_tracker" not in n]


def run(cmd, env=None):
    """Run ``cmd``; returns (seconds, stdout, Sampler) and the load average before it."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    sampler = Sampler(proc.pid)
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    sampler.stop()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    return {"seconds": seconds, "out": out, "sampler": sampler, "load": load}


def summary(name, rows, r):
    s = r["sampler"]
    workers = s.workers()
    cpu = sum(s.cpu.values())
    busiest = max((s.cpu[p] for p in workers), default=s.cpu.get(s.root, 0.0))
    return {"name": name, "rows": rows, "seconds": r["seconds"], "rows_s": rows / r["seconds"], "cpu": cpu,
            "busiest": busiest, "rss": s.peak.get(s.root, 0), "worker_rss": [s.peak[p] for p in workers],
            "load": r["load"]}


def objects(path):
    return sum(len(files) for _, _, files in os.walk(path))


def graph_only(work, n_rows, with_labels):
    """Build the featurize graph of ``n_rows`` dense rows and submit it to a scheduler with no
    workers (a separate process): build and submit seconds (wall, and CPU seconds of this process
    and of the scheduler), pickled graph bytes, tasks, and the scheduler's RSS growth. A graph of
    2^20 rows is submitted first, so that what the scheduler loads for any graph (imports on the
    first deserialization) is not counted per task."""
    from distributed import Client

    fz = importlib.import_module("dask_kernels.pipeline.featurize")  # the module, not the function
    from dask_kernels import GCWS
    from dask_kernels.io import read_npy

    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", "0",
                              "--dashboard-address", ":0", "--scheduler-file", os.path.join(work, "sched.json")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sp = psutil.Process(sched.pid)
    result = {}

    class Submitted(Exception):
        pass

    def cpu(p):
        t = p.cpu_times()
        return t.user + t.system

    def submit(tasks, progress=True):  # replaces featurize's run_tasks: submit, measure, stop
        result["build"] = time.perf_counter() - result["t0"]
        result["build_cpu"] = time.process_time() - result["c0"]
        graph = {}
        for t in tasks:  # the tasks share one graph: each adds only what is new
            graph.update(t.__dask_graph__())
        result["graph_bytes"] = len(pickle.dumps(graph, protocol=5))
        result["scheduler_rss0"], s0 = sp.memory_info().rss, cpu(sp)
        t1, c1 = time.perf_counter(), time.process_time()
        futures = client.compute(tasks)
        n = 0
        while n == 0:  # compute() returns before the scheduler has taken the graph (update-graph)
            n = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
        result["submit"], result["submit_cpu"] = time.perf_counter() - t1, time.process_time() - c1
        result["scheduler_cpu"], result["scheduler_tasks"] = cpu(sp) - s0, n
        result["scheduler_rss"] = sp.memory_info().rss
        client.cancel(futures)
        while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
            time.sleep(0.1)
        raise Submitted

    def featurize_graph(rows, name):
        X_path, y_path = os.path.join(work, f"{name}-X.npy"), os.path.join(work, f"{name}-y.npy")
        # sparse files: the size is set, nothing is written (nor read: no task runs)
        np.lib.format.open_memmap(X_path, mode="w+", dtype=np.float32, shape=(rows, D)).flush()
        if with_labels:
            np.lib.format.open_memmap(y_path, mode="w+", dtype=np.int64, shape=(rows,)).flush()
        X = read_npy(X_path)
        y = np.load(y_path, mmap_mode="r") if with_labels else None
        fmap = GCWS(n_components=128).fit(np.zeros((1, D), np.float32))
        real, fz.run_tasks = fz.run_tasks, submit
        try:
            result["t0"], result["c0"] = time.perf_counter(), time.process_time()
            fz.featurize(X, fmap, labels=y, store=os.path.join(work, f"{name}.zarr"), overwrite=True)
        except Submitted:
            pass
        finally:
            fz.run_tasks = real
        return dict(result)

    try:
        for _ in range(300):
            if os.path.exists(os.path.join(work, "sched.json")):
                break
            time.sleep(0.1)
        client = Client(scheduler_file=os.path.join(work, "sched.json"))
        featurize_graph(CHUNK, "warm")
        rss0 = psutil.Process().memory_info().rss
        out = featurize_graph(n_rows, "graph")
        out["client_rss_growth"] = psutil.Process().memory_info().rss - rss0
        client.close()
    finally:
        sched.terminate()
        sched.wait()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**8, help="dense rows (default 10^8: 12.8 GB)")
    ap.add_argument("--sparse-rows", type=int, default=2 * 10**7, help="svmlight rows (0: none)")
    ap.add_argument("--graph-rows", type=int, default=10**9, help="rows of the graph-only run (0: none)")
    ap.add_argument("--graph-labels", action="store_true",
                    help="the graph-only run with labels too (they are part of the graph: memory grows with rows)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--workdir", help="where the inputs and stores go (kept); default a temporary folder removed "
                                      "at exit")
    ap.add_argument("--no-one-thread", action="store_true", help="skip the one-thread featurize")
    ap.add_argument("--no-train", action="store_true", help="skip training")
    ap.add_argument("--without-labels", action="store_true",
                    help="also featurize the dense rows without --labels (what the labels cost the command)")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="bench-scale-")
    os.makedirs(work, exist_ok=True)
    bindir = os.path.dirname(sys.executable)
    cli = [os.path.join(bindir, "dask-kernels")]
    env = dict(os.environ, PYTHONWARNINGS="ignore")  # distributed's large-graph warning: the labels, known
    rows = []
    print(f"workdir {work}; {psutil.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.0f} GiB; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    try:
        if args.rows:
            X, y = os.path.join(work, "X.npy"), os.path.join(work, "y.npy")
            t0 = time.perf_counter()
            write_dense(X, y, args.rows)
            print(f"wrote {args.rows} x {D} float32 rows in {time.perf_counter() - t0:.1f} s", flush=True)
            store = os.path.join(work, "dense.zarr")
            cmd = cli + ["featurize", X, store, "--labels", y, "--param", "n_components=128",
                         "--workers", str(args.workers), "--overwrite", "--no-progress"]
            r = summary("featurize dense (CLI)", args.rows, run(cmd, env))
            r["objects"] = objects(store)
            rows.append(r)
            print(r, flush=True)
            if args.without_labels:
                rows.append(summary("featurize dense, no labels", args.rows, run(
                    [c for c in cmd if c not in ("--labels", y)], env)))
                print(rows[-1], flush=True)
            if not args.no_one_thread:
                one = summary("featurize dense (1 thread)", args.rows,
                              run([sys.executable, "-c", ONE_THREAD, X, os.path.join(work, "one.zarr"), y], env))
                rows.append(one)
                print(one, flush=True)
                shutil.rmtree(os.path.join(work, "one.zarr"), ignore_errors=True)
            if not args.no_train:
                model = os.path.join(work, "dense-model")
                rows.append(summary("train dense, 1 epoch", args.rows, run(
                    cli + ["train", store, "-o", model, "--epochs", "1", "--workers", str(args.workers),
                           "--overwrite"], env)))
                print(rows[-1], flush=True)
        if args.sparse_rows:
            svm = os.path.join(work, "X.svm")
            t0 = time.perf_counter()
            write_svmlight(svm, args.sparse_rows)
            print(f"wrote {args.sparse_rows} svmlight rows ({os.path.getsize(svm) / 2**30:.2f} GiB) in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
            store = os.path.join(work, "sparse.zarr")
            r = summary("featurize svmlight (CLI)", args.sparse_rows, run(
                cli + ["featurize", svm, store, "--n-features", str(SPARSE_D + SPARSE_NNZ), "--param", "n_components=128",
                       "--workers", str(args.workers), "--overwrite", "--no-progress"], env))
            r["objects"] = objects(store)
            rows.append(r)
            print(r, flush=True)
            if not args.no_train:
                rows.append(summary("train svmlight, 1 epoch", args.sparse_rows, run(
                    cli + ["train", store, "-o", os.path.join(work, "sparse-model"), "--epochs", "1", "--workers",
                           str(args.workers), "--overwrite"], env)))
                print(rows[-1], flush=True)
        graph = graph_only(work, args.graph_rows, args.graph_labels) if args.graph_rows else None
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    mib = 2**20
    print(f"\n{'run':<28} {'rows':>11} {'wall s':>8} {'rows/s':>10} {'CPU s':>8} {'peak RSS MiB':>12} "
          f"{'workers peak RSS MiB':>22} {'objects':>8} {'load':>5}")
    for r in rows:
        w = "/".join(f"{v / mib:.0f}" for v in r["worker_rss"]) or "-"
        print(f"{r['name']:<28} {r['rows']:>11} {r['seconds']:8.1f} {r['rows_s']:10.0f} {r['cpu']:8.1f} "
              f"{r['rss'] / mib:12.0f} {w:>22} {r.get('objects', '-'):>8} {r['load']:5.1f}")
    by = {r["name"]: r for r in rows}
    cli_run, one = by.get("featurize dense (CLI)"), by.get("featurize dense (1 thread)")
    if cli_run and one:
        print(f"\nspeed-up of the CLI ({args.workers} workers) over one thread: wall {one['seconds'] / cli_run['seconds']:.2f}x; "
              f"CPU time (one thread's CPU s / the busiest worker's) {one['cpu'] / cli_run['busiest']:.2f}x")
    if graph:
        print(f"\ngraph only, {args.graph_rows} rows{' with labels' if args.graph_labels else ''}: build "
              f"{graph['build']:.2f} s ({graph['build_cpu']:.2f} CPU s), submit {graph['submit']:.2f} s ("
              f"{graph['submit_cpu']:.2f} CPU s here, {graph['scheduler_cpu']:.2f} in the scheduler), "
              f"{graph['scheduler_tasks']} tasks on the scheduler, pickled graph {graph['graph_bytes'] / 1024:.0f} KiB, "
              f"scheduler RSS {graph['scheduler_rss0'] / mib:.0f} -> {graph['scheduler_rss'] / mib:.0f} MiB, "
              f"client RSS +{graph['client_rss_growth'] / mib:.0f} MiB")
    if cli_run:
        per_worker = cli_run["rows"] / max(cli_run["busiest"], 1e-9)  # rows per worker CPU second
        tasks = -(-cli_run["rows"] // 262144)
        print("\nextrapolation to 100 workers (1 thread each), assuming: the workers' CPU rate measured here "
              f"({per_worker:.0f} rows per worker CPU-second, worker start included), a core each, input and store "
              f"bandwidth that keep up ({D * 4 * per_worker * 100 / 2**30:.1f} GiB/s of input and "
              f"{128 * per_worker * 100 / 2**30:.1f} GiB/s of uncompressed codes at that rate), and the scheduler's "
              "cost per task as measured in the graph-only run:")
        rate = 100 * per_worker
        print(f"  10^9 rows: {10**9 / rate:.0f} s of compute at {rate:.2e} rows/s; 10^10 rows: {10**10 / rate:.0f} s")
        if graph:
            per_task = (graph["submit_cpu"] + graph["scheduler_cpu"]) / max(graph["scheduler_tasks"], 1)
            mem_task = (graph["scheduler_rss"] - graph["scheduler_rss0"]) / max(graph["scheduler_tasks"], 1)
            print(f"  scheduler: {per_task * 1e3:.2f} CPU-ms (client and scheduler) and {mem_task / 1024:.1f} KiB per "
                  f"task to submit; at {args.graph_rows} rows {graph['scheduler_tasks']} tasks, {graph['submit']:.1f} s, "
                  f"{(graph['scheduler_rss'] - graph['scheduler_rss0']) / mib:.0f} MiB; each 262144-row block is "
                  f"{262144 / per_worker:.1f} CPU-s of work, so 100 workers ask for "
                  f"{100 * per_worker / 262144:.0f} tasks/s, far below a scheduler's few thousand")
        print(f"  ({tasks} blocks at {cli_run['rows']} rows: a cluster larger than the block count leaves workers "
              "idle; pass --block-rows to cut smaller blocks)")


if __name__ == "__main__":
    main()
