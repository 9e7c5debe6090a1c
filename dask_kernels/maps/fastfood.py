"""Fastfood (Le, Sarlos and Smola, 2013): structured random features in O(n log d) per row.

Inputs are zero-padded to ``d = 2**l >= n_features_in``. Block t (t < ceil(k / d)) is the
d x d matrix ``V_t = 1 / (sigma sqrt(d)) S_t H G_t P_t H B_t``, and features are
``z_j(x) = sqrt(2 / k) cos(V x + b)_j`` for the first k = ``n_components`` rows of the stacked
blocks. ``H`` is the unnormalized Walsh-Hadamard matrix (``_fwht``), applied in place.

Random streams under the map's seed (``dask_kernels.rng``, scheme dk-rng-1), t = block,
i = row within the block, j = t * d + i = output feature:

* stream 41: ``B[t, i] = +1`` if ``bits(index_key(stream_key(seed, 41), t), i)`` is even, else -1
* stream 42: ``P_t`` = stable argsort of ``rank(seed, 42, t, i)`` over i (a permutation that is a
  pure function of the seed)
* stream 43: ``G[t, i] = normal(seed, 43, t, i)``
* stream 44: radial draws. Gaussian: ``s_j ~ chi(d)`` from a Marsaglia-Tsang Gamma(d/2) draw
  keyed by ``index_key(stream_key(seed, 44), j)``. Matern: Bartlett chi draws keyed by index
  ``j * t_mat + m``
* stream 45: phases ``b[j] = 2 pi * unit64(bits(index_key(stream_key(seed, 45), j), 0))``
* stream 46 / 47 (Matern only): ball radii ``uniform(seed, 46, j, m)``, Bartlett normals
  ``normal(seed, 47, j, e)``
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from numba import njit
from .._params import Interval, ParameterConstraints, StrOptions

from ..rng import bits, index_key, normal_array, normal_of_key, rank_array, register_stream, stream_key, unit64
from ._bounds import MAX_FASTFOOD_BLOCK_FEATURES, MAX_PADDED_DIM, refuse_above
from ._cos32 import _cos32v2_any, affine_cos32v2_at, affine_cos32v2_transposed, cos32_into
from ._fourier import COMMON_CONSTRAINTS, POSITIVE_FINITE, FloatFeatures, cached_table
from ._subset import FEATURE_IDS_CONSTRAINT, FeatureIds, phases_of
from ._fwht import fwht_gathered_at, fwht_interleaved, fwht_row, fwht_scaled_at, scaled_vector
from ._gamma import GAMMA_CONSTRAINT, ScaleGamma
from ._scaling import SCALE_CONSTRAINT, LearnedScale
from .base import FeatureMap
from .._docstrings import fill_doc

if TYPE_CHECKING:  # names used only in annotations
    import numpy.typing as npt


STREAM_B = register_stream("fastfood.sign", 41)
STREAM_P = register_stream("fastfood.permutation", 42)
STREAM_G = register_stream("fastfood.gaussian", 43)
STREAM_S = register_stream("fastfood.scale", 44)
STREAM_PHASE = register_stream("fastfood.phase", 45)
STREAM_RADIUS = register_stream("fastfood.radius", 46)
STREAM_BARTLETT = register_stream("fastfood.bartlett", 47)

ROWS_PER_CHUNK = 8


# -- random parameters ---------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def gamma_draw(ikey, a):
    """Gamma(a, 1) for a > 0 from one index key (Marsaglia-Tsang; exact, by rejection).

    Attempt m uses the normal ``normal_of_key(ikey, 1 + m)`` (counters 2 + 2m, 3 + 2m) and the
    uniform ``unit64(bits(ikey, 2**32 + m))``; for a < 1 the boost ``U**(1/a)`` uses
    ``unit64(bits(ikey, 0))``. Acceptance is above 95 %, so a draw
    costs about one attempt.
    """
    boost = 1.0
    if a < 1.0:
        boost = unit64(bits(ikey, np.uint64(0))) ** (1.0 / a)
        a += 1.0
    dd = a - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * dd)
    m = np.uint64(0)
    while True:
        z = normal_of_key(ikey, np.uint64(1) + m)
        v = 1.0 + c * z
        if v > 0.0:
            v = v * v * v
            u = unit64(bits(ikey, np.uint64(2**32) + m))
            if np.log(u) < 0.5 * z * z + dd - dd * v + dd * np.log(v):
                return dd * v * boost
        m += np.uint64(1)


@njit(nogil=True, cache=True)
def chi_radii(seed, d, k):
    """``s_j ~ chi(d)`` for j < k (:func:`chi_radii_of` of ``0 .. k-1``)."""
    return chi_radii_of(seed, d, np.arange(k, dtype=np.uint64))


@njit(nogil=True, cache=True)
def matern_radii(seed, d, k, t):
    """:func:`matern_radii_of` of the feature ids ``0 .. k-1``."""
    return matern_radii_of(seed, d, np.arange(k, dtype=np.uint64), t)


@njit(nogil=True, cache=True)
def chi_radii_of(seed, d, ids):
    """``s_j ~ chi(d)`` for each feature id j in ``ids``: ``sqrt(2 Gamma(d / 2))``."""
    skey = stream_key(np.uint64(seed), np.uint64(STREAM_S))
    out = np.empty(ids.size)
    for c in range(ids.size):
        out[c] = np.sqrt(2.0 * gamma_draw(index_key(skey, np.uint64(ids[c])), 0.5 * d))
    return out


@njit(nogil=True, cache=True)
def matern_radii_of(seed, d, ids, t):
    """``s_j = ||xi_1 + ... + xi_t|| sqrt((d + 2) / t)``, xi i.i.d. uniform in the unit ball of R^d.

    Exact, in O(t^2) per draw: the t Gaussian directions behind the xi have the Gram matrix
    of a random upper-triangular R (Bartlett / QR): ``R[m, m] ~ chi(d - m)``,
    ``R[m, l] ~ N(0, 1)`` for l > m, rows m < min(d, t). The ball radii are ``U**(1/d)``.
    The factor ``sqrt((d + 2) / t)`` gives the spectrum covariance I, like the Gaussian case.
    One draw per feature id j in ``ids``.
    """
    skey = stream_key(np.uint64(seed), np.uint64(STREAM_S))
    rkey = stream_key(np.uint64(seed), np.uint64(STREAM_RADIUS))
    nkey = stream_key(np.uint64(seed), np.uint64(STREAM_BARTLETT))
    rows = min(d, t)
    R = np.zeros((rows, t))
    vec = np.empty(rows)
    out = np.empty(ids.size)
    for c in range(ids.size):
        j = np.uint64(ids[c])
        jr = index_key(rkey, j)
        jn = index_key(nkey, j)
        e = 0
        for m in range(rows):
            ikey = index_key(skey, j * np.uint64(t) + np.uint64(m))
            R[m, m] = np.sqrt(2.0 * gamma_draw(ikey, 0.5 * (d - m)))
            for col in range(m + 1, t):
                R[m, col] = normal_of_key(jn, np.uint64(e))
                e += 1
        vec[:] = 0.0
        for col in range(t):
            norm = 0.0
            for m in range(rows):
                norm += R[m, col] * R[m, col]
            w = unit64(bits(jr, np.uint64(col))) ** (1.0 / d) / np.sqrt(norm)
            for m in range(rows):
                vec[m] += R[m, col] * w
        out[c] = np.sqrt(np.sum(vec * vec) * (d + 2.0) / t)
    return out


def fastfood_tables(seed, d, k, sigma, radial, matern_t, dtype):
    """(B, P, G, scale, phase): B, G, scale of shape (T, d) in ``dtype``, P int32 (T, d), phase (k,).

    ``scale[t, i] = s_j / (||G_t||_F sigma sqrt(d))`` folds S and the normalization together.
    """
    n_blocks = -(-k // d)
    return block_tables(seed, d, np.arange(n_blocks, dtype=np.uint64), np.arange(k, dtype=np.uint64), sigma,
                        radial, matern_t, dtype)


def block_tables(seed, d, blocks, phase_ids, sigma, radial, matern_t, dtype):
    """:func:`fastfood_tables` of the given block ids (row p of the tables is block ``blocks[p]``,
    features ``blocks[p] * d + i``), with the phases of the feature ids ``phase_ids``."""
    n_blocks = blocks.size
    idx = np.arange(d, dtype=np.uint64)
    # all blocks in one call each (a loop over blocks took 0.1 ms per block: 26 s for the 2**18
    # blocks of k = 2**20 at d = 4); the (n_blocks, d) temporaries hold at most k + d entries
    seed64 = np.uint64(seed)
    B = 1.0 - 2.0 * (rank_array(seed64, np.uint64(STREAM_B), blocks, idx) & np.uint64(1))
    # d < 2**31: int32, half the memory of int64
    P = np.argsort(rank_array(seed64, np.uint64(STREAM_P), blocks, idx), axis=1, kind="stable").astype(np.int32)
    G = normal_array(seed64, np.uint64(STREAM_G), blocks, idx)
    ids = (blocks[:, None] * np.uint64(d) + idx).ravel()
    if radial == "gaussian":
        s = chi_radii_of(np.uint64(seed), d, ids)
    else:
        s = matern_radii_of(np.uint64(seed), d, ids, int(matern_t))
    scale = s.reshape(n_blocks, d) / (np.linalg.norm(G, axis=1, keepdims=True) * sigma * math.sqrt(d))
    phase = phases_of(np.uint64(seed), STREAM_PHASE, phase_ids)
    return B.astype(dtype), P, G.astype(dtype), scale.astype(dtype), phase.astype(dtype)


# -- the block kernel ----------------------------------------------------------------------------


#: ``cosine`` argument of the block kernels: the projection only, or the cosine fused after the
#: last Hadamard stage (cos32 of the previous version's specs, cos32v2 of new ones).
NO_COSINE, COS32, COS32V2 = 0, 1, 2


@njit(nogil=True, cache=True)
def _project_row(x, B, P, G, scale, phase, u, v, out_row, cos_factor, cosine):
    """``out_row[t d + i] = (V_t x)_i + phase[t d + i]`` for every block t (x zero-padded).

    With ``cosine`` COS32 or COS32V2, each block of d values becomes ``cos_factor * cos(...)``
    right after its last Hadamard stage, while it is still in L1. The tables are read as flat
    arrays at offset ``t d``: a view per block (``B[t]``, ...) costs an atomic reference count
    in and out, and a call, each time (measured ~0.3 ns per feature at d = 256).
    """
    n_blocks, d = B.shape
    k = out_row.size
    Bf, Pf, Gf, Sf = B.reshape(B.size), P.reshape(P.size), G.reshape(G.size), scale.reshape(scale.size)
    for t in range(n_blocks):
        o = t * d
        if d >= 64 // x.itemsize:  # a 512-bit vector or more: B and P G fused into the transforms
            fwht_scaled_at(x, Bf, o, u)
            fwht_gathered_at(u, Pf, Gf, o, v)
        else:
            for i in range(d):
                u[i] = x[i] * Bf[o + i]
            fwht_row(u)
            for i in range(d):
                v[i] = u[Pf[o + i]] * Gf[o + i]
            fwht_row(v)
        m = min(d, k - o)
        if cosine == COS32V2:
            affine_cos32v2_at(v, m, Sf, o, phase, o, out_row, o, cos_factor)
        elif cosine == COS32:
            for i in range(m):
                v[i] = v[i] * Sf[o + i] + phase[o + i]
            cos32_into(v, m, out_row, o, cos_factor)
        else:
            for i in range(m):
                out_row[o + i] = v[i] * Sf[o + i] + phase[o + i]


@njit(nogil=True, cache=True)
def _project_dense(X, B, P, G, scale, phase, out, cos_factor, cosine):
    d = B.shape[1]
    x = np.zeros(d, dtype=out.dtype)
    u = np.empty(d, dtype=out.dtype)
    v = np.empty(d, dtype=out.dtype)
    for r in range(X.shape[0]):
        for i in range(X.shape[1]):
            x[i] = X[r, i]
        _project_row(x, B, P, G, scale, phase, u, v, out[r], cos_factor, cosine)


#: Rows of a group in :func:`_project_dense_groups`: one 512-bit float32 vector holds one value of each.
GROUP = 16
#: Largest d of the row-group kernel: three (d, 16) float32 arrays of 16 KiB each at d = 256 stay
#: in L1/L2; at d = 1024 (64 KiB each) the row kernel is faster (one thread, ns per output,
#: loaded machine: rows -> groups 2.58 -> 1.27 at d = 256, 2.40 -> 1.41 at d = 512,
#: 2.17 -> 2.38 at d = 1024).
GROUP_MAX_D = 512


@njit(nogil=True, cache=True, inline="always")
def _group_blocks(xt, Bf, Pf, Gf, Sf, phase, u, v, of, r0, k, cos_factor):
    """Every block of the 16 interleaved rows ``xt`` (value i of row l at ``16 i + l``, rows
    ``r0 ..`` of the flattened output ``of`` of width k): see :func:`_project_dense_groups`."""
    d = xt.size // GROUP
    for t in range(Bf.size // d):
        o = t * d
        for i in range(d):
            scaled_vector(xt, GROUP * i, Bf[o + i], u, GROUP * i)
        fwht_interleaved(u)
        for i in range(d):
            scaled_vector(u, GROUP * np.intp(Pf[o + i]), Gf[o + i], v, GROUP * i)
        fwht_interleaved(v)
        m = min(d, k - o)
        for i in range(0, m - m % GROUP, GROUP):
            affine_cos32v2_transposed(v, GROUP * i, Sf, phase, o + i, of, r0 * k + o + i, k, cos_factor)
        for i in range(m - m % GROUP, m):
            for lane in range(GROUP):
                x = v[GROUP * i + lane] * Sf[o + i] + phase[o + i]
                of[(r0 + lane) * k + o + i] = _cos32v2_any(x) * cos_factor


@njit(nogil=True, cache=True)
def _project_dense_groups(X, B, P, G, scale, phase, out, cos_factor):
    """:func:`_project_dense` with cos32v2 (float32, d >= 16) for rows ``0 .. 16 (n // 16)``,
    16 rows at a time, the same bits.

    The group's rows are interleaved (value i of row l at ``16 i + l``), so that every step works
    on whole 512-bit vectors: ``B`` and ``G`` scale a vector by one value, the permutation ``P``
    moves whole vectors (no gather: 16 scalar loads per vector in the row kernel, where the
    gathered transform costs 2.5x the plain one at d = 256), and every butterfly stage is vector
    adds (no lane shuffles). Each
    value sees the row kernel's operations in the same order; the cosine transposes 16 x 16
    values in registers to store the rows. ``out`` is C-contiguous.
    """
    d = B.shape[1]
    xt = np.zeros(d * GROUP, dtype=out.dtype)
    u = np.empty(d * GROUP, dtype=out.dtype)
    v = np.empty(d * GROUP, dtype=out.dtype)
    Bf, Pf, Gf, Sf = B.reshape(B.size), P.reshape(P.size), G.reshape(G.size), scale.reshape(scale.size)
    of = out.reshape(out.size)
    for r0 in range(0, X.shape[0] - X.shape[0] % GROUP, GROUP):
        for i in range(X.shape[1]):
            for lane in range(GROUP):
                xt[GROUP * i + lane] = X[r0 + lane, i]
        _group_blocks(xt, Bf, Pf, Gf, Sf, phase, u, v, of, r0, out.shape[1], cos_factor)


@njit(nogil=True, cache=True)
def _project_csr_groups(data, indices, indptr, r0, B, P, G, scale, phase, out, cos_factor):
    """:func:`_project_dense_groups` of CSR rows ``r0 .. r0 + len(out)`` (whole groups of 16;
    duplicates summed in the order of :func:`_project_csr`, so the same bits)."""
    d = B.shape[1]
    xt = np.zeros(d * GROUP, dtype=out.dtype)
    u = np.empty(d * GROUP, dtype=out.dtype)
    v = np.empty(d * GROUP, dtype=out.dtype)
    Bf, Pf, Gf, Sf = B.reshape(B.size), P.reshape(P.size), G.reshape(G.size), scale.reshape(scale.size)
    of = out.reshape(out.size)
    for g0 in range(0, out.shape[0] - out.shape[0] % GROUP, GROUP):
        xt[:] = 0
        for lane in range(GROUP):
            for p in range(indptr[r0 + g0 + lane], indptr[r0 + g0 + lane + 1]):
                xt[GROUP * indices[p] + lane] += data[p]
        _group_blocks(xt, Bf, Pf, Gf, Sf, phase, u, v, of, g0, out.shape[1], cos_factor)


def _grouped_rows(n_rows, d, cosine, out):
    """Rows (a multiple of :data:`GROUP`) that :func:`_project_dense_groups` computes: float32
    with cos32v2 and GROUP <= d <= :data:`GROUP_MAX_D`, else 0."""
    if cosine != COS32V2 or out.dtype != np.float32 or not GROUP <= d <= GROUP_MAX_D or not out.flags.c_contiguous:
        return 0
    return n_rows - n_rows % GROUP


@njit(nogil=True, cache=True)
def _project_csr(data, indices, indptr, r0, B, P, G, scale, phase, out, cos_factor, cosine):
    """Rows ``r0 .. r0 + len(out)`` of a CSR matrix (no scipy slicing: it costs ~30 us)."""
    d = B.shape[1]
    x = np.zeros(d, dtype=out.dtype)
    u = np.empty(d, dtype=out.dtype)
    v = np.empty(d, dtype=out.dtype)
    for r in range(out.shape[0]):
        x[:] = 0
        for p in range(indptr[r0 + r], indptr[r0 + r + 1]):
            x[indices[p]] += data[p]  # sums duplicates, like the dense matrix
        _project_row(x, B, P, G, scale, phase, u, v, out[r], cos_factor, cosine)


def padded_dim(n_features):
    """The power of two Fastfood pads inputs to: the smallest ``2**l >= n_features``."""
    return 1 << max(int(n_features) - 1, 0).bit_length()


@fill_doc
class Fastfood(FeatureIds, LearnedScale, ScaleGamma, FloatFeatures, FeatureMap):
    """Fastfood random features for the Gaussian (or a Matern-type) kernel, O(k log d) per row.

    Output feature j < k = ``n_components`` is ``sqrt(2 / k) * cos((V x)_j + b_j)`` where V
    stacks ceil(k / d) independent blocks ``S H G P H B / (sigma sqrt(d))`` (d = input width
    zero-padded to a power of two) and keeps exactly its first k rows: the output width is
    ``n_components`` exactly (scikit-learn-extra's Fastfood rounds it). Each row of V has the
    length distribution of a N(0, I / sigma^2) vector, so ``E[z(x) . z(y)]`` approximates
    ``exp(-||x - y||^2 / (2 sigma^2))`` (``radial="gaussian"``). Parameter storage is O(k) and
    the per-row cost O(k log d), against O(k d) for :class:`RFF`.

    Parameters
    ----------
    %(n_components)s
    gamma : float, "scale" or None, default=None
        Gaussian kernel ``exp(-gamma ||x - y||^2)``: ``sigma = 1 / sqrt(2 gamma)``. "scale"
        learns scikit-learn's ``1 / (n_features * X.var())`` in ``fit`` from all training rows
        (exact, the same for any chunking; recorded in the spec as ``gamma_``).
    sigma : float or None, default=None
        Bandwidth, as an alternative to ``gamma`` (give at most one; neither means gamma=1).
    radial : {"gaussian", "matern"}, default="gaussian"
        Row-length distribution. "gaussian": ``chi(d)``. "matern": the length of the sum of
        ``matern_t`` vectors uniform in the unit ball of R^d, times ``sqrt((d + 2) / matern_t)``
        (so its spectrum has the Gaussian's covariance), giving the kernel
        ``[Gamma(d/2 + 1) (2 / r)^(d/2) J_{d/2}(r)]^matern_t`` with
        ``r = ||x - y|| sqrt((d + 2) / matern_t) / sigma`` (d = padded width), which tends to the
        Gaussian as ``matern_t`` grows.
    matern_t : int, default=3
        Number of ball draws summed for ``radial="matern"``.
    %(seed)s
    dtype : {"float32", "float64"}, default="float32"
        Output dtype and the precision of the transform.
    %(n_jobs)s
    %(feature_ids)s
        Feature j is row ``j mod d`` of block ``j // d``, as in any wider map, up to the
        normalization ``sqrt(2 / n_components)``. The cost is that of the distinct blocks the
        ids touch (each O(d log d) per row), so choose whole blocks: random feature selection
        (:func:`dask_kernels.select_features`) does.
    %(input_scale)s

    Attributes
    ----------
    %(fourier_attributes)s
    padded_dim_ : int
        d, the power of two inputs are padded to.

    Notes
    -----
    A row's features are bitwise identical whatever the block it is in, and for dense and CSR
    input of the same values. Input must be finite with ``|x| <= max_abs_features``
    (``finfo(dtype).max / (4 d^2 max(1, max|G|) max(1, max|scale|))``, computed from the map's
    tables: about 2e31 for float32, d = 1024, sigma = 1), beyond which the transform may
    overflow; other values raise ``ValueError`` naming the row and column. The padded width d is
    at most 2**20 (every row costs two Hadamard transforms of length d per block, whatever its
    nonzeros): wider input is refused by ``fit`` and :func:`~dask_kernels.from_spec`. Within one block of
    d features the rows of V are dependent (they share B, P, G); blocks are independent.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import Fastfood
    >>> X = np.array([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    >>> ff = Fastfood(n_components=6000, gamma=0.5, seed=1).fit(X)
    >>> Z = ff.transform(X)
    >>> Z.shape, Z.dtype, ff.padded_dim_
    ((2, 6000), dtype('float32'), 4)
    >>> round(float(Z[0] @ Z[1]), 1)  # exp(-0.5) = 0.61
    0.6

    Block 2 alone (features 8 .. 11 of the padded width d = 4):

    >>> Fastfood(n_components=4, feature_ids=[8, 9, 10, 11], seed=1).fit(X).transform(X).shape
    (2, 4)

    References
    ----------
    .. [1] Q. Le, T. Sarlos and A. Smola, "Fastfood: approximating kernel expansions in
       loglinear time", ICML 2013.
    .. [2] A. May, "Kernel approximation methods for speech recognition", PhD thesis, Columbia
       University, 2017, section 5.1 (random feature selection).
    """

    method = "fastfood"
    _parameter_constraints = ParameterConstraints({
        **COMMON_CONSTRAINTS,
        "gamma": [None, *GAMMA_CONSTRAINT],
        "sigma": [None, POSITIVE_FINITE],
        "radial": [StrOptions({"gaussian", "matern"})],
        "matern_t": [Interval(numbers.Integral, 1, None, closed="left")],
        **FEATURE_IDS_CONSTRAINT,
        **SCALE_CONSTRAINT,
    })

    def __init__(
        self,
        *,
        n_components: int = 100,
        gamma: float | None = None,
        sigma: float | None = None,
        radial: str = "gaussian",
        matern_t: int = 3,
        seed: int = 0,
        dtype: str = "float32",
        n_jobs: int | None = None,
        feature_ids: npt.ArrayLike | None = None,
        scale: str | None = None,
    ) -> None:
        self.n_components = n_components
        self.gamma = gamma
        self.sigma = sigma
        self.radial = radial
        self.matern_t = matern_t
        self.seed = seed
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.feature_ids = feature_ids
        self.scale = scale

    def _validate_params_extra(self):
        super()._validate_params_extra()
        if self.gamma is not None and self.sigma is not None:
            raise ValueError("give gamma or sigma, not both (sigma = 1 / sqrt(2 gamma))")

    @property
    def sigma_(self):
        """The bandwidth in use: ``sigma``, or ``1 / sqrt(2 gamma)`` (gamma defaults to 1)."""
        if self.sigma is not None:
            return float(self.sigma)
        return 1.0 / math.sqrt(2.0 * self._gamma())

    def _check_width(self, n_features):
        super()._check_width(n_features)  # the scale's bound
        refuse_above(padded_dim(n_features), MAX_PADDED_DIM,
                     f"Fastfood: n_features_in={int(n_features):,} pads every row to {{value:,}} values, more than "
                     "the bound of {bound:,} (a row costs two Hadamard transforms of that length per block of "
                     "features, whatever its nonzeros); for wide sparse input use RFF(density=...) or GCWS, or "
                     "reduce the input's columns")
        if self.feature_ids is not None and not isinstance(self.feature_ids, str):  # (a spec's sidecar: its ids)
            d = padded_dim(n_features)
            blocks = np.unique(np.asarray(self.feature_ids, dtype=np.int64) // d).size
            refuse_above(blocks * d, MAX_FASTFOOD_BLOCK_FEATURES,
                         f"Fastfood: feature_ids touch {blocks:,} blocks of {d:,} features, {{value:,}} features "
                         "computed per row, more than the bound of {bound:,}; choose ids in whole blocks "
                         "(dask_kernels.select_features does)")

    def _fit(self, X):
        super()._fit(X)
        self._check_tables()  # the width, and a learned gamma, are known now

    def _check_tables(self):
        """Refuse a bandwidth so narrow (tiny sigma, huge gamma) that the scale diagonal
        ``s / (||G|| sigma sqrt(d))`` does not fit the map's dtype: cast, it is inf, and every
        feature is NaN with a ``scale``, every input beyond a "magnitude bound 0" without."""
        with np.errstate(over="ignore", divide="ignore"):  # the overflow is what is refused here
            scale, dtype = self._tables()[3], np.dtype(self.dtype)
        if not np.isfinite(scale).all():
            what = f"sigma={self.sigma!r}" if self.sigma is not None else f"gamma={self._gamma()!r}"
            fix = "a larger sigma" if self.sigma is not None else "a smaller gamma"
            raise ValueError(f"Fastfood {what}: so narrow a bandwidth that its frequencies do not fit {dtype}: give "
                             f"{fix}" + (" or dtype='float64'" if dtype != np.float64 else ""))

    @property
    def padded_dim_(self):
        return padded_dim(self.n_features_in_)

    @property
    def max_abs_features(self):
        """Largest ``|x|`` the features take (``max_abs_input`` without ``scale``): ``finfo(dtype).max / (4 d^2 max(1, max|G|) max(1, max|scale|))``
        (d the padded width), which bounds every intermediate of ``V x`` (two unnormalized
        Hadamard transforms, the Gaussian diagonal and the scaling)."""
        if self._gamma() is None and self.sigma is None:  # gamma="scale" before fit: any finite value
            return None
        self._check_tables()  # an inf scale would make the bound 0: say why instead
        _, _, G, scale, _ = self._tables()
        d = float(self.padded_dim_)
        g = max(float(np.abs(G).max(initial=0.0)), 1.0)
        s = max(float(np.abs(scale).max(initial=0.0)), 1.0)
        return float(np.finfo(self.dtype).max) / (4.0 * d * d * g * s)

    def _tables(self):
        """(B, P, G, scale, phase) of the blocks computed; see :func:`fastfood_tables`."""
        if self.feature_ids is not None:
            return self._subset_tables()[0]
        d, k = self.padded_dim_, int(self.n_components)
        key = (self.seed, d, k, self.sigma_, self.radial, int(self.matern_t), self.dtype)
        return cached_table(
            self, key, lambda: fastfood_tables(self.seed, d, k, self.sigma_, self.radial, self.matern_t, self.dtype)
        )

    def _subset_tables(self):
        """(tables, gather): the tables of every block the ids touch, in increasing block order,
        and the column of each id in their output (None when that is the ids themselves)."""
        d = self.padded_dim_
        ids = self.feature_ids_or_range()

        def build():
            blocks = np.unique(ids // np.uint64(d))
            layout = (blocks[:, None] * np.uint64(d) + np.arange(d, dtype=np.uint64)).ravel()
            tables = block_tables(self.seed, d, blocks, layout, self.sigma_, self.radial, self.matern_t, self.dtype)
            gather = np.searchsorted(layout, ids)
            return tables, (None if np.array_equal(layout, ids) else gather)

        key = (self.seed, d, self.sigma_, self.radial, int(self.matern_t), self.dtype, ids.tobytes())
        return cached_table(self, key, build)

    def _compute(self, X, row_offset, features, out=None):
        B, P, G, scale, b = self._tables()
        if not features:
            b = np.zeros_like(b)
        X = sp.csr_matrix(X) if sp.issparse(X) else np.ascontiguousarray(X)
        gather = None if self.feature_ids is None else self._subset_tables()[1]
        target = out
        if out is None or gather is not None:  # a subset computes whole blocks, then picks its columns
            out = np.empty((X.shape[0], b.size), dtype=self.output_dtype_)
        factor = self.output_dtype_.type(math.sqrt(2.0 / self.n_components))
        cosine = {"cos32": COS32, "cos32v2": COS32V2}.get(self.cosine_, NO_COSINE) if features else NO_COSINE
        if cosine != NO_COSINE:  # the cosine is fused: one kernel call for the whole block
            chunk = max(X.shape[0], 1)
        else:  # small row chunks, so that numpy's cosine and scaling passes find them in cache
            chunk = ROWS_PER_CHUNK
        zero = self.output_dtype_.type(0)
        for r0 in range(0, X.shape[0], chunk):
            part = out[r0 : r0 + chunk]
            if sp.issparse(X):
                grouped = _grouped_rows(part.shape[0], B.shape[1], cosine, part)
                if grouped:
                    _project_csr_groups(X.data, X.indices, X.indptr, r0, B, P, G, scale, b, part[:grouped], factor)
                _project_csr(X.data, X.indices, X.indptr, r0 + grouped, B, P, G, scale, b, part[grouped:],
                             factor if cosine else zero, cosine)
            else:
                rows = X[r0 : r0 + chunk]
                grouped = _grouped_rows(rows.shape[0], B.shape[1], cosine, part)
                if grouped:
                    _project_dense_groups(rows[:grouped], B, P, G, scale, b, part[:grouped], factor)
                _project_dense(rows[grouped:], B, P, G, scale, b, part[grouped:], factor if cosine else zero, cosine)
            if features and cosine == NO_COSINE:
                np.cos(part, out=part)
                part *= factor
        if gather is None:
            return out
        if target is None:
            return out[:, gather]
        np.take(out, gather, axis=1, out=target)
        return target

    def projection_block(self, X: Any, row_offset: int = 0) -> np.ndarray:
        """``V x``, before phase and cosine, of a validated block: ndarray (n, n_components)."""
        return self._compute(X, row_offset, features=False)

    def transform_block(self, X: Any, row_offset: int = 0) -> np.ndarray:
        """Features of a validated block: ndarray (n, n_components) of ``output_dtype_``."""
        return self._compute(X, row_offset, features=True)

    def _transform_into(self, X, out, row_offset=0):
        """:meth:`transform_block` written into ``out`` (C-contiguous rows of the result)."""
        return self._compute(X, row_offset, features=True, out=out)
