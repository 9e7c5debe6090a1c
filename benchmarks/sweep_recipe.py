"""Choosing the default recipe by measurement: ``dask-kernels train --method gcws`` configurations
scored on a held-out validation split of each dataset's TRAINING rows (the test rows of
``bench_recipe.py`` are never read).

For each dataset of ``bench_recipe.py`` its training rows are split 80/20, stratified, seed 1;
every configuration trains with the CLI on the 80 % and is scored on the 20 % (datasets under
2000 training rows: the mean over ``--repeats`` such splits, seeds 1, 2, ...). A configuration
is a set of ``train`` options on top of ``--method gcws`` (or, for the configurations named
``rff k256``, ``nystroem k2048`` and so on, ``--method M --n-components k`` with every other
option at train's defaults), always with an explicit k, b (8 unless
set), ``--eta0`` (``eta_mult / k``, 1 / k unless set: the previous default), ``--epochs`` (10
unless set) and ``--validation-fraction`` (``holdout``, 0.1 unless set: 0 trains every row, with
no schedule or early stopping), so a row's meaning does not follow train's defaults; ``visits=N``
sets ``--epochs`` to
``max(10, ceil(N / rows))``, at most 500 (so a small dataset gets as many row visits as a large one) and
``--min-epochs`` to the same, so that early stopping on a held-out tenth of a few dozen rows
cannot end the run on one row's noise (500: every epoch without improvement halves eta0, and
halved 1075 times it is 0.0, which a saved model refuses).

Run: ``python benchmarks/sweep_recipe.py [--mlbench .../mlbench/data] [--datasets ...]
[--configs NAME,...] [--repeats N]``; prints one line per (dataset, configuration): validation
accuracy, seconds.
"""

import argparse
import math
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_recipe import DATASETS, MLBENCH, cli_train, split  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

CONFIGS = {
    "k256": {},
    "k1024": {"k": 1024},
    "k2048": {"k": 2048},
    "k1024 b4": {"k": 1024, "bits": 4},
    "k1024 v100k": {"k": 1024, "visits": 100_000},
    "k1024 v300k": {"k": 1024, "visits": 300_000},
    "k1024 a1e-6": {"k": 1024, "alpha": 1e-6},
    "k1024 a1e-4": {"k": 1024, "alpha": 1e-4},
    "k2048 v100k": {"k": 2048, "visits": 100_000},
    "k2048 v100k a1e-6": {"k": 2048, "visits": 100_000, "alpha": 1e-6},
    "k1024 v100k a1e-6": {"k": 1024, "visits": 100_000, "alpha": 1e-6},
    "k1024 v100k eta4": {"k": 1024, "visits": 100_000, "eta_mult": 4.0},
    "k1024 eta4": {"k": 1024, "eta_mult": 4.0},
    "k1024 eta16": {"k": 1024, "eta_mult": 16.0},
    "k1024 b4 eta4": {"k": 1024, "bits": 4, "eta_mult": 4.0},
    "k1024 b4 eta16": {"k": 1024, "bits": 4, "eta_mult": 16.0},
    "k1024 eta4 v300k": {"k": 1024, "eta_mult": 4.0, "visits": 300_000},
    "k4096 b4 eta4": {"k": 4096, "bits": 4, "eta_mult": 4.0},
    "k2048 b4 eta4": {"k": 2048, "bits": 4, "eta_mult": 4.0},
    "k2048 b4": {"k": 2048, "bits": 4},
    "k2048 b4 eta4 e5": {"k": 2048, "bits": 4, "eta_mult": 4.0, "epochs": 5},
    "k2048 b4 eta4 e20": {"k": 2048, "bits": 4, "eta_mult": 4.0, "epochs": 20},
    "k2048 b4 eta2": {"k": 2048, "bits": 4, "eta_mult": 2.0},
    "k2048 b4 eta8": {"k": 2048, "bits": 4, "eta_mult": 8.0},
    "k4096 b4": {"k": 4096, "bits": 4},
    "k4096 b2": {"k": 4096, "bits": 2},
    "k2048 b4 v300k": {"k": 2048, "bits": 4, "visits": 300_000},
    "k4096 b4 v300k": {"k": 4096, "bits": 4, "visits": 300_000},
    # the held-out set: 10 % held out for the schedule and early stopping, or every row trains
    "k2048 b4 eta4 all": {"k": 2048, "bits": 4, "eta_mult": 4.0, "holdout": 0},
    "k2048 b4 eta4 all e20": {"k": 2048, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 20},
    "k2048 b4 eta4 all e30": {"k": 2048, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 30},
    # the L2 penalty of the recipe (train's default alpha is 1e-5): an exact SVM's C = 10 on n rows
    # is alpha = 1 / (C n), 6e-4 for Glass's 160 training rows
    "k2048 b4 eta4 all e20 a1e-6": {"k": 2048, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 20, "alpha": 1e-6},
    "k2048 b4 eta4 all e20 a1e-4": {"k": 2048, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 20, "alpha": 1e-4},
    "k2048 b4 eta4 all e20 a1e-3": {"k": 2048, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 20, "alpha": 1e-3},
    "k4096 b4 eta4 all e20": {"k": 4096, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 20},
    "k8192 b4 eta4 all e20": {"k": 8192, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 20},
    "k2048 b8 eta4 all e20": {"k": 2048, "bits": 8, "eta_mult": 4.0, "holdout": 0, "epochs": 20},
    "k2048 b4 eta4 all e40": {"k": 2048, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 40},
    "k2048 b4 eta4 all e20 a1e-2": {"k": 2048, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 20, "alpha": 1e-2},
    "k2048 b4 eta4 all e20 a3e-2": {"k": 2048, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 20, "alpha": 3e-2},
    "k2048 b4 eta4 all e20 a1e-1": {"k": 2048, "bits": 4, "eta_mult": 4.0, "holdout": 0, "epochs": 20, "alpha": 1e-1},
    # SoftmaxSGD's hinge loss (train --loss hinge) against the recipe's log loss, at eta0 = f / k
    **{f"k2048 b4 hinge{'' if f == 1 else f' eta{f:g}'} all e20": {"k": 2048, "bits": 4, "loss": "hinge",
                                                                   "eta_mult": f, "holdout": 0, "epochs": 20}
       for f in (0.25, 1.0, 4.0)},
    # the other maps' k (train --method M --n-components k, everything else at train's defaults)
    **{f"{m} k{k}": {"method": m, "k": k} for m in ("rff", "nrff", "fastfood", "nystroem") for k in (256, 1024, 2048)},
}


def options(cfg, n_rows):
    k = cfg.get("k", 256)
    if cfg.get("method", "gcws") != "gcws":  # another map: its k, the rest at train's defaults
        return ["--method", cfg["method"], "--n-components", str(k)]
    opts = ["--method", "gcws"]
    opts += ["--n-components", str(k)]
    opts += ["--param", f"bits={cfg.get('bits', 8)}"]  # explicit: not whatever train's default is
    if "visits" in cfg:
        # at most 500 epochs: every epoch that does not improve halves eta0, and 2**-1075 is 0.0
        epochs = min(500, max(10, math.ceil(cfg["visits"] / n_rows)))
        opts += ["--epochs", str(epochs), "--min-epochs", str(epochs)]
    elif "epochs" in cfg:
        opts += ["--epochs", str(cfg["epochs"])]
    else:
        opts += ["--epochs", "10"]
    opts += ["--validation-fraction", str(cfg.get("holdout", 0.1))]
    if "alpha" in cfg:
        opts += ["--alpha", str(cfg["alpha"])]
    if "loss" in cfg:
        opts += ["--loss", cfg["loss"]]
    # GCWS rows have k ones: 1 / k is 1 / (mean squared row norm), train's former default
    opts += ["--eta0", str(cfg.get("eta_mult", 1.0) / k)]
    return opts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--mlbench", default=MLBENCH, help="r-cran-mlbench's data folder (letter, sonar, pima, ...)")
    ap.add_argument("--letter", default=None, help="LetterRecognition.rda (default: in --mlbench)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--repeats", type=int, default=5, help="validation splits of datasets under 2000 rows")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sweep_recipe-")
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", flush=True)
    try:
        for name in args.datasets.split(","):
            Xtr, _, ytr, _ = split(name, args)  # the test rows are dropped here
            # small datasets: the mean over several validation splits (one row of wine's is 3.7 points)
            seeds = range(1, 1 + (args.repeats if len(ytr) < 2000 else 1))
            for c in args.configs.split(","):
                t, accs = time.perf_counter(), []
                for s in seeds:
                    Xf, Xv, yf, yv = train_test_split(Xtr, ytr, test_size=0.2, random_state=s, stratify=ytr)
                    np.save(os.path.join(tmp, "X.npy"), Xf)
                    np.save(os.path.join(tmp, "y.npy"), yf)
                    accs.append(cli_train(tmp, Xv, yv, *options(CONFIGS[c], len(yf))))
                sec = (time.perf_counter() - t) / len(accs)
                print(f"{name:<10} {len(yf):>6}/{len(yv):<5} {c:<22} {np.mean(accs):.4f} {sec:7.1f}", flush=True)
    finally:
        shutil.rmtree(tmp, True)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", flush=True)


if __name__ == "__main__":
    main()
