"""What class-name labels cost against numeric labels of the same rows, in the same run.

    python benchmarks/bench_class_names.py [--rows 200000] [--classes 10] [--repeat 3]

Featurizes the same dense rows (32 float64 columns, GCWS k = 64) into a store with integer
labels and with the same labels as class names (``"class-0"``, ...: one pass to list the
classes, then int32 codes), then reads each store's labels back (names: decoded per block) and
runs ``fit_incremental`` (SGDClassifier, one epoch) on each store. Each figure is the best of
``--repeat`` interleaved rounds (``_timing.best_times``); the ratio is names / numbers.
"""

import argparse
import os
import shutil
import tempfile

import numpy as np
from sklearn.linear_model import SGDClassifier

from _timing import best_times

import dask_kernels as dk


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.random((args.rows, 32))
    numbers = rng.integers(0, args.classes, args.rows)
    names = np.array([f"class-{i}" for i in range(args.classes)])[numbers]
    fmap = dk.GCWS(n_components=64, seed=0).fit(X[:10])
    d = tempfile.mkdtemp(prefix="bench-class-names-")
    paths = {"numbers": os.path.join(d, "n.zarr"), "names": os.path.join(d, "s.zarr")}
    labels = {"numbers": numbers, "names": names}

    def writer(kind):
        return lambda: dk.featurize(X, fmap, labels=labels[kind], store=paths[kind], block_rows=20_000,
                                    overwrite=True, progress=False)

    def reader(kind):
        return lambda: dk.open_store(paths[kind]).labels.compute()

    def trainer(kind):
        return lambda: dk.fit_incremental(SGDClassifier(random_state=0), paths[kind], epochs=1, progress=False)

    try:
        rows = []
        for what, make in (("featurize", writer), ("read labels", reader), ("train 1 epoch", trainer)):
            make("numbers")(), make("names")()  # compile, page cache
            t_num, t_names = best_times([make("numbers"), make("names")], args.repeat)
            rows.append((what, t_num, t_names))
        assert (dk.open_store(paths["names"]).labels.compute() == names).all()
    finally:
        shutil.rmtree(d)
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else ["?"] * 3
    print(f"{args.rows:,} rows, {args.classes} classes, best of {args.repeat}; load average {' '.join(load)}")
    print(f"{'step':<16}{'numbers s':>12}{'names s':>12}{'names/numbers':>15}")
    for what, a, b in rows:
        print(f"{what:<16}{a:>12.3f}{b:>12.3f}{b / a:>15.2f}")


if __name__ == "__main__":
    main()
