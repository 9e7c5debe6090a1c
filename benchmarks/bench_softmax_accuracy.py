"""SoftmaxSGD accuracy out of core, by bottleneck rank, against LogisticRegression and the OvR recipe.

For digits (scikit-learn's bundled 8x8 images) and the synthetic nonlinear set of
``bench_accuracy.py`` (4 classes), GCWS codes (k = 256, b = 8) of the training rows are written
to a feature store with ``dask_kernels.featurize``. Trained out of core from the store with
``fit_incremental`` and the thesis' schedule (halve/revert on held-out ERP, 10% of the training
rows held out, early stopping, at most ``--epochs`` epochs), eta0 = s / k with s in {1, 0.1}
picked by held-out accuracy, alpha = 1e-5:

* ``SoftmaxSGD`` on the codes (no expansion), rank None (full W), 8, 4, 2;
* the one-vs-rest recipe, ``SGDClassifier(loss="log_loss")`` on the one-hot CSR.

Reference in the same run: a converged multinomial ``LogisticRegression`` (lbfgs) on the same
one-hot features held in memory, C in {0.1, 1, 10} picked on the same kind of 10% split of
the training rows and refit on all of them. Test accuracy on untouched rows (25%, stratified).

Run: ``python benchmarks/bench_softmax_accuracy.py [--quick]``.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import dask.array as da  # noqa: E402
from sklearn.linear_model import LogisticRegression, SGDClassifier  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import dask_kernels  # noqa: E402
from dask_kernels import GCWS, SoftmaxSGD, fit_incremental  # noqa: E402

from bench_accuracy import digits, synthetic  # noqa: E402  (the data sets of bench_accuracy.py)

K, BITS, ALPHA = 256, 8, 1e-5
RANKS = (None, 8, 4, 2)


def last_accuracy(model):
    return [r["accuracy"] for r in model.history if r["action"] != "revert"][-1]


def recipe(make, store, epochs):
    """The thesis' schedule from the store, eta0 = s / k for s in {1, 0.1}: the best by held-out accuracy."""
    models = [fit_incremental(make(s / K), store, epochs=epochs, validation=0.1, patience=3, seed=0,
                              progress=False) for s in (1.0, 0.1)]
    return max(models, key=last_accuracy)


def logistic(F, y, Fte, yte):
    """Converged multinomial LogisticRegression, C picked on a 10% split of the training rows."""
    Fa, Fv, ya, yv = train_test_split(F, y, test_size=0.1, random_state=0, stratify=y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ConvergenceWarning would mean "not converged": fail loudly
        best = max((LogisticRegression(C=C, max_iter=5000).fit(Fa, ya).score(Fv, yv), C) for C in (0.1, 1.0, 10.0))
        return LogisticRegression(C=best[1], max_iter=5000).fit(F, y).score(Fte, yte), best[1]


def table(name, X, y, epochs, block_rows, tmp):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    C = len(np.unique(y))
    gcws = GCWS(n_components=K, bits=BITS, seed=0).fit(Xtr)
    store = dask_kernels.featurize(da.from_array(Xtr, chunks=(block_rows, -1)), gcws, labels=ytr,
                                   store=os.path.join(tmp, f"{name}.zarr"), progress=False)
    D = K << BITS
    print(f"\n== {name}: {len(Xtr)} training rows, {len(Xte)} test rows, {C} classes, GCWS k={K} b={BITS} "
          f"(one-hot width {D})", flush=True)
    rows = []
    t0 = time.perf_counter()
    lr_acc, lr_C = logistic(gcws.expand(gcws.transform(Xtr)), ytr, gcws.expand(gcws.transform(Xte)), yte)
    rows.append((f"LogisticRegression (lbfgs, C={lr_C:g}), one-hot, in memory", (D + 1) * C, lr_acc, "-",
                 time.perf_counter() - t0))
    t0 = time.perf_counter()
    ovr = recipe(lambda eta0: SGDClassifier(loss="log_loss", alpha=ALPHA, learning_rate="constant", eta0=eta0,
                                            random_state=0), store, epochs)
    rows.append(("OvR recipe: SGDClassifier(log_loss), one-hot", (D + 1) * C, ovr.score(Xte, yte),
                 len(ovr.history), time.perf_counter() - t0))
    for rank in RANKS:
        t0 = time.perf_counter()
        m = recipe(lambda eta0: SoftmaxSGD(code_bits=BITS, rank=rank, alpha=ALPHA, eta0=eta0, random_state=0),
                   store, epochs)
        rows.append((f"SoftmaxSGD rank={rank}, codes", m.estimator.n_parameters_, m.score(Xte, yte),
                     len(m.history), time.perf_counter() - t0))
    print(f"{'model':<58} {'parameters':>10} {'test acc':>9} {'epochs':>6} {'seconds':>8}")
    for label, params, acc, ep, s in rows:
        print(f"{label:<58} {params:>10,} {acc:9.4f} {ep:>6} {s:8.1f}")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="8000 synthetic rows, 5 epochs (else 30000, 10)")
    p.add_argument("--epochs", type=int, default=None)
    args = p.parse_args(argv)
    n_syn = 8000 if args.quick else 30000
    epochs = args.epochs or (5 if args.quick else 10)
    tmp = tempfile.mkdtemp(prefix="bench_softmax_")
    try:
        table("digits", *digits(), epochs, 256, tmp)
        table(f"synthetic ({n_syn} rows)", *synthetic(n_syn), epochs, 2000, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
