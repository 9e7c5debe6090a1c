"""DartMinHash (Christiani 2020, arXiv 2005.11547): k weighted minhashes of a nonnegative vector
in expected O(k log k + nnz) time, for ``GCWS(sampler="dart")`` on the sign-split vector.

The dart process
----------------
Darts fall on ``(element s, weight w >= 0, rank r >= 0)`` as a Poisson process of intensity
``t`` per unit of ``w x r`` area, for every element. A dart hits a vector x~ when ``w < x~_s``.
Each dart also carries a 64-bit id word; its high 32 bits pick one of k buckets. The sample of
hash j is the hitting dart of bucket j with the lowest rank. For two vectors, the first dart of
bucket j under the union of their areas lies under both with probability
``sum_s min(x~_s, y~_s) / sum_s max(x~_s, y~_s)``: the full samples collide with probability
exactly the min-max kernel of the split vectors, i.e. GMM (0/0: two empty rows collide).

A *sample* is that dart's id word; the b-bit code is its lowest b bits, so two rows' codes agree
with probability ``GMM + (1 - GMM) 2**-b`` exactly (the bits of different darts are
independent). ``GCWS.sample`` also reports the dart's split index s.

Consistency: a dyadic grid of cells
-----------------------------------
Every dart is a pure function of the seed and its cell, so any process finds the same darts.
For element s, region ``(nu, rho)`` is the weight band ``[(2**nu - 1) / t, (2**(nu+1) - 1) / t)``
times the rank band ``[2**rho - 1, 2**(rho+1) - 1)``, cut into ``2**rho x 2**nu`` cells
(a, b) of area ``1 / t``; a cell holds Poisson(1) darts, uniform in it. With our counter hash
(:mod:`dask_kernels.rng`, stream ``STREAM_DART`` of the map's seed):

* ``ekey  = index_key(stream_key(seed, STREAM_DART), s)``
* ``rkey  = index_key(ekey, nu * 2**16 + rho)``,  ``ckey = index_key(rkey, a * 2**32 + b)``
* the cell's dart count: Poisson(1) by inversion of ``unit64(ckey)``
* dart q: word ``d = bits(ckey, 2q + 1)`` gives the rank ``r0 + dr ((d >> 16) + 1/2) 2**-48`` and
  is the dart's id (its lowest 16 bits, the code bits, are not part of the rank); word
  ``h = bits(ckey, 2q + 2)`` gives the weight ``w0 + dw (lo32(h) + 1/2) 2**-32`` and the bucket
  ``(hi32(h) * k) >> 32``. Cell (a, b) of region (nu, rho) starts at weight
  ``w0 = (2**nu - 1) / t + a dw`` and rank ``r0 = 2**rho - 1 + b dr``, ``dw = 2**(nu-rho) / t``,
  ``dr = 2**(rho-nu)`` (tables of IEEE quotients, see :func:`grid_tables`).

Units: the weights are multiplied by ``2**-e`` (ranks, in effect, by ``2**e``), e fitted once
and kept in the spec (:func:`rank_scale_log2`); below, w and x~ are in these units.

Rounds: the vector only visits cells that can hold a hit with rank below
``M = theta / ||x~||_1`` (``t * theta`` hits expected), ``t = ceil(k ln k + 2k)`` as in the
reference implementation, so all k buckets fill with probability about ``1 - e**-2``. If a bucket
stays empty, the next round doubles theta and looks again. Darts never depend on the round (only
how far we look), so the sample is the same whatever the number of rounds: the first dart of
each bucket over the whole process.

Domain: rows whose split l1 norm lies outside ``[2**-800, 2**800]`` are refused (the rank
window would overflow); any nonzero value inside it is fine, at any index below 2**31.
"""

import math

import numpy as np
from numba import njit

from ..rng import bits, hi32, index_key, lo32, register_stream, unit64

STREAM_DART = register_stream("gcws.dart", 2)
L1_MIN = 2.0**-800
L1_MAX = 2.0**800
#: Bound on the exponent of the rank scale (see :func:`rank_scale_log2`).
SCALE_LOG2_MAX = 100
#: Poisson(1) cumulative distribution, P[N <= p] for p = 0, 1, ... (literals: no libm at run time).
_POISSON_CDF = np.array(
    [
        0.36787944117144233, 0.7357588823428847, 0.9196986029286058, 0.9810118431238463,
        0.9963401531726563, 0.9994058151824183, 0.999916758850712, 0.9999897508033253,
        0.999998874797402, 0.9999998885745216, 0.9999999899522336, 0.9999999991683892,
        0.9999999999364022, 0.9999999999954802, 0.9999999999997, 0.9999999999999813,
        0.9999999999999989, 0.9999999999999999, 1.0,
    ]
)  # fmt: skip
_MAX_ROUNDS = 64
_TWO_M48 = 2.0**-48
_TWO_M32 = 2.0**-32
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def rank_scale_log2(l1_norms):
    """The grid scale's exponent e for rows of these split l1 norms: ``round(log2(median))``.

    The kernels throw darts at ``(w 2**-e, r 2**e)``: an area-preserving change of units (exact
    in floating point), so the dart process and the collision law are the same for any fixed e,
    but the grid's cost is not. With the median row's l1 norm near 1 in these units its rank
    window is about 1 and its cells come from about ``log2(hits per element) + 1`` weight bands
    and one rank band; a row far from the median only visits more, emptier regions.
    """
    l1 = np.asarray(l1_norms, dtype=np.float64)
    l1 = l1[(l1 > 0) & np.isfinite(l1)]
    if l1.size == 0:
        return 0
    e = int(np.round(np.log2(np.median(l1))))
    return int(np.clip(e, -SCALE_LOG2_MAX, SCALE_LOG2_MAX))


def dart_count(k):
    """Expected hitting darts per row in the first round: ``ceil(k ln k + 2k)`` (2 for k = 1)."""
    return max(int(math.ceil(k * math.log(k) + 2 * k)), 2)


#: Exponent offset of the power-of-two tables (2**e / t and 2**e for e in [-_E, _E]).
_E = 1022


def grid_tables(t):
    """``(band, step, pow2)``: ``band[nu] = (2**nu - 1) / t`` (weight band starts),
    ``step[e + _E] = 2**e / t`` (cell widths) and ``pow2[e + _E] = 2**e`` (cell heights).
    IEEE divisions, computed once per k: the kernel has no division in its loops."""
    band = np.array([(math.ldexp(1.0, nu) - 1.0) / t for nu in range(_E)])
    step = np.array([math.ldexp(1.0, e) / t for e in range(-_E, _E + 1)])
    pow2 = np.array([math.ldexp(1.0, e) for e in range(-_E, _E + 1)])
    return band, step, pow2


@njit(nogil=True, cache=True)
def _throw(ekey, w, M, k, band, step, pow2, cdf, s, best_rank, best_id, best_s, filled):
    """Every dart of element s (weight w) with rank below M: keep each bucket's lowest rank.

    Region (nu, rho), cell (a, b): weight from ``band[nu] + a * dw``, ``dw = 2**(nu - rho) / t``;
    rank from ``2**rho - 1 + b * dr``, ``dr = 2**(rho - nu)``. Rank is tested first: in the
    low weight bands a cell is much taller than the rank window, and most darts stop there.
    """
    nu = 0
    pw = 1.0  # 2**nu
    while band[nu] < w:
        W = band[nu]
        rho = 0
        pr = 1.0  # 2**rho
        while pr - 1.0 < M:
            R = pr - 1.0
            dw = step[nu - rho + _E]
            dr = pow2[rho - nu + _E]
            rkey = index_key(ekey, np.uint64(nu * 65536 + rho))
            a = 0
            w0 = W
            while a < pr and w0 < w:
                b = 0
                r0 = R
                while b < pw and r0 < M:
                    ckey = index_key(rkey, (np.uint64(a) << np.uint64(32)) | np.uint64(b))
                    u = unit64(ckey)  # the cell's key is itself a uniform word: its dart count
                    n_darts = (u > cdf[0]) + (u > cdf[1]) + (u > cdf[2]) + (u > cdf[3])
                    if n_darts == 4:
                        while u > cdf[n_darts]:
                            n_darts += 1
                    for q in range(n_darts):
                        c = np.uint64(2 * q)
                        dart = bits(ckey, c + np.uint64(1))
                        rank = r0 + dr * ((np.float64(dart >> np.uint64(16)) + 0.5) * _TWO_M48)
                        if rank < M:
                            h = bits(ckey, c + np.uint64(2))
                            if w0 + dw * ((np.float64(lo32(h)) + 0.5) * _TWO_M32) < w:
                                j = np.int64((np.uint64(hi32(h)) * np.uint64(k)) >> np.uint64(32))
                                if rank < best_rank[j]:
                                    filled += best_rank[j] == np.inf
                                    best_rank[j] = rank
                                    best_id[j] = dart
                                    best_s[j] = s
                    b += 1
                    r0 = R + b * dr
                a += 1
                w0 = W + a * dw
            pr *= 2.0
            rho += 1
        pw *= 2.0
        nu += 1
    return filled


@njit(nogil=True, cache=True)
def _dart_row(skey, split, weight, nnz, l1, scale, k, band, step, pow2, cdf, best_rank, best_id, best_s):
    """The k samples of one row given its nonzero split entries; False if l1 is out of range."""
    best_rank[:] = np.inf
    best_id[:] = _ALL_ONES
    best_s[:] = -1
    if nnz == 0:
        return True
    if not (l1 >= L1_MIN and l1 <= L1_MAX):
        return False
    theta = 1.0
    for _ in range(_MAX_ROUNDS):
        best_rank[:] = np.inf
        filled = 0
        M = theta / l1
        for p in range(nnz):
            ekey = index_key(skey, np.uint64(split[p]))
            filled = _throw(ekey, weight[p], M, k, band, step, pow2, cdf, split[p], best_rank, best_id, best_s, filled)
        if filled == k:
            return True
        theta *= 2.0
    return False


@njit(nogil=True, cache=True, inline="always")
def _emit(row, best_id, best_s, mask, codes_only, code_out, s_out, id_out):
    for j in range(best_id.size):
        if codes_only:
            code_out[row, j] = best_id[j] & mask
        else:
            s_out[row, j] = best_s[j]
            id_out[row, j] = np.int64(best_id[j])


@njit(nogil=True, cache=True)
def dart_dense(X, center, skey, scale, k, band, step, pow2, mask, codes_only, code_out, s_out, id_out):
    """Samples of a dense block (``X - center`` sign-split). Returns the first row whose l1 norm
    is out of range, or -1."""
    n, d = X.shape
    split = np.empty(d, dtype=np.int64)
    weight = np.empty(d)
    best_rank = np.empty(k)
    best_id = np.empty(k, dtype=np.uint64)
    best_s = np.empty(k, dtype=np.int64)
    for row in range(n):
        nnz = 0
        l1 = 0.0
        for i in range(d):
            v = np.float64(X[row, i]) - center[i]
            if v != 0.0:
                split[nnz] = 2 * i + (0 if v > 0.0 else 1)
                weight[nnz] = abs(v) * scale  # a power of two: exact
                l1 += weight[nnz]
                nnz += 1
        if not _dart_row(skey, split, weight, nnz, l1, scale, k, band, step, pow2, _POISSON_CDF, best_rank, best_id, best_s):
            return row
        _emit(row, best_id, best_s, mask, codes_only, code_out, s_out, id_out)
    return -1


@njit(nogil=True, cache=True)
def dart_csr(data, indices, indptr, skey, scale, k, band, step, pow2, mask, codes_only, code_out, s_out, id_out):
    """Samples of a canonical CSR block (sorted, unique indices); as :func:`dart_dense`."""
    width = 0
    for row in range(indptr.size - 1):
        width = max(width, indptr[row + 1] - indptr[row])
    split = np.empty(width, dtype=np.int64)
    weight = np.empty(width)
    best_rank = np.empty(k)
    best_id = np.empty(k, dtype=np.uint64)
    best_s = np.empty(k, dtype=np.int64)
    for row in range(indptr.size - 1):
        nnz = 0
        l1 = 0.0
        for p in range(indptr[row], indptr[row + 1]):
            v = np.float64(data[p])
            if v != 0.0:
                split[nnz] = 2 * np.int64(indices[p]) + (0 if v > 0.0 else 1)
                weight[nnz] = abs(v) * scale
                l1 += weight[nnz]
                nnz += 1
        if not _dart_row(skey, split, weight, nnz, l1, scale, k, band, step, pow2, _POISSON_CDF, best_rank, best_id, best_s):
            return row
        _emit(row, best_id, best_s, mask, codes_only, code_out, s_out, id_out)
    return -1
