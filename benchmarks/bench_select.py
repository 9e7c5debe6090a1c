"""Random feature selection (May 2017, Algorithm 1) against plain random features, and sparse RFF.

Part 1, selection. For each dataset (scikit-learn's digits; the synthetic 4-class set of
``bench_accuracy.py``) and map (RFF and Fastfood, Gaussian kernel, gamma = 1 / median squared
distance of 500 training rows, the thesis' bandwidth heuristic), at equal D:

* plain: the map's features 0 .. D-1;
* selected: ``select_features(map, X_train, y_train, n_components=D, rounds=T,
  subset_rows=R)`` on the training rows (a dask array), R = max(2 D, 1000) rows per round.

Both are written to a Zarr feature store and trained out of core with ``bench_accuracy.py``'s
recipe (``train``: SGDClassifier, log loss, eta0 = s / E||x||^2 with s in {1, 0.1} picked on a
10% validation split of the training rows, the thesis schedule, early stopping). Printed: test
accuracy on 25% untouched rows, and the selection's wall time as a multiple of one training epoch
(the median epoch of the plain model's run, same D).

Part 2, sparse random features (``RFF(density=s)``) at d = 784 (digits upsampled 8x8 -> 28x28,
MNIST-sized rows): for each density, the RMS error of the k-feature estimate ``Z Z^T`` against
the sparse kernel it estimates (``dask_kernels.exact.sparse_rbf_kernel``, 60 rows) and against
the dense Gaussian kernel, and the rows/s of ``transform`` next to dense RFF (density 1, BLAS)
in the same run. Each density runs twice: with the dense map's gamma (the thesis' definition:
nonzero entries N(0, 2 gamma)), and with gamma * d / m, which makes k_m agree with the dense
Gaussian to second order in ||x - y|| (E ||w||^2 as for the dense map).

Run: ``python benchmarks/bench_select.py [--quick] [--sparse-only]``. Writes
``benchmarks/results/select.json`` (``_quick`` with ``--quick``, ``select_sparse`` with
``--sparse-only``).
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import dask.array as da  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from _timing import best_time  # noqa: E402
from bench_accuracy import digits, make_store, synthetic, train  # noqa: E402

from dask_kernels import RFF, Fastfood, select_features  # noqa: E402
from dask_kernels.exact import rbf_kernel, sparse_rbf_kernel  # noqa: E402


def median_gamma(X, n=500, seed=0):
    """1 / median squared distance between rows (the thesis' starting bandwidth, 2 sigma^2)."""
    rows = X[np.random.default_rng(seed).permutation(len(X))[:n]]
    sq = ((rows[:, None, :] - rows[None, :, :]) ** 2).sum(-1)
    return 1.0 / float(np.median(sq[np.triu_indices(len(rows), 1)]))


def selection_table(name, X, y, Ds, rounds, epochs, block_rows, tmp):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    gamma = median_gamma(Xtr)
    print(f"== {name}: {Xtr.shape[0]} training rows, {Xte.shape[0]} test rows, d = {X.shape[1]}, "
          f"gamma = {gamma:.4g}", flush=True)
    makers = {"RFF": lambda D: RFF(n_components=D, gamma=gamma, seed=0),
              "Fastfood": lambda D: Fastfood(n_components=D, gamma=gamma, seed=0)}
    out = []
    Xd = da.from_array(Xtr, chunks=(block_rows, -1))
    for label, make in makers.items():
        for D in Ds:
            plain = make(D).fit(Xtr)
            t = time.perf_counter()
            chosen = select_features(make(D), Xd, ytr, n_components=D, rounds=rounds,
                                     subset_rows=max(2 * D, 1000), seed=0)
            t_select = time.perf_counter() - t
            accs, epoch_s = {}, None
            for kind, fmap in (("plain", plain), ("selected", chosen)):
                store = make_store(Xtr, ytr, fmap, block_rows, tmp, f"{name}-{label}-{D}-{kind}")
                model = train(store, epochs)
                accs[kind] = float(model.score(Xte, yte))
                if kind == "plain":
                    epoch_s = float(np.median([r["seconds"] for r in model.history]))
            row = {"dataset": name, "map": label, "D": int(chosen.n_components), "plain": accs["plain"],
                   "selected": accs["selected"], "select_s": t_select, "epoch_s": epoch_s}
            out.append(row)
            print(f"  {label:<9} D={row['D']:<5} plain {accs['plain']:.4f}  selected {accs['selected']:.4f}  "
                  f"({100 * (accs['selected'] - accs['plain']):+.1f} pts)  selection {t_select:6.1f} s = "
                  f"{t_select / epoch_s:5.1f} epochs", flush=True)
    return out


def sparse_table(densities, k, n_rows, repeat):
    X, _ = digits()
    X = np.kron(X.reshape(-1, 8, 8), np.ones((1, 4, 4)))[:, 2:-2, 2:-2]  # 8x8 -> 32x32 -> 28x28
    X = X.reshape(len(X), -1)
    d = X.shape[1]
    gamma = median_gamma(X)
    A = X[:60]
    K_dense = rbf_kernel(A, gamma=gamma)
    iu = np.triu_indices(len(A), 1)
    rows = np.ascontiguousarray(np.tile(X, (-(-n_rows // len(X)), 1))[:n_rows])
    print(f"== sparse RFF: d = {d} (digits 28x28), gamma = {gamma:.4g}, k = {k}; error on {len(A)} rows, "
          f"speed on {n_rows} rows", flush=True)
    out = []
    for s in densities:
        for rescale in (False, True) if s < 1.0 else (False,):
            m = RFF(density=s).fit(X[:1]).n_nonzero_
            g = gamma * d / m if rescale else gamma  # second-order match of k_m to the Gaussian at 0
            fmap = RFF(n_components=k, gamma=g, density=s, seed=0).fit(X[:1])
            Z = fmap.transform(A).astype(np.float64)
            est = Z @ Z.T
            K_m = K_dense if s >= 1.0 else sparse_rbf_kernel(A, n_nonzero=m, gamma=g)
            secs = best_time(lambda: fmap.transform(rows), repeat)
            out.append({"density": s, "m": m, "gamma": g, "rescaled": rescale,
                        "rms_vs_own_kernel": float(np.sqrt(np.mean((est - K_m)[iu] ** 2))),
                        "rms_vs_dense_gaussian": float(np.sqrt(np.mean((est - K_dense)[iu] ** 2))),
                        "mean_own_kernel": float(K_m[iu].mean()), "rows_per_s": n_rows / secs})
    base = out[0]["rows_per_s"]
    print(f"(mean of the dense Gaussian kernel over these pairs: {K_dense[iu].mean():.4f})")
    print(f"{'density':>8} {'m':>5} {'gamma':>9} {'RMS vs k_m':>11} {'RMS vs Gauss':>13} {'mean k_m':>9} "
          f"{'rows/s':>10} {'vs dense':>9}")
    for r in out:
        print(f"{r['density']:8.3f} {r['m']:5d} {r['gamma']:9.4g} {r['rms_vs_own_kernel']:11.4f} "
              f"{r['rms_vs_dense_gaussian']:13.4f} {r['mean_own_kernel']:9.4f} {r['rows_per_s']:10.0f} "
              f"{r['rows_per_s'] / base:8.2f}x")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    p.add_argument("--sparse-only", action="store_true", help="only part 2 (sparse RFF)")
    args = p.parse_args(argv)
    Ds = [256] if args.quick else [256, 1024]
    rounds = 10 if args.quick else 50
    epochs = 5 if args.quick else 10
    n_synth = 8000 if args.quick else 30000
    block_rows = 2000
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="bench_select_")
    try:
        sel = []
        for name, (X, y) in () if args.sparse_only else (("digits", digits()), ("synthetic", synthetic(n_synth))):
            sel += selection_table(name, X, y, Ds, rounds, epochs, block_rows, tmp)
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp, exist_ok=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{'dataset':<10} {'map':<9} {'D':>5} {'plain':>8} {'selected':>9} {'diff (pts)':>11} "
          f"{'selection / epoch':>18}")
    for r in sel:
        print(f"{r['dataset']:<10} {r['map']:<9} {r['D']:5d} {r['plain']:8.4f} {r['selected']:9.4f} "
              f"{100 * (r['selected'] - r['plain']):+11.1f} {r['select_s'] / r['epoch_s']:17.1f}x")
    print(f"(T = {rounds} rounds, R = max(2 D, 1000) rows per round; training: {epochs} epochs at most)\n")
    sparse = sparse_table([1.0, 0.2, 0.05, 0.01], 1024 if args.quick else 4096, 2000 if args.quick else 10000,
                          2 if args.quick else 5)
    print(f"total {time.perf_counter() - t0:.0f} s")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    name = f"select{'_sparse' if args.sparse_only else ''}{'_quick' if args.quick else ''}.json"
    path = os.path.join(HERE, "results", name)
    with open(path, "w") as f:
        json.dump({"selection": sel, "sparse": sparse, "rounds": rounds, "epochs": epochs, "quick": args.quick}, f,
                  indent=1)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
