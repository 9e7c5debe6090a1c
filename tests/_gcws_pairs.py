"""What the GCWS collision tests share (tests/maps/test_gcws.py for ICWS, tests/maps/test_gcws_dart.py for
DartMinHash): pairs of rows of known GMM, the 4.5-sigma binomial bound, the same pair placed near
dimension 2**31, and a block of rows with zeros."""

import numpy as np
import scipy.sparse as sp

from dask_kernels import gmm_kernel

K_THEORY = 20_000  # hashes per pair in the collision tests
#: Where the high-dimension pair's columns start: its last column is just below 2**31.
HIGH_OFFSET = 2**31 - 5000


def binomial_bound(p, k=K_THEORY, z=4.5):
    """z standard deviations of a rate of k Bernoulli(p) trials (floored at p(1 - p) = 1e-4)."""
    return z * np.sqrt(max(p * (1 - p), 1e-4) / k)


def assert_rate_is(rate, p, what="", k=K_THEORY):
    """The collision rate over k hashes is p within the 4.5-sigma binomial bound."""
    assert abs(rate - p) < binomial_bound(p, k), (what, p, rate)


def _pairs():
    rng = np.random.default_rng(42)
    out = {}
    x = rng.normal(size=30)
    out["negative entries"] = (x, x + rng.normal(scale=0.7, size=30))
    a = sp.random(1, 2000, density=0.05, random_state=1).toarray()[0]
    b = a.copy()
    b[rng.choice(2000, 60, replace=False)] = rng.uniform(size=60)
    out["sparse"] = (a, b)
    scales = 10.0 ** rng.uniform(-3, 3, size=40)
    u = rng.uniform(size=40) * scales
    out["different scales"] = (u, u * rng.uniform(0.5, 2.0, size=40))
    p = np.zeros(200)
    q = np.zeros(200)
    p[:100] = rng.uniform(size=100)
    q[95:] = rng.uniform(size=105)
    out["GMM near 0"] = (p, q)
    w = rng.uniform(1, 2, size=50)
    out["GMM near 1"] = (w, w * (1 + rng.uniform(-0.01, 0.01, size=50)))
    return out


PAIRS = _pairs()


def pair(name):
    """``(X, gmm)``: the pair ``name`` as a (2, d) array and its exact GMM kernel value."""
    x, y = PAIRS[name]
    X = np.vstack([x, y])
    return X, gmm_kernel(X)[0, 1]


def pair_near_2_to_the_31(name="sparse"):
    """``(X, gmm)``: the pair's nonzero columns moved to ``HIGH_OFFSET`` onwards, as a CSR
    matrix of width 2**31 (int64 indices): the same GMM, at indices no table can hold."""
    x, y = PAIRS[name]
    cols = np.nonzero((x != 0) | (y != 0))[0]
    X = sp.csr_matrix(np.vstack([x[cols], y[cols]]))
    X = sp.csr_matrix((X.data, X.indices.astype(np.int64) + HIGH_OFFSET, X.indptr), shape=(2, 2**31))
    return X, gmm_kernel(np.vstack([x, y]))[0, 1]


def rows_with_zeros(scaled=False):
    """37 x 50 rows, 60 % zeros, row 5 all zero; ``scaled``: rows scaled by 10**U(-3, 3)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(37, 50))
    if scaled:
        X *= 10.0 ** rng.uniform(-3, 3, size=(37, 1))
    X[rng.uniform(size=X.shape) < 0.6] = 0.0
    X[5] = 0.0  # an all-zero row
    return X
