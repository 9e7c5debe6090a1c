"""Wall time of each ``dask-kernels`` command as a user runs it, from a fresh shell, start to exit.

    python benchmarks/bench_commands.py [--rows 10000 1000000] [--repeat 3] [--cluster-rows 1000000]
                                        [--cli NAME=PATH ...]

For each row count, writes a dense float32 ``.npy`` of 64 columns and int64 labels to a temporary
folder, then runs, each as a fresh process (imports, cluster start and stop included):

* ``featurize X.npy s.zarr --labels y.npy`` (GCWS k = 64),
* ``train s.zarr -o m.dk --epochs 1``,
* ``predict m.dk X.npy -o p.npy``, ``score m.dk X.npy --labels y.npy``,
* ``info s.zarr`` and ``info m.dk``;

and, as the first row, the *floor*: that installation's Python importing NumPy, dask.array, Numba
and Zarr and calling one cached Numba function, which is what ``featurize`` and ``train`` pay
before they start on the rows (Numba builds its typing and lowering registries on the first
call of a cached kernel; ``predict`` and ``score`` of ``.npy`` rows do not import Zarr). A
command's figure minus the floor is what the command itself adds; the floor moves with the
machine (it is what makes one day's figures 1.4x another's).

Below ``--cluster-rows`` the commands get no cluster flags, as a user first types them: such an
input runs in the command's own process. From ``--cluster-rows`` on, ``featurize``, ``train``,
``predict`` and ``score`` get ``--workers 2``, so they start a 2-worker LocalCluster. Each figure
is the least of ``--repeat`` runs, the installations interleaved within each repeat. ``--cli``
times another installation's ``dask-kernels`` (e.g. an older version's venv) on the same input
files, in the same run, so the columns compare like with like; each writes its own outputs. The
load average (1 minute) is printed before each row count and at the end.

Beside the wall time, each row gives the CPU seconds (user + system) of the command's process and
the processes it waited for (least of the repeats): on a shared machine they move far less with
the load than the wall time, and an import removed shows there as in a quiet run. A
LocalCluster's workers are not counted in them (the command does not wait for its nanny's
children), so for the cluster rows only the wall time compares whole runs.
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

COMMANDS = [
    ("featurize", ["featurize", "{d}/X.npy", "{o}/s.zarr", "--labels", "{d}/y.npy", "--method", "gcws",
                   "--param", "n_components=64", "--no-progress"]),
    ("train", ["train", "{o}/s.zarr", "-o", "{o}/m.dk", "--epochs", "1"]),
    ("predict", ["predict", "{o}/m.dk", "{d}/X.npy", "-o", "{o}/p.npy"]),
    ("score", ["score", "{o}/m.dk", "{d}/X.npy", "--labels", "{d}/y.npy"]),
    ("info store", ["info", "{o}/s.zarr"]),
    ("info model", ["info", "{o}/m.dk"]),
]
#: the floor: the imports and the first cached Numba call every command computing on rows pays
FLOOR = "floor"
FLOOR_SCRIPT = """\
import os

import numba
import numpy
import dask.array  # noqa: F401
import zarr  # noqa: F401


@numba.njit(nogil=True, cache=True)
def total(x):
    s = 0.0
    for v in x:
        s += v
    return s


total(numpy.ones(4))
os._exit(0)  # as the commands end: without interpreter teardown (dask_kernels.cli._exit)
"""
#: what each command writes: removed before the next repeat (the commands refuse to replace it)
OUTPUTS = {"featurize": "s.zarr", "train": "m.dk", "predict": "p.npy"}
#: the commands that compute on a cluster (``--workers 2`` from ``--cluster-rows`` on)
ON_CLUSTER = ("featurize", "train", "predict", "score")


def _data(folder, rows):
    rng = np.random.default_rng(0)
    X = rng.random((rows, 64), dtype=np.float32)
    np.save(os.path.join(folder, "X.npy"), X)
    np.save(os.path.join(folder, "y.npy"), (X[:, 0] + X[:, 1] > 1).astype(np.int64))


def _python(cli):
    """The Python interpreter of the installation whose ``dask-kernels`` is ``cli``."""
    here = os.path.join(os.path.dirname(cli), "python")
    return here if os.path.exists(here) else sys.executable


def _time(cli, argv, folder, out, workers):
    if argv is None:  # the floor, in the installation's own Python (its own Numba cache)
        command = [_python(cli), os.path.join(out, "floor.py")]
    else:
        args = [a.format(d=folder, o=out) for a in argv] + (["--workers", str(workers)] if workers else [])
        command = [cli] + args
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if run.returncode != 0:  # "info model" of an installation that reads no models: marked, not timed
        if argv is not None and argv[0] == "info" and run.returncode == 1:
            return float("nan"), float("nan")
        raise SystemExit(f"{' '.join(command)} failed:\n{run.stderr[-2000:]}")
    return seconds, cpu


def _least(best, key, t):
    best[key] = t if key not in best or best[key] != best[key] else min(best[key], t)


def _run_once(cli, folder, out, workers, best, cpu):
    for name in OUTPUTS.values():
        path = os.path.join(out, name)
        shutil.rmtree(path) if os.path.isdir(path) else os.path.exists(path) and os.unlink(path)
    for name, argv in [(FLOOR, None)] + COMMANDS:
        t, c = _time(cli, argv, folder, out, workers if name in ON_CLUSTER else None)
        _least(best, name, t)
        _least(cpu, name, c)


def _cli(text):
    name, sep, path = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=PATH (e.g. 0.1.0=/venv-old/bin/dask-kernels)")
    return name, path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cluster-rows", type=int, default=1_000_000,
                        help="from this many rows on, computing commands get --workers 2 (a LocalCluster)")
    parser.add_argument("--cli", type=_cli, action="append", default=[], metavar="NAME=PATH",
                        help="another dask-kernels executable to time beside this one (repeatable)")
    args = parser.parse_args()
    here = shutil.which("dask-kernels", path=os.path.dirname(sys.executable)) or "dask-kernels"
    clis = [("now", here)] + args.cli
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}")
    header = f"{'command':<12} {'rows':>10} {'where':<14}" + "".join(f" {name + ' (s)':>12}" for name, _ in clis)
    if len(clis) > 1:
        header += "".join(f" {'vs ' + name:>10}" for name, _ in clis[1:])
    header += "".join(f" {name + ' CPU s':>12}" for name, _ in clis)
    if len(clis) > 1:
        header += "".join(f" {'CPU vs ' + name:>14}" for name, _ in clis[1:])
    print(header)
    print("-" * len(header))
    for rows in args.rows:
        workers = 2 if rows >= args.cluster_rows else None
        with tempfile.TemporaryDirectory(prefix="dk-bench-commands-") as folder:
            _data(folder, rows)
            outs = [os.path.join(folder, f"out{i}") for i in range(len(clis))]
            for (_, cli), out in zip(clis, outs):
                os.mkdir(out)
                with open(os.path.join(out, "floor.py"), "w") as f:
                    f.write(FLOOR_SCRIPT)
                _time(cli, None, folder, out, None)  # untimed: compiles the floor's function once
            load = os.getloadavg()[0]
            results, cpus = [{} for _ in clis], [{} for _ in clis]
            for _ in range(args.repeat):  # interleaved: each repeat runs every installation in turn
                for (_, cli), out, best, cpu in zip(clis, outs, results, cpus):
                    _run_once(cli, folder, out, workers, best, cpu)
            for name, _ in [(FLOOR, None)] + COMMANDS:
                where = "LocalCluster 2" if workers and name in ON_CLUSTER else "in process"
                line = f"{name:<12} {rows:>10,} {where:<14}" + "".join(f" {r[name]:>12.2f}" for r in results)
                line += "".join(f" {r[name] / results[0][name]:>9.2f}x" for r in results[1:])
                line += "".join(f" {c[name]:>12.2f}" for c in cpus)
                line += "".join(f" {c[name] / cpus[0][name]:>13.2f}x" for c in cpus[1:])
                print(line)
            print(f"(load average {load:.1f} before these {rows:,} rows, {os.getloadavg()[0]:.1f} after)")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
