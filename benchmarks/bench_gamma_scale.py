"""Learned bandwidth and input scaling on real data: ``gamma="scale"`` against the default gamma
(RFF, NRFF, Nystroem rbf) and CoRE on raw against max-abs scaled columns.

    python benchmarks/bench_gamma_scale.py [--datasets wine,cancer,digits,penguins,mnist5k]
        [--components 1024]

Each dataset is split 75/25, stratified, seed 0 (``bench_recipe.split``); a map is fitted on the
training rows, ``LinearSVC(C=1)`` trained on its features, and the table gives test accuracy.
Rows are used as given ("raw": columns in their own units) and standardized ("std":
``StandardScaler`` fitted on the training rows), the two inputs a user hands a map.

* ``rff 1.0`` / ``rff scale``: RFF with the default gamma=1.0 / gamma="scale"
  (``1 / (d X.var())``);
* ``nrff 1.0`` / ``nrff scale``: NRFF with gamma=1.0 / "scale" (``2 / (d U.var())`` of the unit rows);
* ``nys 1/d`` / ``nys scale``: Nystroem(kernel="rbf") with its default gamma (1 / d) / "scale";
* ``core raw`` / ``core maxabs``: CoRE (type 1, k = components / 4, 8 bits, expanded) on the rows,
  and on the rows with every column divided by its largest training ``|x|`` (what
  ``GCWS(scale="maxabs")`` does; it keeps the nonzero pattern CoRE's resemblance is made of).

Accuracy does not depend on the machine's load; the load average is printed for the timing column
(seconds for the whole row).
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from bench_recipe import DATASETS, split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from dask_kernels import NRFF, RFF, CoRE, Nystroem  # noqa: E402
from dask_kernels.maps._scaling import apply_scale, shift_factor  # noqa: E402


def accuracy(fmap, Xtr, Xte, ytr, yte):
    fmap.fit(Xtr)
    Ftr, Fte = fmap.transform(Xtr), fmap.transform(Xte)
    if hasattr(fmap, "expand") and not isinstance(fmap, (RFF, NRFF, Nystroem)):
        Ftr, Fte = fmap.expand(Ftr), fmap.expand(Fte)
    return LinearSVC(C=1.0, max_iter=5000).fit(Ftr, ytr).score(Fte, yte)


def maxabs(Xtr, Xte):
    _, factor = shift_factor("maxabs", (np.abs(Xtr).max(axis=0),))
    return apply_scale(Xtr, None, factor), apply_scale(Xte, None, factor)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="wine,cancer,digits,penguins,mnist5k")
    ap.add_argument("--components", type=int, default=1024)
    args = ap.parse_args()
    args.letter = None
    k = args.components
    columns = {
        "rff 1.0": lambda: RFF(n_components=k, gamma=1.0), "rff scale": lambda: RFF(n_components=k, gamma="scale"),
        "nrff 1.0": lambda: NRFF(n_components=k, gamma=1.0), "nrff scale": lambda: NRFF(n_components=k, gamma="scale"),
        "nys 1/d": lambda: Nystroem(n_components=min(k, 256), kernel="rbf"),
        "nys scale": lambda: Nystroem(n_components=min(k, 256), kernel="rbf", gamma="scale"),
    }
    names = list(columns) + ["core raw", "core maxabs"]
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'dataset':<10}{'input':<6}" + "".join(f"{n:>12}" for n in names) + f"{'s':>6}")
    for name in args.datasets.split(","):
        if name not in DATASETS or name == "letter":
            raise SystemExit(f"--datasets: {name!r} is not one of {sorted(set(DATASETS) - {'letter'})}")
        try:
            Xtr, Xte, ytr, yte = split(name, args)
        except ImportError as e:
            print(f"{name:<10}left out: {e}")
            continue
        for kind in ("raw", "std"):
            t0 = time.perf_counter()
            if kind == "std":
                sc = StandardScaler().fit(Xtr)
                Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
            accs = [accuracy(make(), Xtr, Xte, ytr, yte) for make in columns.values()]
            core = lambda: CoRE(n_components=max(k // 4, 16), type=1, bits=8)  # noqa: E731
            accs.append(accuracy(core(), Xtr, Xte, ytr, yte))
            accs.append(accuracy(core(), *maxabs(Xtr, Xte), ytr, yte))
            print(f"{name:<10}{kind:<6}" + "".join(f"{a:>12.3f}" for a in accs) + f"{time.perf_counter() - t0:>6.0f}",
                  flush=True)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
