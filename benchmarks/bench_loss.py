"""SoftmaxSGD's two losses through ``dask-kernels train`` on synthetic sets of overlapping classes.

``train X.npy --labels y.npy`` with its defaults (GCWS k = 2048, b = 4, SoftmaxSGD with the log
loss at eta0 = 4 / k) against the same with ``--loss hinge`` (one-vs-rest linear SVMs at
eta0 = 1 / k), on the two synthetic sets of ``bench_train.py``: 4 classes from 10 Gaussian inputs
(``bench_accuracy.synthetic``) and 10 classes (quintiles of a product term times a radius
term, ``bench_train.synthetic10``), whose classes overlap. For each ``--rows`` training rows
(inputs of 100,000 rows or more hold 10 % out for the schedule and early stopping, smaller ones
train 20 epochs on every row), test accuracy on 50,000 other rows and wall seconds. The real
datasets' comparison is ``bench_recipe.py --losses``.

Run: ``python benchmarks/bench_loss.py [--rows 5000,30000,300000]``.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_accuracy import synthetic  # noqa: E402
from bench_recipe import cli_train  # noqa: E402
from bench_train import synthetic10  # noqa: E402

TEST_ROWS = 50_000
LOSSES = {"log_loss (default)": (), "hinge": ("--loss", "hinge")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="5000,30000,300000", help="comma-separated training sizes")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_loss-")
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    print(f"{'dataset':<12} {'rows':>8} {'loss':<20} {'accuracy':>8} {'seconds':>8}")
    try:
        for name, make in (("synthetic4", synthetic), ("synthetic10", synthetic10)):
            for n in (int(r) for r in args.rows.split(",")):
                X, y = make(n + TEST_ROWS)
                np.save(os.path.join(tmp, "X.npy"), X[:n])
                np.save(os.path.join(tmp, "y.npy"), y[:n])
                for loss, options in LOSSES.items():
                    t = time.perf_counter()
                    acc = cli_train(tmp, X[n:], y[n:], *options)
                    print(f"{name:<12} {n:>8} {loss:<20} {acc:>8.4f} {time.perf_counter() - t:>8.1f}", flush=True)
    finally:
        shutil.rmtree(tmp, True)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
