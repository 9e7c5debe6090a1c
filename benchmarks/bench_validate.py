"""Cost of the input contract (``FeatureMap.validate_block``) per block, against its peer.

    python benchmarks/bench_validate.py

The peer is scikit-learn's ``check_array(..., ensure_all_finite=True)``, what an estimator runs
on every call (it checks finiteness, not sparse structure or magnitude bounds). The last column
is the check's share of featurizing the same block (``transform_block``), one thread.
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from sklearn.utils import check_array  # noqa: E402

from dask_kernels import GCWS, RFF  # noqa: E402


def best_time(f, repeat=30):
    f()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5000, 784)).astype(np.float32)
    blocks = {
        "dense 5000x784 float32": X,
        "dense 5000x784 float64": X.astype(np.float64),
        "CSR 5000x784 19% nnz float32": sp.csr_matrix(X * (rng.random(X.shape) < 0.19)),
    }
    maps = {"GCWS k=256": GCWS(n_components=256).fit(X[:2]), "RFF k=4096": RFF(n_components=4096).fit(X[:2])}
    print(f"{'block':30s} {'map':12s} {'validate ns/val':>15s} {'sklearn ns/val':>14s} {'vs sklearn':>10s} "
          f"{'% of block':>10s}")
    for name, B in blocks.items():
        n = B.nnz if sp.issparse(B) else B.size
        peer = best_time(lambda: check_array(B, accept_sparse="csr", dtype=[np.float64, np.float32],
                                             ensure_all_finite=True))
        for mname, m in maps.items():
            ours = best_time(lambda: m.validate_block(B))
            featurize = best_time(lambda: m.transform_block(B), repeat=3)
            print(f"{name:30s} {mname:12s} {ours / n * 1e9:15.3f} {peer / n * 1e9:14.3f} {peer / ours:9.1f}x "
                  f"{100 * ours / featurize:9.2f}%")


if __name__ == "__main__":
    main()
