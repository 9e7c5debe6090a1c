"""``dask-kernels featurize`` on a LocalCluster against one thread in one process, end to end.

    python benchmarks/bench_cluster.py [--quick] [--rows 2000000] [--cols 64] [--workers 2] [--repeat 1]

``--quick``: 500,000 rows (about a minute on an idle 2-core machine; the fixed start-up costs
weigh four times more there than in the full 2,000,000-row run, so its speed-up is lower).

Writes a dense float64 ``.npy`` (half zeros) to a temporary folder, then times, alternately:

* ``one thread``: a fresh Python process that featurizes the file into a Zarr store with
  dask's synchronous scheduler (``featurize`` with GCWS k = 256, the same blocks as the CLI),
* ``cluster``: the command ``dask-kernels featurize X.npy out.zarr --workers W
  --threads-per-worker 1`` as a fresh process, LocalCluster start and shutdown included,

and prints the wall times, the cluster's speed-up, and the CLI's own split (the seconds it reports
for featurizing, the rest being process start, imports and cluster start/stop). Each figure is the best of ``--repeat`` runs.

Bytecode: with ``PYTHONDONTWRITEBYTECODE=1`` and no ``__pycache__`` in site-packages (a venv
installed without compiling, e.g. ``uv`` without ``--compile-bytecode``), every process compiles
the sources it imports, about 60 % of its import time; the CLI pays that in two processes at once
(the command and its worker server), one thread in one. ``--bytecode-cache`` runs both sides with
``PYTHONPYCACHEPREFIX`` in the temporary folder, filled by an untimed import first, as an
installed package with its bytecode runs. The table says which.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

ONE_THREAD = textwrap.dedent(
    """
    import sys, dask
    from dask_kernels import GCWS, featurize
    from dask_kernels.io import read_npy
    dask.config.set(scheduler="synchronous")
    X = read_npy(sys.argv[1])
    featurize(X, GCWS(n_components=256), store=sys.argv[2], overwrite=True, progress=False)
    """
)


#: what the CLI's processes import (an untimed import with --bytecode-cache compiles it once)
WARM_IMPORTS = ("import dask_kernels.cli, dask_kernels.cli.featurize, dask_kernels.cli._forkserver, dask_kernels.io, "
                "dask_kernels.maps.gcws, dask_kernels.pipeline, distributed, zarr.codecs")


def timed(cmd, env=None):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, out.stdout


def bytecode_env(tmp, cache):
    """``(environment of the timed processes, what the table says about bytecode)``."""
    env = dict(os.environ)
    if not cache:
        compiling = env.get("PYTHONDONTWRITEBYTECODE") not in (None, "")
        return env, "as installed" + (" (PYTHONDONTWRITEBYTECODE is set: uncached modules compile in each process)"
                                      if compiling else "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
    subprocess.run([sys.executable, "-c", WARM_IMPORTS], check=True, env=env)
    return env, f"cached (PYTHONPYCACHEPREFIX={env['PYTHONPYCACHEPREFIX']})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="500,000 rows instead of --rows")
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--cols", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--bytecode-cache", action="store_true",
                    help="run both sides with compiled bytecode in a temporary PYTHONPYCACHEPREFIX (see above)")
    args = ap.parse_args()
    if args.quick:
        args.rows = 500_000
    cli = os.path.join(os.path.dirname(sys.executable), "dask-kernels")
    tmp = tempfile.mkdtemp(prefix="bench_cluster_")
    try:
        path = os.path.join(tmp, "X.npy")
        rng = np.random.default_rng(0)
        X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(args.rows, args.cols))
        for a in range(0, args.rows, 250_000):
            block = rng.standard_normal((min(250_000, args.rows - a), args.cols))
            block[rng.uniform(size=block.shape) < 0.5] = 0.0
            X[a : a + len(block)] = block
        X.flush()
        del X
        env, bytecode = bytecode_env(tmp, args.bytecode_cache)
        load = os.getloadavg()[0]
        best = {"one thread": np.inf, "cluster": np.inf}
        reported = np.inf
        for _ in range(args.repeat):
            t, _ = timed([sys.executable, "-c", ONE_THREAD, path, os.path.join(tmp, "one.zarr")], env)
            best["one thread"] = min(best["one thread"], t)
            t, out = timed([cli, "featurize", path, os.path.join(tmp, "cluster.zarr"), "--method", "gcws",
                            "--param", "n_components=256", "--workers", str(args.workers),
                            "--threads-per-worker", "1", "--no-progress", "--overwrite"], env)
            best["cluster"] = min(best["cluster"], t)
            m = re.search(r"([0-9.]+) s\s*$", out.strip())
            if m:
                reported = min(reported, float(m.group(1)))
        print(f"featurize {args.rows} x {args.cols} float64 .npy, GCWS k = 256, best of {args.repeat}; "
              f"bytecode {bytecode}; load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at end")
        print(f"{'configuration':<40} {'wall s':>8}")
        print(f"{'one thread, one process (synchronous)':<40} {best['one thread']:8.1f}")
        print(f"{f'CLI, LocalCluster {args.workers} x 1 thread':<40} {best['cluster']:8.1f}")
        print(f"{'  of which featurize() (CLI report)':<40} {reported:8.1f}")
        print(f"{'  start, imports, cluster start/stop':<40} {best['cluster'] - reported:8.1f}")
        print(f"speed-up of the cluster, start included: {best['one thread'] / best['cluster']:.2f}x "
              f"(target >= 1.6x on 2 cores)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
