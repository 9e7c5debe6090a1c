"""Which per-feature input scaling for the Fourier maps, Nystroem and GCWS: the columns' range
onto [-1, 1] (GCWS's rule, what ``scale="minmax"`` does) against the range onto [0, 1] (``unit``:
nonnegative rows, which the GMM kernel takes without splitting a column into its positive and
negative parts), standardization (scikit-learn's ``StandardScaler``, what a scikit-learn user
puts before ``RBFSampler``; ``scale="standard"``), the map's own ``scale="auto"`` and none.

For each dataset of ``bench_recipe.py`` (its 75/25 test splits; datasets under ``--repeat-rows``
(2000) training rows: the mean over ``--repeats`` splits) the training rows are scaled by ``MinMaxScaler((-1, 1))``,
``MinMaxScaler((0, 1))`` or ``StandardScaler`` fitted on them (the test rows by the same fitted
scaler), or left as they are, and ``dask-kernels train --method M --param scale=null`` (the
map's own scaling off; the bandwidth ``gamma="scale"``, the command's default, learned from the
rows it is given) trains on them; ``auto`` and ``auto_std`` give the raw rows to ``--param
scale=auto`` and ``--param scale=auto_standard`` (standardized, or divided by the largest
``|x|`` when at most half of the entries are nonzero). The table gives test accuracy. With
``--validation`` the test rows are never read: each dataset's training rows are split 80/20,
stratified (seeds 1 to ``--repeats`` under ``--repeat-rows`` rows, else seed 1), as
``sweep_recipe.py`` splits them, and the table gives validation accuracy: what a default is
chosen on.

Run: ``python benchmarks/sweep_input_rule.py [--datasets vehicle,wine,...] [--methods rff,nrff,nystroem,gcws]
[--repeats 5] [--repeat-rows 2000] [--validation] [--mlbench DIR]``.
"""

import argparse
import atexit
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_recipe import DATASETS, MLBENCH, cli_train, split  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import MinMaxScaler, StandardScaler  # noqa: E402

#: rule -> (the scaler fitted on the training rows, or None for the raw rows; the map's --param scale)
RULES = {"none": (None, "null"), "auto": (None, "auto"), "auto_std": (None, "auto_standard"),
         "minmax": (lambda: MinMaxScaler((-1, 1)), "null"),
         "unit": (lambda: MinMaxScaler((0, 1)), "null"), "standard": (StandardScaler, "null")}


def run(tmp, methods, Xtr, Xte, ytr, yte):
    out = {}
    for rule, (make, scale) in RULES.items():
        A, B = (Xtr, Xte) if make is None else (lambda s: (s.transform(Xtr), s.transform(Xte)))(make().fit(Xtr))
        np.save(os.path.join(tmp, "X.npy"), A)
        np.save(os.path.join(tmp, "y.npy"), ytr)
        for m in methods:
            out[m, rule] = cli_train(tmp, B, yte, "--method", m, "--param", f"scale={scale}")
    return out


def splits(name, args):
    """The (train, evaluation) splits of a dataset: its test splits, or with ``--validation``
    splits of its training rows only."""
    Xtr, Xte, ytr, yte = split(name, args)
    if args.validation:
        seeds = range(1, 1 + (args.repeats if len(ytr) < args.repeat_rows else 1))
        return [train_test_split(Xtr, ytr, test_size=0.2, random_state=s, stratify=ytr) for s in seeds]
    out = [(Xtr, Xte, ytr, yte)]
    if len(ytr) < args.repeat_rows:
        X, y = np.concatenate([Xtr, Xte]), np.concatenate([ytr, yte])
        out += [train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)
                for seed in range(1, args.repeats)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="mnist5k,satellite,digits,vehicle,pima,cancer,ionosphere,penguins,glass,"
                                          "sonar,wine,letter,dna")
    ap.add_argument("--methods", default="rff,nrff,nystroem")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--repeat-rows", type=int, default=2000,
                    help="repeat the splits of datasets with fewer training rows than this")
    ap.add_argument("--validation", action="store_true",
                    help="score on 80/20 splits of the training rows (the test rows are never read)")
    ap.add_argument("--mlbench", default=MLBENCH)
    args = ap.parse_args()
    args.letter = None
    tmp = tempfile.mkdtemp(prefix="sweep_input_rule-")
    atexit.register(shutil.rmtree, tmp, True)
    methods = args.methods.split(",")
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'dataset':<12} {'method':<10} " + " ".join(f"{r:>9}" for r in RULES))
    for name in args.datasets.split(","):
        if name not in DATASETS:
            raise SystemExit(f"unknown dataset {name!r}")
        results = [run(tmp, methods, Xa, Xb, ya, yb) for Xa, Xb, ya, yb in splits(name, args)]
        for m in methods:
            means = [np.mean([r[m, rule] for r in results]) for rule in RULES]
            print(f"{name:<12} {m:<10} " + " ".join(f"{a:>9.4f}" for a in means), flush=True)


if __name__ == "__main__":
    main()
