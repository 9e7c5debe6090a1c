"""Numba kernels of the similarity search: band keys, bucket pairs, code agreement, exact GMM of pairs
(dense or CSR rows).

Band key of row i, band j: start from ``index_key(stream_key(0, STREAM_BAND), j)`` and fold in the
band's codes one by one, ``h = mix64(h ^ ((code + 1) * C_COUNTER))`` (:mod:`dask_kernels.rng`'s
SplitMix64 finalizer): a pure function of the band number and its codes, the same in every
process (never Python's ``hash``). Including the band number keeps two bands with equal codes
apart. The row key (all codes, band number ``2**32``) orders the members of an oversized bucket.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..exact.gmm import _gmm_csr_rows, _min_max_terms, _ratio
from ..rng import C_COUNTER, index_key, mix64, register_stream, stream_key

STREAM_BAND = register_stream("similarity.band", 81)
#: Band number of the whole-row key.
ROW_BAND = 2**32


@njit(nogil=True, cache=True)
def _fold(h, codes, i, start, stop):
    for c in range(start, stop):
        h = mix64(h ^ ((np.uint64(codes[i, c]) + np.uint64(1)) * C_COUNTER))
    return h


@njit(nogil=True, cache=True)
def band_keys(codes, bands, rows):
    """(n, bands) uint64: the key of each band of ``rows`` codes of each row."""
    n = codes.shape[0]
    skey = stream_key(0, STREAM_BAND)
    out = np.empty((n, bands), np.uint64)
    for j in range(bands):
        h0 = index_key(skey, j)
        for i in range(n):
            out[i, j] = _fold(h0, codes, i, j * rows, (j + 1) * rows)
    return out


@njit(nogil=True, cache=True)
def row_keys(codes):
    """(n,) uint64: one key of all the codes of each row (equal codes, equal keys)."""
    n, k = codes.shape
    h0 = index_key(stream_key(0, STREAM_BAND), ROW_BAND)
    out = np.empty(n, np.uint64)
    for i in range(n):
        out[i] = _fold(h0, codes, i, 0, k)
    return out


@njit(nogil=True, cache=True)
def _bucket_pairs(key, side, row, cap, cross, out_i, out_j, write):
    """Candidate pairs of the buckets of ``key`` (sorted by key, then row key, side and row).

    A bucket of up to ``cap + 1`` members gives all its pairs; a larger one pairs each member
    with the next ``cap`` members only (O(m cap) instead of O(m**2)). Self join: pairs ``(i, j)``
    with ``i < j``; ``cross``: pairs of an A row (side 0) and a B row (side 1), A first. Returns
    the number of pairs (written to ``out_i``/``out_j`` when ``write``)."""
    n = key.size
    m = 0
    start = 0
    while start < n:
        stop = start + 1
        while stop < n and key[stop] == key[start]:
            stop += 1
        big = stop - start > cap + 1
        for a in range(start, stop):
            last = min(stop, a + 1 + cap) if big else stop
            for b in range(a + 1, last):
                if cross:
                    if side[a] == side[b]:
                        continue
                    ia, ib = (row[a], row[b]) if side[a] == 0 else (row[b], row[a])
                else:
                    ia, ib = min(row[a], row[b]), max(row[a], row[b])
                    if ia == ib:
                        continue
                if write:
                    out_i[m] = ia
                    out_j[m] = ib
                m += 1
        start = stop
    return m


def bucket_pairs(key, side, row, cap, cross):
    """``(i, j)`` int64 arrays of :func:`_bucket_pairs`."""
    empty = np.empty(0, np.int64)
    n = _bucket_pairs(key, side, row, cap, cross, empty, empty, False)
    out_i, out_j = np.empty(n, np.int64), np.empty(n, np.int64)
    _bucket_pairs(key, side, row, cap, cross, out_i, out_j, True)
    return out_i, out_j


@njit(nogil=True, cache=True)
def agreement(codes_a, codes_b, ia, ib):
    """Number of equal codes of rows ``codes_a[ia[p]]`` and ``codes_b[ib[p]]``, per pair p."""
    out = np.empty(ia.size, np.int64)
    k = codes_a.shape[1]
    for p in range(ia.size):
        m = 0
        for c in range(k):
            m += codes_a[ia[p], c] == codes_b[ib[p], c]
        out[p] = m
    return out


@njit(nogil=True, cache=True)
def gmm_pairs(xa, xb, ia, ib):
    """Exact GMM of dense rows ``xa[ia[p]]`` and ``xb[ib[p]]``, per pair p."""
    out = np.empty(ia.size)
    for p in range(ia.size):
        num = 0.0
        den = 0.0
        for c in range(xa.shape[1]):
            lo, hi = _min_max_terms(xa[ia[p], c], xb[ib[p], c])
            num += lo
            den += hi
        out[p] = _ratio(num, den)
    return out


@njit(nogil=True, cache=True)
def gmm_pairs_csr(xd, xi, xp, yd, yi, yp, ia, ib):
    """Exact GMM of CSR rows ``x[ia[p]]`` and ``y[ib[p]]`` (sorted, unique column indices), per pair p."""
    out = np.empty(ia.size)
    for p in range(ia.size):
        a, b = ia[p], ib[p]
        out[p] = _gmm_csr_rows(xd, xi, xp[a], xp[a + 1], yd, yi, yp[b], yp[b + 1])
    return out
