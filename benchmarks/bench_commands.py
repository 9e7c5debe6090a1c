"""Wall time of each ``dask-kernels`` command as a user runs it, from a fresh shell, start to exit.

    python benchmarks/bench_commands.py [--rows 10000 1000000] [--repeat 3] [--cli PATH]

For each row count, writes a dense float32 ``.npy`` of 64 columns and int64 labels to a temporary
folder, then runs, each as a fresh process (imports, cluster start and stop included):

* ``featurize X.npy s.zarr --labels y.npy`` (GCWS k = 64),
* ``train s.zarr -o m.dk --epochs 1``,
* ``predict m.dk X.npy -o p.npy``, ``score m.dk X.npy --labels y.npy``,
* ``info s.zarr`` and ``info m.dk``,

with no cluster flags, as a user first types them: a small input runs in the command's own
process, a larger one on the LocalCluster the command starts. Each figure is the least of
``--repeat`` runs. ``--cli`` times another installation's ``dask-kernels`` (e.g. an older
version's venv) on the same files, in the same run, so the two columns compare like with like.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

COMMANDS = [
    ("featurize", ["featurize", "{d}/X.npy", "{d}/s.zarr", "--labels", "{d}/y.npy", "--method", "gcws",
                   "--param", "n_components=64", "--no-progress"]),
    ("train", ["train", "{d}/s.zarr", "-o", "{d}/m.dk", "--epochs", "1"]),
    ("predict", ["predict", "{d}/m.dk", "{d}/X.npy", "-o", "{d}/p.npy"]),
    ("score", ["score", "{d}/m.dk", "{d}/X.npy", "--labels", "{d}/y.npy"]),
    ("info store", ["info", "{d}/s.zarr"]),
    ("info model", ["info", "{d}/m.dk"]),
]
#: what each command writes: removed before the next repeat (the commands refuse to replace it)
OUTPUTS = {"featurize": "s.zarr", "train": "m.dk", "predict": "p.npy"}


def _data(folder, rows):
    rng = np.random.default_rng(0)
    X = rng.random((rows, 64), dtype=np.float32)
    np.save(os.path.join(folder, "X.npy"), X)
    np.save(os.path.join(folder, "y.npy"), (X[:, 0] + X[:, 1] > 1).astype(np.int64))


def _time(cli, argv, folder):
    args = [a.format(d=folder) for a in argv]
    t0 = time.perf_counter()
    run = subprocess.run([cli] + args, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if run.returncode not in (0, 1) or (run.returncode == 1 and args[0] != "info"):
        raise SystemExit(f"{cli} {' '.join(args)} failed:\n{run.stderr[-2000:]}")
    return seconds


def _run_all(cli, folder, repeat):
    best = {}
    for _ in range(repeat):
        for name in OUTPUTS.values():
            path = os.path.join(folder, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.path.exists(path) and os.unlink(path)
        for name, argv in COMMANDS:
            best[name] = min(best.get(name, float("inf")), _time(cli, argv, folder))
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cli", default=None, help="another dask-kernels executable to time beside this one")
    args = parser.parse_args()
    here = shutil.which("dask-kernels", path=os.path.dirname(sys.executable)) or "dask-kernels"
    clis = [("this", here)] + ([("other", args.cli)] if args.cli else [])
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}")
    header = f"{'command':<12} {'rows':>10}" + "".join(f" {name + ' (s)':>12}" for name, _ in clis)
    print(header)
    print("-" * len(header))
    for rows in args.rows:
        with tempfile.TemporaryDirectory(prefix="dk-bench-commands-") as folder:
            _data(folder, rows)
            results = [_run_all(cli, folder, args.repeat) for _, cli in clis]
            for name, _ in COMMANDS:
                print(f"{name:<12} {rows:>10,}" + "".join(f" {r[name]:>12.2f}" for r in results))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
