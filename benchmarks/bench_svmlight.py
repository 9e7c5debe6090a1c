"""svmlight/LIBSVM parsing rate: dask_kernels' byte-range reader against scikit-learn's
``load_svmlight_file`` (Cython) on the same file, one thread, in the same run.

    python benchmarks/bench_svmlight.py            # ~1 minute
    python benchmarks/bench_svmlight.py --quick

Two files of the same MNIST-like rows (784 columns, ~20% nonzero, 1-based indices):
* short: values written with 6 significant digits, as LIBSVM's own datasets are;
* full: values written as Python's repr (up to 17 digits), as ``dump_svmlight_file`` writes.
Our rate is the whole partition task (read the byte range, parse, build the CSR block), every
partition of the file in turn. The GCWS kernel (k=256) on the same CSR rows is shown for scale:
a featurize task parses and then hashes its rows.
"""

import argparse
import os
import shutil
import tempfile

import numpy as np
import scipy.sparse as sp
from _timing import best_time

D = 784


def write_file(path, X, fmt):
    with open(path, "wb") as f:
        for i, row in enumerate(X):
            cols = np.flatnonzero(row)
            pairs = " ".join(f"{c + 1}:{fmt(float(row[c]))}" for c in cols)
            f.write(f"{i % 10} {pairs}\n".encode())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    from sklearn.datasets import load_svmlight_file

    from dask_kernels import GCWS
    from dask_kernels.io import read_svmlight

    n = 5000 if args.quick else 20000
    rng = np.random.default_rng(0)
    X = (rng.random((n, D), dtype=np.float32) * (rng.random((n, D)) < 0.2)).astype(np.float64)
    tmp = tempfile.mkdtemp(prefix="bench-svmlight-")
    gcws = GCWS(n_components=256, bits=8, seed=0).fit(X[:1])
    try:
        rows = []
        for name, fmt in (("short (6 digits)", lambda v: f"{v:.6g}"), ("full (repr)", repr)):
            path = os.path.join(tmp, "rows.svm")
            write_file(path, X, fmt)
            mb = os.path.getsize(path) / 2**20
            src = read_svmlight(path, n_features=D, blocksize=8 * 2**20)
            ours = best_time(lambda: [src.loader(i) for i in range(src.n_partitions)], 3)
            theirs = best_time(lambda: load_svmlight_file(path, n_features=D), 3)
            Xs = sp.vstack([src.loader(i)[0] for i in range(src.n_partitions)]).tocsr()
            Xr, _ = load_svmlight_file(path, n_features=D)
            assert (Xs != Xr).nnz == 0  # the same matrix, value for value
            kernel = best_time(lambda: gcws.transform_block(Xs), 2)
            rows.append((name, mb, n / theirs, n / ours, n / kernel))
        print(f"\n{n} rows x {D} columns, ~20% nonzero; rows/s on one thread (best of 3)")
        print(f"{'file':<18} {'MiB':>6} {'sklearn load':>13} {'dask_kernels':>13} {'ratio':>6} {'GCWS kernel':>12}")
        for name, mb, theirs, ours, kernel in rows:
            print(f"{name:<18} {mb:>6.1f} {theirs:>13,.0f} {ours:>13,.0f} {ours / theirs:>5.1f}x {kernel:>12,.0f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
