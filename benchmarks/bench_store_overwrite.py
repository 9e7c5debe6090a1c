"""What replacing a store with ``overwrite=True`` costs for touching only the store's own files.

Before a store is replaced, every entry in it is checked against the store layout (a stray
entry is refused); the replaced store is then emptied entry by entry (``remove_own``) instead of
``shutil.rmtree``. Both against ``shutil.rmtree`` of the same store, measured in the same run
(best of ``--repeat`` interleaved rounds: on a shared machine other jobs only add time).

    python benchmarks/bench_store_overwrite.py [--blocks 2000] [--repeat 3]
"""

import argparse
import os
import shutil
import tempfile
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import dask_kernels.maps.base  # noqa: F401  (the package's maps before its top level)
    from dask_kernels import GCWS, featurize
    from dask_kernels.pipeline.creation import remove_own, stray_entries

    X = np.abs(np.random.default_rng(0).standard_normal((args.blocks * 10, 4)))
    G = GCWS(n_components=8, seed=1).fit(X[:1])
    d = tempfile.mkdtemp()
    p = os.path.join(d, "s.zarr")
    featurize(X, G, store=p, block_rows=10, shards=None, progress=False)
    n_files = sum(len(f) for _, _, f in os.walk(p))

    best = {"rmtree": float("inf"), "check": float("inf"), "own": float("inf")}
    for _ in range(args.repeat):  # interleaved rounds; the copies made outside the timing
        for name, fn in (("rmtree", shutil.rmtree), ("check", None), ("own", remove_own)):
            q = os.path.join(d, "copy")
            if fn is not None:
                shutil.copytree(p, q)
            t0 = time.perf_counter()
            fn(q) if fn is not None else stray_entries(p)
            best[name] = min(best[name], time.perf_counter() - t0)
    rmtree, check, own = best["rmtree"], best["check"], best["own"]
    print(f"{args.blocks} blocks, {n_files} files (features and done records), best of {args.repeat}")
    print(f"{'step':34s} {'ms':>8s} {'x rmtree':>9s}")
    for name, t in (("shutil.rmtree (the peer)", rmtree), ("stray_entries (the check)", check),
                    ("remove_own (deleting own entries)", own)):
        print(f"{name:34s} {t * 1e3:8.0f} {t / rmtree:9.2f}")
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
