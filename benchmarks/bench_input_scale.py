"""What input scaling costs: ``transform`` of RFF, NRFF and Fastfood with and without ``scale=``,
next to scikit-learn's ``make_pipeline(MinMaxScaler((-1, 1)), RBFSampler())``, the pipeline that
scales the same way.

    python benchmarks/bench_input_scale.py [--rows 100000] [--features 784] [--components 256] [--repeat 3]

Rows are uniform in [0, 255) (float64, pixel-like, dense). Every map is fitted on the first
20,000 rows with ``gamma="scale"`` (scikit-learn: ``RBFSampler(gamma="scale")``, its default
dtype float64 as it gives it; ours float32, their default); the table gives the best wall time of
``--repeat`` calls of ``transform`` on all rows, after one untimed call, its rows/s, and the
ratio to the peer ("x sklearn": its time over ours). ``scale`` adds one pass over the rows
(``validate_block`` scales them into the map's dtype).
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from sklearn.kernel_approximation import RBFSampler  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import MinMaxScaler  # noqa: E402

from dask_kernels import NRFF, RFF, Fastfood  # noqa: E402

from _timing import best_time  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=784)
    ap.add_argument("--components", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    X = np.random.default_rng(0).random((args.rows, args.features)) * 255.0
    fit_rows = X[:20_000]
    k = args.components
    peer = make_pipeline(MinMaxScaler((-1, 1)), RBFSampler(gamma="scale", n_components=k, random_state=0))
    peer.fit(fit_rows)
    peer_s = best_time(lambda: peer.transform(X), args.repeat)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    print(f"{args.rows:,} rows x {args.features} features, k = {k}")
    print(f"{'transform':<44} {'seconds':>8} {'rows/s':>12} {'x sklearn':>10}")
    name = "MinMaxScaler((-1, 1)) + RBFSampler (sklearn)"
    print(f"{name:<44} {peer_s:>8.3f} {args.rows / peer_s:>12,.0f} {1.0:>10.2f}")
    for cls in (RFF, NRFF, Fastfood):
        for scale in (None, "auto"):
            fmap = cls(n_components=k, gamma="scale", scale=scale, seed=0).fit(fit_rows)
            s = best_time(lambda: fmap.transform(X), args.repeat)
            name = f"{cls.__name__}(scale={scale!r})"
            print(f"{name:<44} {s:>8.3f} {args.rows / s:>12,.0f} {peer_s / s:>10.2f}", flush=True)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
