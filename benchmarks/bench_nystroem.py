"""Nystroem: transform speed against scikit-learn's Nystroem, fit time on Dask, accuracy against m.

1. Transform throughput (rows/s), RBF kernel, same m, same rows, same run: scikit-learn's
   ``Nystroem.transform`` (float64 input, and float32 input: the better one is the reference) against
   ``dask_kernels.Nystroem.transform`` with float64 and float32 output. Best of 3 after a warm-up.
2. Fit time: ``Nystroem.fit`` on a dask array of many blocks (landmarks sampled in one pass on the
   threaded scheduler, never collected), uniform and k-means++, next to scikit-learn's in-memory fit.
3. Accuracy at m in {64, 256, 1024} for GMM-Nystroem, RBF-Nystroem and GCWS (b = 8) with k = m
   hashes, on digits and the synthetic set of ``bench_accuracy.py``, trained out of core the same way
   (feature store -> ``fit_incremental``; its data, store and training recipe are imported from there).

Run: ``python benchmarks/bench_nystroem.py [--quick]``.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import dask.array as da  # noqa: E402
from sklearn.kernel_approximation import Nystroem as SkNystroem  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from _timing import best_time  # noqa: E402
from bench_accuracy import digits, make_store, references, synthetic, train  # noqa: E402

from dask_kernels import GCWS, Nystroem  # noqa: E402


def transform_speed(n, d, m, repeats=3):
    rng = np.random.default_rng(0)
    X64 = rng.random((n, d))
    X32 = X64.astype(np.float32)
    gamma = 1.0 / d
    sk = SkNystroem(kernel="rbf", gamma=gamma, n_components=m, random_state=0).fit(X64[:5000])
    ours64 = Nystroem(n_components=m, kernel="rbf", gamma=gamma, dtype="float64").fit(X64[:5000])
    ours32 = Nystroem(n_components=m, kernel="rbf", gamma=gamma, dtype="float32").fit(X64[:5000])
    res = {
        "scikit-learn Nystroem, float64 input": n / best_time(lambda: sk.transform(X64), repeats),
        "scikit-learn Nystroem, float32 input": n / best_time(lambda: sk.transform(X32), repeats),
        "dask_kernels Nystroem, float64 output": n / best_time(lambda: ours64.transform(X64), repeats),
        "dask_kernels Nystroem, float32 output": n / best_time(lambda: ours32.transform(X64), repeats),
    }
    f64 = res["scikit-learn Nystroem, float64 input"]
    f32 = res["scikit-learn Nystroem, float32 input"]
    print(f"\n== transform, RBF, n = {n}, d = {d}, m = {m} (best of {repeats}, same run)")
    print(f"{'':<40} {'rows/s':>10} {'vs sklearn f64':>15} {'vs sklearn f32':>15}")
    for label, r in res.items():
        print(f"{label:<40} {r:10,.0f} {r / f64:14.2f}x {r / f32:14.2f}x")
    # no peer has a GMM Nystroem: its speed next to ours for RBF (exact GMM blocks, O(n m nnz))
    gmm = Nystroem(n_components=m, kernel="gmm").fit(X64[:5000])
    part = X64[: n // 4]
    r = len(part) / best_time(lambda: gmm.transform(part), repeats)
    print(f"{'dask_kernels Nystroem GMM, float32 output':<40} {r:10,.0f} {r / f64:14.2f}x {r / f32:14.2f}x")
    res["dask_kernels Nystroem GMM, float32 output"] = r
    # same landmarks: the two give the same kernel approximation (checked, not just timed)
    sk_same = SkNystroem(kernel="rbf", gamma=gamma, n_components=m).fit(X64[ours64.landmark_rows_])
    Za, Zb = ours64.transform(X64[:200]), sk_same.transform(X64[:200])
    print(f"same landmarks: max |Z Z^T - Z_sk Z_sk^T| = {np.abs(Za @ Za.T - Zb @ Zb.T).max():.2e}")
    return res


def fit_time(n, d, m, block_rows):
    X = da.random.default_rng(1).random((n, d), chunks=(block_rows, d))
    print(f"\n== fit on a dask array of {n} x {d} float64 ({n * d * 8 / 2**20:.0f} MiB) in {X.numblocks[0]} blocks, "
          f"m = {m}, threaded scheduler")
    out = {}
    warm = da.random.default_rng(2).random((3000, d), chunks=(1000, d))
    for landmarks in ("uniform", "kmeans++"):  # one-time costs (loading compiled kernels) out of the timing
        Nystroem(n_components=16, kernel="rbf", landmarks=landmarks).fit(warm)
    for landmarks in ("uniform", "kmeans++"):
        t0 = time.perf_counter()
        Nystroem(n_components=m, kernel="rbf", landmarks=landmarks).fit(X)
        out[landmarks] = time.perf_counter() - t0
        print(f"dask_kernels Nystroem.fit, {landmarks:<9} {out[landmarks]:7.2f} s   (includes generating the rows)")
    t0 = time.perf_counter()
    Xm = X.compute()
    t_gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    SkNystroem(kernel="rbf", n_components=m, random_state=0).fit(Xm)
    out["sklearn"] = time.perf_counter() - t0
    print(f"scikit-learn Nystroem.fit (in memory)  {out['sklearn']:7.2f} s   (+ {t_gen:.2f} s to materialize the rows)")
    return out


def accuracy(name, X, y, ms, epochs, n_exact, block_rows, tmp):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    print(f"\n== {name}: {len(Xtr)} training rows, {len(Xte)} test rows, {X.shape[1]} features")
    ref = references(Xtr, ytr, Xte, yte, n_exact)
    maps = {
        "GMM-Nystroem": lambda m: Nystroem(n_components=m, kernel="gmm", seed=0),
        "RBF-Nystroem": lambda m: Nystroem(n_components=m, kernel="rbf", gamma=ref["rbf_gamma"], seed=0),
        "GCWS (b=8)": lambda m: GCWS(n_components=m, bits=8, seed=0),
    }
    rows = {}
    for label, make in maps.items():
        rows[label] = []
        for m in ms:
            t = time.perf_counter()
            fmap = make(m).fit(da.from_array(Xtr, chunks=(block_rows, -1))) if "Nystroem" in label else make(m).fit(Xtr)
            store = make_store(Xtr, ytr, fmap, block_rows, tmp, f"{name}-{label[:3]}-{m}")
            model = train(store, epochs)
            rows[label].append(model.score(Xte, yte))
            print(f"  {label:<14} m=k={m:<5} test acc {rows[label][-1]:.4f}  {time.perf_counter() - t:5.1f} s",
                  flush=True)
    print(f"\n{'method':<28}" + "".join(f"{'m=k=' + str(m):>10}" for m in ms))
    for label, accs in rows.items():
        print(f"{label:<28}" + "".join(f"{a:10.4f}" for a in accs))
    for label, acc in [("GMM kernel SVM, exact*", ref["gmm"]), ("RBF kernel SVM, tuned*", ref["rbf"])]:
        print(f"{label:<28}" + f"{acc:10.4f}" * len(ms))
    print(f"* precomputed kernel on {ref['n_exact']} of the {len(Xtr)} training rows; RBF gamma {ref['rbf_gamma']:.3g}")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes")
    args = p.parse_args(argv)
    q = args.quick
    transform_speed(n=5000 if q else 20000, d=784, m=256 if q else 1024)
    fit_time(n=50_000 if q else 400_000, d=64, m=256 if q else 1024, block_rows=10_000)
    ms = [64, 256] if q else [64, 256, 1024]
    n_syn, epochs, n_exact = (8000, 5, 1500) if q else (30000, 10, 4000)
    tmp = tempfile.mkdtemp(prefix="bench_nystroem_")
    try:
        accuracy("digits", *digits(), ms, epochs, n_exact, 256, tmp)
        accuracy(f"synthetic ({n_syn} rows)", *synthetic(n_syn), ms, epochs, n_exact, 2000, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
