"""Which learner on float features: ``dask-kernels train --method nrff`` (or rff) with
``--estimator sgd`` (SGDClassifier, log loss: the command's default on float features) against
``--estimator softmax`` (SoftmaxSGD), every other option at its default, scored on a held-out
validation split of each dataset's TRAINING rows (the test rows of ``bench_recipe.py`` are never
read).

The datasets and splits are ``sweep_recipe.py``'s: training rows split 80/20, stratified, seed 1;
datasets under 2000 training rows: the mean over ``--repeats`` such splits, seeds 1, 2, ...
Both learners see the same rows, map and default recipe (10 epochs, early stopping on a tenth
held out, eta0 = 1 / mean squared row norm, alpha = 1e-5); training speed is
``bench_train.py``'s.

Run: ``python benchmarks/sweep_float_learner.py --letter .../LetterRecognition.rda
[--datasets ...] [--methods nrff,rff]``; prints one line per (dataset, method, learner):
validation accuracy, seconds, and per (dataset, method) the difference softmax - sgd.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_recipe import DATASETS, LETTER_RDA, cli_train, split  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

LEARNERS = ("sgd", "softmax")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--letter", default=LETTER_RDA)
    ap.add_argument("--methods", default="nrff", help="comma-separated float maps: nrff, rff")
    ap.add_argument("--repeats", type=int, default=5, help="validation splits of datasets under 2000 rows")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sweep_float_learner-")
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", flush=True)
    diffs = []
    try:
        for name in args.datasets.split(","):
            Xtr, _, ytr, _ = split(name, args)  # the test rows are dropped here
            seeds = range(1, 1 + (args.repeats if len(ytr) < 2000 else 1))
            for method in args.methods.split(","):
                acc = {}
                for learner in LEARNERS:
                    t, accs = time.perf_counter(), []
                    for s in seeds:
                        Xf, Xv, yf, yv = train_test_split(Xtr, ytr, test_size=0.2, random_state=s, stratify=ytr)
                        np.save(os.path.join(tmp, "X.npy"), Xf)
                        np.save(os.path.join(tmp, "y.npy"), yf)
                        accs.append(cli_train(tmp, Xv, yv, "--method", method, "--estimator", learner))
                    acc[learner] = np.mean(accs)
                    sec = (time.perf_counter() - t) / len(accs)
                    print(f"{name:<10} {len(yf):>6}/{len(yv):<5} {method:<5} {learner:<8} {acc[learner]:.4f} "
                          f"{sec:7.1f} s", flush=True)
                diffs.append(acc["softmax"] - acc["sgd"])
                print(f"{name:<10} {method:<5} softmax - sgd {diffs[-1]:+.4f}", flush=True)
    finally:
        shutil.rmtree(tmp, True)
    print(f"mean difference softmax - sgd over {len(diffs)} (dataset, method): {np.mean(diffs):+.4f}; "
          f"softmax ahead on {sum(d > 0 for d in diffs)}, behind on {sum(d < 0 for d in diffs)}")
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", flush=True)


if __name__ == "__main__":
    main()
