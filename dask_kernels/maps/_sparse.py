"""Sparse random frequencies (``RFF(density=s)``): each w_j is nonzero on m random inputs.

May's thesis (2017, section 5.2) draws, for each feature j, a subset F_j of m input coordinates
uniformly at random and keeps w_j zero outside it; inside, the entries are those of the dense
map (``N(0, 2 gamma)`` or ``Cauchy(0, gamma)``). No variance or scale correction is applied: the
features are unbiased for a *different* shift-invariant kernel, the average over subsets,

    k_m(x, y) = C(d, m)^-1 sum_{|F| = m} prod_{i in F} k_1(x_i - y_i),

with ``k_1(t) = exp(-gamma t^2)`` (the thesis' "sparse Gaussian kernel", eq. 5.1) or
``exp(-gamma |t|)``; :func:`dask_kernels.exact.sparse_rbf_kernel` computes it exactly. A single
product ``2 cos(w.x + b) cos(w.y + b)`` has variance ``1 + k_m(2x, 2y) / 2 - k_m(x, y)^2``, as
for every random Fourier feature.

Random streams (scheme dk-rng-1): the support of feature j is Floyd's algorithm with the words
``bits(index_key(stream_key(seed, STREAM_SUPPORT), j), r)``, r < m (pick r chooses uniformly in
``[0, d - m + r]``, a collision takes ``d - m + r``); the values at ``(j, i)`` are the dense
map's ``W[i, j]`` (streams 21 / 22), so a feature depends only on (seed, j).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._bounds import MAX_TABLE_BYTES
from ..rng import bits, index_key, stream_key, unit64

#: Most stored nonzeros (k * m) a sparse map may have: an int64 index and a float64 value each,
#: at most :data:`~dask_kernels.maps._bounds.MAX_TABLE_BYTES` (2**27 nonzeros, 2 GiB).
MAX_NONZEROS = MAX_TABLE_BYTES // 16


@njit(nogil=True, cache=True)
def sparse_support(seed, stream, ids, d, m):
    """(len(ids), m) int64: the sorted support of each feature, by Floyd's algorithm."""
    skey = stream_key(np.uint64(seed), np.uint64(stream))
    k = ids.size
    idx = np.empty((k, m), dtype=np.int64)
    mark = np.zeros(d, dtype=np.bool_)
    for c in range(k):
        key = index_key(skey, np.uint64(ids[c]))
        for r in range(m):
            top = d - m + r
            t = int(unit64(bits(key, np.uint64(r))) * (top + 1))
            if t > top:  # unit64 < 1, so only if rounding: keep the draw in range
                t = top
            if mark[t]:
                t = top
            mark[t] = True
            idx[c, r] = t
        for r in range(m):
            mark[idx[c, r]] = False
        idx[c].sort()
    return idx


@njit(nogil=True, cache=True)
def sparse_values(seed, stream, cauchy, ids, idx, scale):
    """(len(ids), m) float64: the dense map's ``W[i, j]`` at each (feature, support index)."""
    skey = stream_key(np.uint64(seed), np.uint64(stream))
    k, m = idx.shape
    vals = np.empty((k, m))
    for c in range(k):
        key = index_key(skey, np.uint64(ids[c]))
        for r in range(m):
            i = np.uint64(idx[c, r])
            if cauchy:
                vals[c, r] = scale * np.tan(np.pi * (unit64(bits(key, i)) - 0.5))
            else:
                u1 = unit64(bits(key, np.uint64(2) * i))
                u2 = unit64(bits(key, np.uint64(2) * i + np.uint64(1)))
                vals[c, r] = scale * (np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2))
    return vals


@njit(nogil=True, cache=True)
def _project_row(x, idx, vals, out_row):
    k, m = idx.shape
    for c in range(k):
        acc = 0.0
        for t in range(m):
            acc += vals[c, t] * x[idx[c, t]]
        out_row[c] = acc


#: Rows per pass of :func:`project_dense`: their transposed block (d x 64 float64) stays in L2
#: (64 measured fastest of 32, 64, 128 at d = 784).
ROWS_PER_PASS = 64


@njit(nogil=True, cache=True)
def project_dense(X, idx, vals, out):
    """``out[r, c] = sum_t vals[c, t] X[r, idx[c, t]]`` (summed in float64, in support order).

    Rows are processed in passes of :data:`ROWS_PER_PASS`, transposed, so that each term is an
    axpy over the pass's rows (SIMD); every sum has the same terms in the same order as
    :func:`project_csr`'s, so dense and CSR input give the same bits.
    """
    n, d = X.shape
    k, m = idx.shape
    xt = np.empty((d, ROWS_PER_PASS))
    acc = np.empty(ROWS_PER_PASS)
    for r0 in range(0, n, ROWS_PER_PASS):
        nb = min(ROWS_PER_PASS, n - r0)
        for r in range(nb):
            for i in range(d):
                xt[i, r] = X[r0 + r, i]
        for c in range(k):
            acc[:nb] = 0.0
            for t in range(m):
                v = vals[c, t]
                col = xt[idx[c, t]]
                for r in range(nb):
                    acc[r] += v * col[r]
            for r in range(nb):
                out[r0 + r, c] = acc[r]


@njit(nogil=True, cache=True)
def project_csr(data, indices, indptr, d, idx, vals, out):
    """As :func:`project_dense` for CSR rows: each row is scattered into a dense buffer, so the
    sums are bitwise those of the dense input (sorted, unique indices: a validated block)."""
    x = np.zeros(d)
    for r in range(out.shape[0]):
        for p in range(indptr[r], indptr[r + 1]):
            x[indices[p]] = data[p]
        _project_row(x, idx, vals, out[r])
        for p in range(indptr[r], indptr[r + 1]):
            x[indices[p]] = 0.0


class SparseFrequencies:
    """The (d, k) frequency matrix of a sparse map as per-feature supports and values.

    ``projection(X)`` is ``X @ W`` in O(n k m) instead of O(n k d).
    """

    def __init__(self, idx: np.ndarray, vals: np.ndarray, d: int):
        self.idx, self.vals, self.d = idx, vals, int(d)

    def project(self, X, dtype, out=None) -> np.ndarray:
        import scipy.sparse as sp

        if out is None:  # each float64 sum rounded once, into out's dtype
            out = np.empty((X.shape[0], self.idx.shape[0]), dtype=dtype)
        if sp.issparse(X):
            project_csr(X.data, X.indices, X.indptr, self.d, self.idx, self.vals, out)
        else:
            project_dense(np.ascontiguousarray(X), self.idx, self.vals, out)
        return out
