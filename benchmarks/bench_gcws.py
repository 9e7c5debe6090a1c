"""GCWS speed: nanoseconds per (nonzero, hash) pair, next to datasketch's ICWS in the same run;
DartMinHash against ICWS per row; and the accuracy of dart and ICWS codes.

    python benchmarks/bench_gcws.py [--quick]

Dart rows (k = 256, one thread, in the same run): microseconds per row of
``GCWS(sampler="dart")`` against the ICWS hash path on CSR rows of dimension 2**30 with 200
nonzeros, and against the ICWS table path on MNIST-like dense rows (D = 784, 19 % nonzero; and
fully dense, for reference). Every map runs with ``n_jobs=1``; the two are timed in interleaved
rounds (best of each); the load average is printed. ``GCWS(sampler="dart")`` uses its dart
table (the default "auto") on the dense rows.
Accuracy: linear SVMs (LinearSVC, C = 1) on the one-hot codes (k = 256, b = 8) of digits and of a
synthetic nonlinear dataset, five hash seeds each, ICWS and dart: mean and standard deviation of
the test accuracy.

Single thread throughout (dask_kernels' Numba kernels are serial; datasketch is NumPy).
datasketch's WeightedMinHashGenerator keeps three dense k x D tables, so it is measured at
D = 784; its cost per pair does not depend on D (it indexes the tables at the nonzeros), and at
D = 2**30 its tables would need 3 * 256 * 2**30 * 4 bytes = 3 TiB.
"""

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from _timing import best_time, best_times  # noqa: E402

from dask_kernels import GCWS  # noqa: E402

TARGET_SPARSE, TARGET_DENSE = 10.0, 3.0  # the speed-ups dart should reach over ICWS (k = 256)


def bench_datasketch(X, k, repeat):
    try:
        from datasketch import WeightedMinHashGenerator
    except ImportError:
        return None
    gen = WeightedMinHashGenerator(X.shape[1], sample_size=k, seed=1)
    rows = X[: max(20, len(X) // 10)]  # datasketch is slow; a subset gives a stable per-pair cost
    t = best_time(lambda: [gen.minhash(r) for r in rows], repeat)
    return t / (np.count_nonzero(rows) * k) * 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rows and repeats")
    args = parser.parse_args()
    n_dense, n_sparse, repeat = (400, 2000, 2) if args.quick else (2000, 10000, 3)
    k = 256
    rng = np.random.default_rng(0)

    # MNIST-like dense rows: 784 nonnegative pixels, about 19% nonzero.
    X = rng.uniform(0, 1, size=(n_dense, 784))
    X[X < 0.81] = 0.0
    nnz_dense = np.count_nonzero(X)
    # Fully dense rows exercise the table path at its heaviest.
    Xfull = rng.uniform(0, 1, size=(n_dense, 784))
    # Sparse rows of dimension 2**30, 200 nonzeros each at random indices: no index repeats in
    # practice, so no parameter can be reused across rows.
    nnz_row = 200
    cols = rng.integers(0, 2**30, size=(n_sparse, nnz_row))
    Xs = sp.csr_matrix(
        (rng.uniform(0.1, 1, n_sparse * nnz_row), cols.ravel(), np.arange(0, n_sparse * nnz_row + 1, nnz_row)),
        shape=(n_sparse, 2**30),
    )
    Xs.sum_duplicates()

    ds_sparse = bench_datasketch(X, k, repeat)
    ds_dense = bench_datasketch(Xfull, k, repeat)
    rows = []
    # n_jobs=1 everywhere: transform would otherwise use every CPU (one thread is the contract here)
    g_table = GCWS(n_components=k, table=True, n_jobs=1).fit(X)
    g_hash = GCWS(n_components=k, table=False, n_jobs=1).fit(X)
    g_sparse = GCWS(n_components=k, n_jobs=1).fit(Xs[:1])
    assert not g_sparse._uses_table()
    for label, data, nnz, ds in (
        ("dense, D=784, 19% nonzero", X, nnz_dense, ds_sparse),
        ("dense, D=784, 100% nonzero", Xfull, Xfull.size, ds_dense),
    ):
        if ds is not None:
            rows.append(("datasketch WeightedMinHashGenerator", label, ds, ds))
        t = best_time(lambda: g_table.transform(data), repeat)
        rows.append(("dask_kernels GCWS table path", label, t / (nnz * k) * 1e9, ds))
        t = best_time(lambda: g_hash.transform(data), repeat)
        rows.append(("dask_kernels GCWS hash path", label, t / (nnz * k) * 1e9, ds))
    t = best_time(lambda: g_sparse.transform(Xs), repeat)
    # datasketch cannot hold D = 2**30; compare with its cheapest per-pair figure above.
    rows.append(("dask_kernels GCWS hash path", "CSR, D=2**30, 200 nnz/row", t / (Xs.nnz * k) * 1e9, ds_dense))

    print(f"GCWS, k = {k}, single thread ({'quick' if args.quick else 'full'} run)")
    print(f"{'implementation':<38} {'input':<28} {'ns/pair':>8} {'vs datasketch':>14}")
    for name, label, ns, ref in rows:
        ratio = f"{ref / ns:.1f}x" if ref else "n/a"
        print(f"{name:<38} {label:<28} {ns:8.2f} {ratio:>14}")
    print("vs datasketch: its ns/pair on the same input (D=2**30 row: its dense D=784 figure).")
    if ds_dense is None:
        print("(datasketch not installed: pip install 'dask-kernels[bench]' for the reference rows)")

    # -- DartMinHash against ICWS, per row ---------------------------------------------------
    # dart maps are fitted on the rows they transform (the fit sets the unit of weight)
    g_dart = GCWS(n_components=k, sampler="dart", n_jobs=1).fit(X)
    g_dart_full = GCWS(n_components=k, sampler="dart", n_jobs=1).fit(Xfull)
    g_dart_sparse = GCWS(n_components=k, sampler="dart", n_jobs=1).fit(Xs)
    n_icws_sparse = max(200, n_sparse // 10)  # the ICWS hash path is the slow one
    rounds = 5 if args.quick else 9
    print(f"\nDartMinHash vs ICWS, k = {k}, single thread, microseconds per row (lower is better); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'input':<28} {'ICWS path':<12} {'ICWS':>9} {'dart':>9} {'speedup':>8} {'target':>7}")
    for label, icws_map, icws_rows, dart_map, dart_rows, path, target in (
        ("CSR, D=2**30, 200 nnz/row", g_sparse, Xs[:n_icws_sparse], g_dart_sparse, Xs, "hash", TARGET_SPARSE),
        ("dense, D=784, 19% nonzero", g_table, X, g_dart, X, "table", TARGET_DENSE),
        ("dense, D=784, 100% nonzero", g_table, Xfull, g_dart_full, Xfull, "table", None),
    ):
        runs = [lambda: icws_map.transform(icws_rows), lambda: dart_map.transform(dart_rows)]
        for run in runs:  # compile, build the tables
            run()
        t_icws, t_dart = best_times(runs, rounds)  # interleaved: load bursts slow both alike
        t_icws, t_dart = t_icws / icws_rows.shape[0] * 1e6, t_dart / dart_rows.shape[0] * 1e6
        goal = f"{target:6.0f}x" if target else "     -"
        print(f"{label:<28} {path:<12} {t_icws:9.1f} {t_dart:9.1f} {t_icws / t_dart:7.1f}x {goal:>7}")
    accuracy(quick=args.quick)


def accuracy(quick=False):
    """Test accuracy of a linear SVM on one-hot ICWS and dart codes (k = 256, b = 8)."""
    from bench_accuracy import digits, synthetic
    from sklearn.model_selection import train_test_split
    from sklearn.svm import LinearSVC

    seeds = range(3 if quick else 5)
    print("\nAccuracy of LinearSVC(C=1) on one-hot GCWS codes, k = 256, b = 8 (mean +- sd over hash seeds)")
    print(f"{'dataset':<22} {'sampler':<8} {'accuracy':>18}")
    for name, (X, y) in (("digits", digits()), ("synthetic (n=6000)", synthetic(6000))):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
        scores = {}
        for sampler in ("icws", "dart"):
            acc = []
            for seed in seeds:
                g = GCWS(n_components=256, bits=8, seed=seed, sampler=sampler, output="onehot").fit(Xtr)
                clf = LinearSVC(C=1.0).fit(g.transform(Xtr), ytr)
                acc.append(clf.score(g.transform(Xte), yte))
            scores[sampler] = np.array(acc)
            print(f"{name:<22} {sampler:<8} {scores[sampler].mean():10.4f} +- {scores[sampler].std(ddof=1):.4f}")
        diff = scores["dart"].mean() - scores["icws"].mean()
        se = np.sqrt(scores["dart"].var(ddof=1) / len(seeds) + scores["icws"].var(ddof=1) / len(seeds))
        print(f"{name:<22} dart - icws = {diff:+.4f} (standard error {se:.4f})")


if __name__ == "__main__":
    main()
