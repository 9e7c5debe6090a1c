"""DartMinHash (Christiani 2020, arXiv 2005.11547): k weighted minhashes of a nonnegative vector
in expected O(k log k + nnz) time, for ``GCWS(sampler="dart")`` on the sign-split vector.

The dart process (scheme 2)
---------------------------
Darts fall on ``(element s, weight w >= 0, rank r >= 0)`` as a Poisson process of intensity
``t = ceil(k ln k + 2k)`` per unit of ``w x r`` area, for every element; w and x~ are in the
map's fitted units (the weights times ``dart_scale``, see :func:`fit_scale`; any fixed scale
gives the same collision law, it only moves the cost). A dart hits a
vector x~ when ``w < x~_s``. The sample of hash j is the hitting dart of bucket j with the lowest
rank. For two vectors, the first dart of bucket j under the union of their areas lies under both
with probability ``sum_s min(x~_s, y~_s) / sum_s max(x~_s, y~_s)``: the full samples collide with
probability the min-max kernel of the split vectors, i.e. GMM (0/0: two empty rows collide).

Layers: the rank axis is cut into layer 0 = ``[0, 1)`` and layer l = ``[2**(l-1), 2**l)``
(l >= 1). In layer l, element s's darts are a Poisson process along the weight axis of rate
``t h_l`` (h_l the layer's height), each with a rank uniform in the layer; they are generated in
increasing weight, so a vector pays for the darts under ``x~_s`` plus one (the first above it),
whatever the weight. With our counter hash (:mod:`dask_kernels.rng`, stream ``STREAM_DART`` of
the map's seed), ``ekey = index_key(stream_key(seed, STREAM_DART), s)`` and dart q of layer l is
the word ``h = bits(ekey, l * 2**40 + q)``:

* its weight: ``u = (top 23 bits of h + 1/2) 2**-23`` and ``U_q = u_0 u_1 ... u_q`` (float64
  products), so ``-ln U_q`` is a sum of q + 1 standard exponentials and the weight is
  ``w_q = -ln(U_q) / (t h_l)``. The dart is under x exactly when ``U_q > exp(-x t h_l)``: one
  ``exp`` per element and layer, none per dart (``U`` and the threshold's exponent are rescaled
  together by ``2**256`` before U could underflow);
* its rank key is ``l * 2**41 + (h mod 2**41)``: ranks compare as these integers (the position in
  the layer is ``(h mod 2**41) / 2**41``), so no float rank is ever formed;
* its bucket is ``j = ((h mod 2**41) * k) >> 41``, the top bits of its position in the layer.
  Buckets depend on the rank alone, never on (s, w), so each bucket's darts are again a Poisson
  process uniform over the area and the collision law above holds per bucket; the buckets are
  independent (disjoint thinnings).

A row visits layers 0, 1, 2, ... until every bucket holds a dart; later layers only hold higher
ranks, so the sample is the first dart of each bucket over the whole process, whatever the number
of layers visited. The fitted scale gives the fit data's largest row split l1 norm 1.25: a row of
norm ``lam`` expects ``t lam`` hitting darts in layer 0 and fills all k buckets there with
probability about ``1 - e**-2`` at ``lam = 1``; a row of norm ``lam < 1`` visits more layers (at
most twice the darts it needs); a row of norm ``lam > 1`` pays ``t lam`` darts. Rows are refused
outside ``[LAM_MIN, LAM_MAX]`` (2**-800 to 2**10 in these units), naming the row.

A *sample* is the winning dart's id word ``bits(index_key(stream key, 2**63), rank key)``, a
counter hash that took no part in the selection (a bijection of the key: equal ids are the same
dart, up to two darts of one bucket and layer sharing 41 - log2(k) rank bits), so its bits are
independent of which dart won; the b-bit code is its lowest b bits and two rows' codes agree with
probability ``GMM + (1 - GMM) 2**-b``. ``GCWS.sample`` also reports the dart's split index s.

The dart table (a cache: the same darts, the same codes)
-------------------------------------------------------
For input of moderate dimension (``GCWS(table=...)``, "auto": up to 16 MiB), every split
index's first :func:`table_depth` darts of layers 0 and 1 (32 for k = 256) are computed once
per map and process: their ``U_q`` (float64), ``-ln U_q`` (float32) and rank keys. A row's
element then costs one vectorized count of the ``-ln U_q`` below ``a = x~_s t h_l`` (with a
margin far beyond the rounding errors; a dart inside the margin takes the walk's exact test
``U_q > exp(-a)``) and one bucket update per hitting dart: no hash and no ``exp``; an element
whose darts run past the table is hashed on from there, as without it. A row that leaves at most
8 buckets empty after layer 0 (about one in seven near the fit's norm) reads in layer 1 only
those buckets' darts, from a bucket index of the table. On dense D = 784 rows (k = 256, 148
nonzeros) a row throws about 2,200 darts.

Scheme 1 (a two-dimensional dyadic grid of Poisson(1) cells, state key ``rank_scale_log2``)
visited about 1.5 times as many cells and darts per row at two to three hashes each; its specs
are refused by :func:`check_scheme` with a message saying so (its codes would differ).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..rng import bits, index_key, register_stream

STREAM_DART = register_stream("gcws.dart", 2)
#: Version of the dart process above, recorded in the spec's state as ``dart_scheme``.
DART_SCHEME = 2
#: Split l1 norm of the fit data's largest row in fitted units.
FIT_NORM = 1.25
#: Accepted split l1 norms in fitted units.
LAM_MIN = 2.0**-800
LAM_MAX = 2.0**10
#: Bounds of the fitted scale (beyond them no finite row has a norm inside [LAM_MIN, LAM_MAX]).
SCALE_MIN = 2.0**-1000
SCALE_MAX = 2.0**1000
#: Largest k: bucket = (41-bit position * k) >> 41 fits 64 bits, leaving 21 rank bits in a bucket.
K_MAX = 2**20
#: Layers a row may visit: a row of norm LAM_MIN fills its buckets by layer ~810.
N_LAYERS = 1024
_MASK41 = np.uint64(2**41 - 1)
_S40 = np.uint64(40)
_S41 = np.uint64(41)
#: Index of the id key in the dart stream (split indices are below 2**32).
_ID_INDEX = np.uint64(2**63)
#: Darts hashed together (unrolled: their multiplies overlap; 16 measured 7 % slower on dense rows).
_CHUNK = 8
_EMPTY = np.uint64(2**64 - 1)
_TWO_M23 = 2.0**-23
_TWO_M256 = 2.0**-256
_TWO_256 = 2.0**256
_LN_TWO_256 = 256 * math.log(2.0)
#: Layer 1 visits only the empty buckets' darts (the table's bucket index) when at most this many
#: are empty (each costs a scan of its ~n_split * depth / k tabled darts); more, the full pass.
_FEW_EMPTY = 8
#: Layers the dart table holds (0 and 1: a row at 80 % of the fit's largest needs layer 1 about
#: one time in seven).
TABLE_LAYERS = 2


def fit_scale(l1_norms) -> float:
    """The fitted unit of weight: ``FIT_NORM / max(split l1 norm)`` over the fit rows with a
    positive, finite norm (1.0 if none), clipped to ``[SCALE_MIN, SCALE_MAX]``.

    A row of norm ``lam`` in these units expects ``t lam`` hitting darts in layer 0. A fit row
    at 80 % of the largest has ``lam = 1``: it fills all k buckets in layer 0 with probability
    about ``1 - e**-2``; smaller rows visit about ``log2(1 / lam) + 1`` layers (at most twice the
    darts they need), larger ones pay ``t lam`` (at most 1.25 t for fit rows; a later row is
    accepted up to ``LAM_MAX``, so the cost stays bounded whatever the spread of the fit data,
    where the median as the unit would make rows far above it slow). On dense D = 784 rows 1.25
    measured 8 % faster than 1.0 (fewer rows need a second layer).
    """
    l1 = np.asarray(l1_norms, dtype=np.float64)
    l1 = l1[(l1 > 0) & np.isfinite(l1)]
    scale = FIT_NORM / float(l1.max()) if l1.size else 1.0
    return float(min(max(scale, SCALE_MIN), SCALE_MAX))


def check_scheme(state, key="feature-map spec['state']"):
    """The dart scale of a GCWS(sampler="dart") spec state, or ValueError naming the key."""
    if "rank_scale_log2" in state and "dart_scheme" not in state:
        raise ValueError(
            f"{key}: DartMinHash scheme 1 ('rank_scale_log2', written by dask_kernels before the "
            f"layered dart process) is no longer implemented; this version computes scheme {DART_SCHEME}, "
            f"whose codes differ: refit GCWS(sampler='dart') and rebuild stores made with it"
        )
    scheme = state.get("dart_scheme")
    if scheme != DART_SCHEME or isinstance(scheme, bool):
        raise ValueError(f"{key}['dart_scheme']: {scheme!r} is not a DartMinHash scheme this version implements "
                         f"({DART_SCHEME})")
    scale = state.get("dart_scale")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not SCALE_MIN <= scale <= SCALE_MAX:
        raise ValueError(f"{key}['dart_scale']: {scale!r} is not a number in [2**-1000, 2**1000]")
    return float(scale)


def dart_count(k):
    """The dart intensity t: expected hitting darts of a unit-norm row in layer 0,
    ``ceil(k ln k + 2k)`` (2 for k = 1)."""
    return max(int(math.ceil(k * math.log(k) + 2 * k)), 2)


def layer_rates(k):
    """``t h_l`` for every layer l (exact: an integer times a power of two): the expected darts
    per unit of weight in layer l."""
    t = float(dart_count(k))
    return np.array([t * (1.0 if layer == 0 else math.ldexp(1.0, layer - 1)) for layer in range(N_LAYERS)])


@njit(nogil=True, cache=True, inline="always")
def _drop(key, p, uk, track, best_key, best_p):
    """Dart ``key`` (rank key) of element p into its bucket, kept if its rank is the lowest."""
    j = ((key & _MASK41) * uk) >> _S41  # unsigned: no negative-index wrap
    old = best_key[j]
    best_key[j] = min(key, old)
    if track:  # sample(): also the winner's element (ties keep the earlier one)
        best_p[j] = p if key < old else best_p[j]


@njit(nogil=True, cache=True, inline="always")
def _bounds(a):
    """float32 bounds around ``a``: a tabled dart whose ``-ln U`` is below the first is surely
    under the element (``U > exp(-a)``), above the second surely not. The margin
    ``2**-20 (a + 1)`` is far beyond the float32 rounding of ``-ln U`` (2**-24 relative) and the
    float64 ``exp`` and ``log`` errors; rounding the bounds to float32 moves them by under a
    sixteenth of it."""
    margin = (a + 1.0) * 2.0**-20
    return np.float32(a - margin), np.float32(a + margin)


@njit(nogil=True, cache=True, inline="always")
def _tabled_hits(a, neg_log_u, u):
    """How many of an element's tabled darts lie under it: those with ``U_q > exp(-a)``.

    ``-ln U_q`` (float32, nondecreasing, +inf past the end) against :func:`_bounds` decides
    without an ``exp`` unless a dart is within the margin: then the walk's exact float64 test.
    """
    lo, hi = _bounds(a)
    hits = 0
    for q in range(neg_log_u.size):  # branch-free: LLVM vectorizes it
        hits += 1 if neg_log_u[q] < lo else 0
    if hits == neg_log_u.size or not neg_log_u[hits] <= hi:
        return hits  # the next dart is surely above x
    T = np.exp(-a)  # a near tie (about one element in 30000): the walk's exact test
    while hits < neg_log_u.size and u[hits] > T:
        hits += 1
    return hits


@njit(nogil=True, cache=True)
def _layer(skey, split, weight, nnz, layer, rate, k, track, best_key, best_p, hbuf, table):
    """Every dart of layer ``layer`` under the row's elements; keeps each bucket's lowest key.

    Dart q is under ``x`` when ``U_q = u_0 ... u_q > exp(-x t h)`` (no logarithm per dart).
    An element's first darts come from the dart table when it holds them (see
    :func:`dart_table`: no hash, no ``exp``); the rest are hashed ``_CHUNK`` at a time in a
    loop without branches that LLVM vectorizes, and the walk then only multiplies, compares and
    updates. ``U`` is renormalized by ``2**256`` (the threshold's exponent with it) after a
    chunk that took it below ``2**-256``.
    """
    tab_nlu, tab_key, tab_u, tab_n = table[:4]
    lbase = np.uint64(layer) << _S41
    cbase = np.uint64(layer) << _S40
    uk = np.uint64(k)
    tabled = layer < tab_n.shape[0]
    for p in range(nnz):
        a = weight[p] * rate  # expected darts under x in this layer
        s = split[p]
        if tabled and s < tab_n.shape[1]:
            hits = _tabled_hits(a, tab_nlu[layer, s], tab_u[layer, s])
            keys = tab_key[layer, s]
            for q in range(hits):
                _drop(keys[q], p, uk, track, best_key, best_p)
            n_tab = tab_n[layer, s]
            if hits < n_tab:
                continue
            U = tab_u[layer, s, n_tab - 1]  # every tabled dart hit: hash on from there
            q0 = n_tab
            T = np.exp(-a)
            if U < _TWO_M256:
                U *= _TWO_256
                a -= _LN_TWO_256
                T = np.exp(-a)
        else:
            T = np.exp(-a)
            U = 1.0
            q0 = 0
        ek = index_key(skey, np.uint64(s))
        done = False
        while not done:
            for i in range(_CHUNK):
                hbuf[i] = bits(ek, cbase | np.uint64(q0 + i))
            for i in range(_CHUNK):
                h = hbuf[i]
                U *= (np.float64(h >> _S41) + 0.5) * _TWO_M23
                if not U > T:
                    done = True
                    break
                _drop(lbase | (h & _MASK41), p, uk, track, best_key, best_p)
            q0 += _CHUNK
            if U < _TWO_M256:  # long runs: keep U normal, scale the threshold with it
                U *= _TWO_256
                a -= _LN_TWO_256
                T = np.exp(-a)


@njit(nogil=True, cache=True)
def _layer_into(nnz, split, weight, rate, k, track, best_key, best_p, table, empty, n_empty, w_of, p_of):
    """Layer 1 when only the ``n_empty`` buckets ``empty`` lack a dart (the others hold lower
    keys already) and no element's darts run past the table: only those buckets' tabled darts,
    from the table's bucket index, each tested against its element's weight (``w_of``, by split
    index; zero for elements not in the row). A bucket receives its darts in the full pass's
    order (split index, then q), so ties resolve as there."""
    tab_u = table[2]
    b_start, b_s, b_q, b_f, b_key = table[4:9]
    uk = np.uint64(k)
    for p in range(nnz):
        w_of[split[p]] = weight[p]
        p_of[split[p]] = p
    for e in range(n_empty):
        j = empty[e]
        for i in range(b_start[j], b_start[j + 1]):
            s = b_s[i]
            w = w_of[s]
            if w == 0.0:  # not in the row
                continue
            a = w * rate
            lo, hi = _bounds(a)
            f = b_f[i]
            if f < lo or (not f > hi and tab_u[1, s, b_q[i]] > np.exp(-a)):
                _drop(b_key[i], p_of[s], uk, track, best_key, best_p)
    for p in range(nnz):
        w_of[split[p]] = 0.0


@njit(nogil=True, cache=True)
def _runs_past_table(nnz, split, weight, rate, table):
    """Whether some element's layer-1 darts may run past the table (its last tabled dart is
    not surely above it): then layer 1 takes the full pass."""
    last_f = table[9]
    for p in range(nnz):
        s = split[p]
        if s >= last_f.size or not last_f[s] > _bounds(weight[p] * rate)[1]:
            return True
    return False


@njit(nogil=True, cache=True)
def _dart_table(skey, n_split, layers, depth, tab_nlu, tab_key, tab_u, tab_n):
    for layer in range(layers):
        lbase = np.uint64(layer) << _S41
        cbase = np.uint64(layer) << _S40
        for s in range(n_split):
            ek = index_key(skey, np.uint64(s))
            U = 1.0
            n_tab = depth
            for q in range(depth):
                h = bits(ek, cbase | np.uint64(q))
                U *= (np.float64(h >> _S41) + 0.5) * _TWO_M23
                tab_u[layer, s, q] = U
                tab_nlu[layer, s, q] = np.float32(-np.log(U))
                tab_key[layer, s, q] = lbase | (h & _MASK41)
                if q % _CHUNK == _CHUNK - 1 and U < _TWO_M256:  # the walk renormalizes here
                    n_tab = q + 1
                    break
            tab_n[layer, s] = n_tab
            for q in range(n_tab, depth):  # never counted as hits
                tab_nlu[layer, s, q] = np.inf
                tab_u[layer, s, q] = 0.0
                tab_key[layer, s, q] = _EMPTY


@njit(nogil=True, cache=True)
def _bucket_index(k, tab_nlu, tab_key, tab_n, b_start, b_s, b_q, b_f, b_key, last_f):
    """Layer 1's tabled darts by bucket, then split index, then q (a counting sort)."""
    uk = np.uint64(k)
    n_split = tab_n.shape[1]
    b_start[:] = 0
    for s in range(n_split):
        last_f[s] = tab_nlu[1, s, tab_n[1, s] - 1]
        for q in range(tab_n[1, s]):
            b_start[np.int64((tab_key[1, s, q] & _MASK41) * uk >> _S41) + 1] += 1
    for j in range(k):
        b_start[j + 1] += b_start[j]
    fill = b_start[:k].copy()
    for s in range(n_split):
        for q in range(tab_n[1, s]):
            key = tab_key[1, s, q]
            j = (key & _MASK41) * uk >> _S41
            i = fill[j]
            b_s[i], b_q[i], b_f[i], b_key[i] = s, q, tab_nlu[1, s, q], key
            fill[j] = i + 1


def table_depth(k):
    """Darts per element and layer in the dart table: about ``t / 512`` (32 for k = 256), a
    multiple of ``_CHUNK`` in [16, 128]. An element holding up to about ``1 / 64`` of a unit-norm
    row's weight finds all its darts there (t / 148 on average for a row of 148 equal values)."""
    depth = _CHUNK * math.ceil(dart_count(k) / (64 * _CHUNK))
    return int(min(max(depth, 16), 128))


def table_nbytes(n_split, k):
    """Bytes of the dart table of ``n_split`` split indices for k hashes (at most)."""
    depth = table_depth(k)
    return TABLE_LAYERS * n_split * (depth * 20 + 8) + n_split * (depth * 28 + 4) + 8 * (k + 1)


def dart_table(skey, n_split, k, depth=None):
    """The first darts of every split index below ``n_split`` in layers 0 and 1, as the walk
    of :func:`_layer` computes them: ``(-ln U, rank key, U, count)``, with ``U[l, s, q]`` the
    product ``u_0 ... u_q`` (float64, bitwise the walk's), ``-ln U`` in float32 (what a row's
    scan reads; ``U`` only settles the rare near ties and continues the walk), ``key[l, s, q]``
    the dart's rank key and ``count[l, s]`` the darts kept: :func:`table_depth`, or fewer if
    ``U`` went below ``2**-256`` at a chunk's end (the walk renormalizes there; the table
    stops). Codes are the same with and without it; an element then costs a scan of its
    ``-ln U`` and one bucket update per hitting dart: no hash, no ``exp``. Layer 1 has layer
    0's rate (``h_1 = 1``). Then layer 1's bucket index (:func:`_bucket_index`: bucket starts,
    split index, q, ``-ln U`` and key of its tabled darts by bucket; each split index's last
    tabled ``-ln U``). ``depth`` (a multiple of 8) overrides :func:`table_depth` (tests)."""
    depth = table_depth(k) if depth is None else int(depth)
    shape = (TABLE_LAYERS, n_split, depth)
    tab = (np.empty(shape, dtype=np.float32), np.empty(shape, dtype=np.uint64), np.empty(shape),
           np.empty(shape[:2], dtype=np.int64))
    _dart_table(np.uint64(skey), n_split, TABLE_LAYERS, depth, *tab)
    n_darts = int(tab[3][1].sum())
    index = (np.empty(k + 1, dtype=np.int64), np.empty(n_darts, dtype=np.int64),
             np.empty(n_darts, dtype=np.int64), np.empty(n_darts, dtype=np.float32),
             np.empty(n_darts, dtype=np.uint64), np.empty(n_split, dtype=np.float32))
    _bucket_index(k, tab[0], tab[1], tab[3], *index)
    tab = tab + index
    for t in tab:
        t.setflags(write=False)
    return tab


def no_table():
    """The empty dart table (every element hashed)."""
    return (np.empty((0, 0, 0), dtype=np.float32), np.empty((0, 0, 0), dtype=np.uint64), np.empty((0, 0, 0)),
            np.empty((0, 0), dtype=np.int64), np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int64),
            np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32), np.empty(0, dtype=np.uint64),
            np.empty(0, dtype=np.float32))


@njit(nogil=True, cache=True)
def _dart_row(skey, split, weight, nnz, l1, k, rates, track, bufs, table):
    """The k winning darts of one row given its nonzero split entries; False if the row's norm
    is outside ``[LAM_MIN, LAM_MAX]``."""
    _, _, best_key, best_p, hbuf, empty, w_of, p_of = bufs
    best_key[:] = _EMPTY
    if nnz == 0:
        return True
    if not (l1 >= LAM_MIN and l1 <= LAM_MAX):
        return False
    n_empty = k
    for layer in range(N_LAYERS):
        if layer == 1 and n_empty <= _FEW_EMPTY and not _runs_past_table(nnz, split, weight, rates[1], table):
            _layer_into(nnz, split, weight, rates[1], k, track, best_key, best_p, table, empty, n_empty, w_of, p_of)
        else:
            _layer(skey, split, weight, nnz, layer, rates[layer], k, track, best_key, best_p, hbuf, table)
        n_empty = 0
        for j in range(k):  # branch-free: LLVM vectorizes it
            n_empty += 1 if best_key[j] == _EMPTY else 0
        if n_empty == 0:
            return True
        if layer == 0 and n_empty <= _FEW_EMPTY and w_of.size:
            e = 0
            for j in range(k):
                if best_key[j] == _EMPTY:
                    empty[e] = j
                    e += 1
    return False


@njit(nogil=True, cache=True)
def _buffers(width, k, n_split):
    """Per-block scratch: split indices, weights (``width``), best keys and elements (k), hashes,
    empty buckets (k), weights and positions by split index (the table's ``n_split``)."""
    return (np.empty(width, dtype=np.int64), np.empty(width), np.empty(k, dtype=np.uint64),
            np.empty(k, dtype=np.int64), np.empty(_CHUNK, dtype=np.uint64), np.empty(k, dtype=np.int64),
            np.zeros(n_split), np.empty(n_split, dtype=np.int64))


@njit(nogil=True, cache=True)
def _finish_row(row, nnz, skey, k, rates, table, mask, codes_only, bufs, code_out, s_out, id_out):
    """Darts and output of a row whose ``nnz`` split entries are in ``bufs``; False if its norm
    is out of range. A *sample* is the winning dart's id ``bits(idkey, rank key)``: one hash
    per bucket."""
    split, weight, best_key, best_p = bufs[:4]
    l1 = 0.0
    for p in range(nnz):  # after the compaction: no add chain through it; the CSR order
        l1 += weight[p]
    if not _dart_row(skey, split, weight, nnz, l1, k, rates, not codes_only, bufs, table):
        return False
    idkey = index_key(skey, _ID_INDEX)
    for j in range(k):
        dart_id = _EMPTY if nnz == 0 else bits(idkey, best_key[j])
        if codes_only:
            code_out[row, j] = dart_id & mask
        else:
            s_out[row, j] = -1 if nnz == 0 else split[best_p[j]]
            id_out[row, j] = np.int64(dart_id)
    return True


@njit(nogil=True, cache=True)
def dart_dense(X, center, skey, scale, k, rates, table, mask, codes_only, code_out, s_out, id_out):
    """Samples of a dense block (``X - center`` sign-split). Returns the first row whose norm is
    out of range, or -1."""
    n, d = X.shape
    bufs = _buffers(d, k, table[9].size)
    split, weight = bufs[0], bufs[1]
    for row in range(n):
        nnz = 0
        for i in range(d):  # branch-free compaction: zeros are written, then overwritten
            v = np.float64(X[row, i]) - center[i]
            split[nnz] = 2 * i + (1 if v < 0.0 else 0)
            weight[nnz] = abs(v) * scale
            nnz += 1 if v != 0.0 else 0
        if not _finish_row(row, nnz, skey, k, rates, table, mask, codes_only, bufs, code_out, s_out, id_out):
            return row
    return -1


@njit(nogil=True, cache=True)
def dart_csr(data, indices, indptr, skey, scale, k, rates, table, mask, codes_only, code_out, s_out, id_out):
    """Samples of a canonical CSR block (sorted, unique indices); as :func:`dart_dense`."""
    width = 0
    for row in range(indptr.size - 1):
        width = max(width, indptr[row + 1] - indptr[row])
    bufs = _buffers(width, k, table[9].size)
    split, weight = bufs[0], bufs[1]
    for row in range(indptr.size - 1):
        nnz = 0
        for p in range(indptr[row], indptr[row + 1]):
            v = np.float64(data[p])
            split[nnz] = 2 * np.int64(indices[p]) + (1 if v < 0.0 else 0)
            weight[nnz] = abs(v) * scale
            nnz += 1 if v != 0.0 else 0
        if not _finish_row(row, nnz, skey, k, rates, table, mask, codes_only, bufs, code_out, s_out, id_out):
            return row
    return -1
