"""How much of the gap between the default recipe and an exact-kernel SVM is the learner's:
the same GCWS codes, trained by SGD as the recipe does and by liblinear's linear SVM.

For each dataset of ``bench_recipe.py`` its training rows are split 80/20 (stratified, seed 1, as
``sweep_recipe.py`` does; the test rows are never read). The 80 % are hashed once with the map of
``dask-kernels train --method gcws``'s defaults (``GCWS(n_components=2048, bits=4)``, input
scaling ``"auto"``), and on those codes, in memory:

* ``SoftmaxSGD(code_bits=4, eta0=4 / k, alpha=1e-5)``, the recipe's learner, for 10 and 30 epochs
  (every row trains: no held-out rows, no schedule), and with ``alpha`` and averaging varied;
* ``LinearSVC(C)`` (liblinear's dual coordinate descent, to its tolerance or iteration cap,
  which the table says) on the one-hot expansion of the same codes, C in {0.1, 1}.

Validation accuracy on the other 20 %, and seconds. What the SVM reaches and SGD does
not is the learner's; what neither reaches is the features' (k, b).

Run: ``python benchmarks/bench_learner_gap.py [--datasets letter,mnist5k] [--letter .../LetterRecognition.rda]``
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_recipe import LETTER_RDA, split  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from dask_kernels import GCWS, SoftmaxSGD, expand_codes  # noqa: E402

K, BITS = 2048, 4
SGD_RUNS = {
    "SoftmaxSGD, 10 epochs (the recipe's learner)": {},
    "SoftmaxSGD, 30 epochs": {"max_iter": 30},
    "SoftmaxSGD, 10 epochs, alpha 1e-3": {"alpha": 1e-3},
    "SoftmaxSGD, 30 epochs, alpha 1e-3": {"alpha": 1e-3, "max_iter": 30},
    "SoftmaxSGD, 30 epochs, averaged": {"max_iter": 30, "average": True},
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="letter,mnist5k")
    ap.add_argument("--letter", default=LETTER_RDA)
    args = ap.parse_args()
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", flush=True)
    print(f"{'dataset':<9} {'learner on GCWS k=2048, b=4 codes':<48} {'val acc':>7} {'s':>6}")
    for name in args.datasets.split(","):
        Xtr, _, ytr, _ = split(name, args)  # the test rows are dropped here
        Xf, Xv, yf, yv = train_test_split(Xtr, ytr, test_size=0.2, random_state=1, stratify=ytr)
        gcws = GCWS(n_components=K, bits=BITS).fit(Xf)
        Cf, Cv = np.asarray(gcws.transform(Xf)), np.asarray(gcws.transform(Xv))

        def row(label, fit, Xval):
            t = time.perf_counter()
            model = fit()
            acc = float(np.mean(model.predict(Xval) == yv))
            print(f"{name:<9} {label:<48} {acc:7.4f} {time.perf_counter() - t:6.1f}", flush=True)

        for label, extra in SGD_RUNS.items():
            params = {"code_bits": BITS, "eta0": 4 / K, "alpha": 1e-5, "max_iter": 10, "random_state": 0, **extra}
            row(label, lambda p=params: SoftmaxSGD(**p).fit(Cf, yf), Cv)
        Of, Ov = expand_codes(Cf, BITS), expand_codes(Cv, BITS)
        for C in (0.1, 1.0):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                row(f"LinearSVC(C={C}), one-hot", lambda C=C: LinearSVC(C=C).fit(Of, yf), Ov)
            if any(issubclass(w.category, ConvergenceWarning) for w in caught):
                print(f"{'':<9} (liblinear stopped at its iteration cap before its tolerance)")
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", flush=True)


if __name__ == "__main__":
    main()
