"""Normalized random Fourier features (Li, 2017): RFF on unit vectors, normalized to unit length.

Random streams under the map's seed (``dask_kernels.rng``, scheme dk-rng-1):

* stream 31: frequencies, ``r[i, j] = normal(seed, 31, j, i)``
* stream 32: phases, ``w[j] = 2 pi * unit64(bits(index_key(stream_key(seed, 32), j), 0))``
"""


from __future__ import annotations

from typing import TYPE_CHECKING, Any
import numpy as np
import scipy.sparse as sp
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

import math
from functools import partial

from ._fourier import COMMON_CONSTRAINTS, NORMAL_MAX, FloatFeatures, normal_table, projection_bound
from ._fourier import projection_tables, row_chunks
from .._compat import cgutils
from .._params import ParameterConstraints
from ._bounds import check_projection
from ._cos32 import cos32_into, shift_cos32v2
from ._fourier import GemmRowBlocks, cached_table, product_on_blas, projection_tiles, tiled
from ._parallel import row_blocks
from ._subset import FEATURE_IDS_CONSTRAINT, FeatureIds, normal_columns, phases_of
from ._gamma import GAMMA_CONSTRAINT, ScaleGamma
from ._scaling import SCALE_CONSTRAINT, LearnedScale
from .base import FeatureMap
from .._docstrings import fill_doc
from ..rng import register_stream
from .rff import projection

if TYPE_CHECKING:  # names used only in annotations
    import numpy.typing as npt


STREAM_NORMAL = register_stream("nrff.normal", 31)
STREAM_PHASE = register_stream("nrff.phase", 32)


@njit(nogil=True, cache=True)
def _scale_add(P, s, phase):
    """``P[i, j] = P[i, j] * s[i] + phase[j]`` in place (s in float64)."""
    for i in range(P.shape[0]):
        f = P.dtype.type(s[i])
        row = P[i]
        for j in range(row.size):
            row[j] = row[j] * f + phase[j]


@njit(nogil=True, cache=True)
def _scale_rows(P, s):
    """``P[i] *= s[i]`` in place (s in float64, P float32 or float64)."""
    for i in range(P.shape[0]):
        f = P.dtype.type(s[i])
        row = P[i]
        for j in range(row.size):
            row[j] *= f


@intrinsic
def _lane_squares(typingctx, row, n16):
    """``acc[0] + acc[1] + ... + acc[15]`` (in that order), ``acc[m]`` the float64 sum, in row
    order, of ``row[j]**2`` over ``j = m (mod 16)``, ``j < n16`` (a multiple of 16); each square
    and each sum rounded on its own (no fused multiply-add). The 16 sums live in two 8-lane
    float64 registers through the loop: a loop over an accumulator array does not vectorize
    (measured 2-4 cycles per value, more than the cosine)."""
    if not (isinstance(row, types.Array) and row.ndim == 1 and row.layout == "C" and row.dtype == types.float32):
        return None

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        f16, d8 = ir.VectorType(ir.FloatType(), 16), ir.VectorType(ir.DoubleType(), 8)
        halves = [ir.Constant(ir.VectorType(ir.IntType(32), 8), list(range(h, h + 8))) for h in (0, 8)]
        accs = [cgutils.alloca_once_value(builder, ir.Constant(d8, [0.0] * 8)) for _ in halves]
        step = ir.Constant(args[1].type, 16)
        with cgutils.for_range_slice(builder, ir.Constant(args[1].type, 0), args[1], step) as (j, _):
            ptr = builder.bitcast(builder.gep(data, [j], inbounds=True), f16.as_pointer())
            v = builder.load(ptr, align=4)
            for acc, half in zip(accs, halves):
                x = builder.fpext(builder.shuffle_vector(v, v, half), d8)
                builder.store(builder.fadd(builder.load(acc), builder.fmul(x, x)), acc)
        total = ir.Constant(ir.DoubleType(), 0.0)
        for acc in accs:
            vec = builder.load(acc)
            for m in range(8):
                total = builder.fadd(total, builder.extract_element(vec, ir.Constant(ir.IntType(32), m)))
        return total

    return types.float64(row, types.intp), codegen


@njit(nogil=True, cache=True)
def _scale_to_unit(row):
    """Scale a float32 row to unit l2 norm; the squares summed in float64 over 16 lanes
    (:func:`_lane_squares`), then the remainder in order."""
    n16 = row.size - row.size % 16
    total = _lane_squares(row, n16)
    for j in range(n16, row.size):
        total += np.float64(row[j]) * np.float64(row[j])
    g = np.float32(1.0 / np.sqrt(total))
    for j in range(row.size):
        row[j] *= g


@njit(nogil=True, cache=True)
def _cos32_unit_rows(P, inv, phase):
    """In place, row by row (in cache): ``cos32(P * inv + phase)``, then scaled to unit length.

    The squared norm is summed in float64 over 16 interleaved partial sums (a fixed order, so
    bitwise reproducible, and vectorizable; a single float accumulator is not).
    """
    for i in range(P.shape[0]):
        row = P[i]
        f = np.float32(inv[i])
        for j in range(row.size):
            row[j] = row[j] * f + phase[j]
        cos32_into(row, row.size, row, 0, np.float32(1.0))
        _scale_to_unit(row)


@njit(nogil=True, cache=True)
def _cos32v2_unit_rows(P, inv, phase):
    """:func:`_cos32_unit_rows` with :func:`dask_kernels.maps._cos32.cos32v2`, the argument
    formed in the same pass (``shift_cos32v2``, four 512-bit vectors per step)."""
    for i in range(P.shape[0]):
        row = P[i]
        shift_cos32v2(row, np.float32(inv[i]), phase, row, np.float32(1.0))
        _scale_to_unit(row)


def _input_norms(X):
    if sp.issparse(X):
        sq = np.zeros(X.shape[0])
        np.add.at(sq, np.repeat(np.arange(X.shape[0]), np.diff(X.indptr)), X.data.astype(np.float64) ** 2)
        return np.sqrt(sq)
    return np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))


@fill_doc
class NRFF(GemmRowBlocks, FeatureIds, LearnedScale, ScaleGamma, FloatFeatures, FeatureMap):
    """Normalized random Fourier features for ``exp(-gamma (1 - rho))``, rho = cosine similarity.

    Each row ``x`` is scaled to ``u = x / ||x||``; features ``X_j = cos(sqrt(gamma) r_j . u + w_j)``
    with ``r_j ~ N(0, I)``, ``w_j ~ U(0, 2 pi)`` for j < k = ``n_components``; the k-vector is then
    divided by its l2 norm, so every output row has unit length and the estimate of the kernel
    is the inner product of two output rows. (Li's ``sqrt(2)`` factor cancels in the
    normalization.) Its variance is about ``V_n / k`` with
    ``V_n = V - e^{-2 gamma (1-rho)} (3 - e^{-4 gamma (1-rho)}) / 4`` and
    ``V = 1/2 + (1 - e^{-2 gamma (1-rho)})^2 / 2`` the variance of plain RFF (Li 2017, Theorem 3),
    much smaller than RFF's ``V / k`` at high similarity.

    Parameters
    ----------
    %(n_components)s
    gamma : float or "scale", default=1.0
        Kernel parameter (> 0). "scale" learns scikit-learn's rule on the unit rows the map
        sees, ``2 / (n_features * U.var())`` with ``U`` the rows divided by their norms (the
        kernel is the Gaussian ``exp(-(gamma / 2) ||u - v||^2)``), in ``fit`` from all training
        rows (exact, the same for any chunking; recorded in the spec as ``gamma_``).
    %(seed)s
    dtype : {"float32", "float64"}, default="float32"
        Output dtype, also the precision of the projection.
    %(n_jobs)s
    %(feature_ids)s
        Before the final normalization, feature ``feature_ids[c]`` is column
        ``feature_ids[c]`` of any wider map with the same parameters; the output row is then
        normalized over the chosen features.
    %(input_scale)s

    Attributes
    ----------
    %(fourier_attributes)s

    Notes
    -----
    In general the map estimates ``exp(-gamma ||u - v||^2 / 2)``, which equals
    ``exp(-gamma (1 - rho))`` for nonzero rows. An all-zero input row is mapped as ``u = 0``
    (features ``cos(w_j)``, normalized), so its kernel with a nonzero row is ``exp(-gamma / 2)``
    (see :func:`dask_kernels.exact.rbf.cosine_rbf_kernel`).
    Input must be finite with ``|x| <= max_abs_features``: the projection is computed before the
    normalization, so ``w . x`` must not overflow (``finfo(dtype).max / (2 d w_max (1 + d eps))``,
    2.5e34 for float32, d = 784, gamma = 1), nor the squared norm
    (``sqrt(finfo(float64).max / d) / 2``, 2.4e152 at d = 784); other values raise ``ValueError``
    naming the row and column.
    The (d, k) frequency matrix is built in float64 and may take at most 2 GiB
    (``n_features_in * n_components <= 2**28``): larger maps are refused by ``fit`` and
    :func:`~dask_kernels.from_spec` (``dask_kernels.maps._bounds``).
    The projection uses BLAS; across chunkings a row's features agree to float rounding
    (tests: ``atol = 1e-5 * (1 + max |sqrt(gamma) r . u + w|) / sqrt(k)``).

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import NRFF
    >>> X = np.array([[1.0, 0.0], [3.0, 3.0]])   # cosine 0.707
    >>> Z = NRFF(n_components=4096, gamma=1.0, seed=1).fit_transform(X)
    >>> round(float(np.linalg.norm(Z[0])), 6)
    1.0
    >>> round(float(Z[0] @ Z[1]), 2)  # exp(-(1 - 0.707)) = 0.75
    0.75
    >>> NRFF(n_components=2, feature_ids=[9, 4], seed=1).fit(X).transform(X).shape
    (2, 2)

    References
    ----------
    .. [1] P. Li, "Linearized GMM kernels and normalized random Fourier features", KDD 2017.
    .. [2] A. May, "Kernel approximation methods for speech recognition", PhD thesis, Columbia
       University, 2017, section 5.1 (random feature selection keeps feature ids).
    """

    method = "nrff"
    _unit_rows = True
    _parameter_constraints = ParameterConstraints({
        **COMMON_CONSTRAINTS,
        "gamma": GAMMA_CONSTRAINT,
        **FEATURE_IDS_CONSTRAINT,
        **SCALE_CONSTRAINT,
    })

    def __init__(self, *, n_components: int = 100, gamma: float = 1.0, seed: int = 0, dtype: str = "float32",
                 n_jobs: int | None = None, feature_ids: npt.ArrayLike | None = None,
                 scale: str | None = None) -> None:
        self.n_components = n_components
        self.gamma = gamma
        self.seed = seed
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.feature_ids = feature_ids
        self.scale = scale

    def _check_width(self, n_features):
        super()._check_width(n_features)  # the scale's bound
        check_projection("NRFF", n_features, int(self.n_components))

    @property
    def max_abs_features(self):
        """Largest ``|x|`` the features take (``max_abs_input`` without ``scale``): the smaller of ``finfo(dtype).max / (2 d w_max (1 + d eps))``,
        ``w_max = sqrt(gamma) 8.66`` (the projection), and ``sqrt(finfo(float64).max / d) / 2``
        (the squared norm, summed in float64)."""
        d = int(self.n_features_in_)
        norm = math.sqrt(float(np.finfo(np.float64).max) / d) / 2.0
        w_max = self.max_abs_frequency
        if w_max is None:  # gamma="scale" before fit: the statistics see unit rows
            return norm
        return min(projection_bound(self.dtype, d, w_max), norm)

    @property
    def max_abs_frequency(self):
        """Largest ``|w|`` a frequency can take (None before gamma="scale" is fitted)."""
        gamma = self._gamma()
        return None if gamma is None else math.sqrt(gamma) * NORMAL_MAX

    def _tables(self):
        if self.feature_ids is not None:
            return self._subset_tables()
        seed, gamma = np.uint64(self.seed), self._gamma()
        fill = lambda W: normal_table(seed, STREAM_NORMAL, *W.shape, np.sqrt(gamma), W)  # noqa: E731
        return projection_tables(self, (gamma,), fill, STREAM_PHASE)

    def transform_block(self, X: Any, row_offset: int = 0) -> np.ndarray:
        """Unit-length features of a validated block: ndarray (n, n_components)."""
        return self._transform_into(X, None, row_offset)

    def _transform_phases(self, X):
        """The public transform of dense input in two phases: the product in tiles
        (:func:`._fourier.projection_tiles`) or on all rows (:func:`._fourier.product_on_blas`),
        then the cosine and the unit scaling in row blocks (a row's norm needs all its columns;
        each row is in cache for both); in one phase when every tile spans all columns, each
        tile's features computed after its product (each row's features do not depend on the
        rows computed with it). None (row blocks) for other maps and inputs."""
        if sp.issparse(X) or not tiled(self):
            return None
        W, phase = self._tables()
        norms = _input_norms(X)  # per row, the same bits whatever the rows around it
        inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        X = X.astype(self.output_dtype_, copy=False)
        out = np.empty((X.shape[0], int(self.n_components)), dtype=self.output_dtype_)

        def product(a, b, c0, c1):
            np.matmul(X[a:b], W[:, c0:c1], out=out[a:b, c0:c1])

        def features(a, b):
            _cos32v2_unit_rows(out[a:b], inv[a:b], phase)

        def whole_rows(a, b, c0, c1):  # a tile of all columns: its rows' features while in cache
            product(a, b, c0, c1)
            features(a, b)

        blas = product_on_blas(self, X, W, out)
        tiles = projection_tiles(self, X.shape[0])
        if blas is None and all(c1 - c0 == out.shape[1] for _, _, c0, c1 in tiles):
            return out, [[partial(whole_rows, *t) for t in tiles]]
        return out, [blas if blas is not None else [partial(product, *t) for t in tiles],
                     [partial(features, a, b) for a, b in row_blocks(X.shape[0])]]

    def _transform_into(self, X, out, row_offset=0):
        """:meth:`transform_block` written into ``out`` (or a new array when None)."""
        W, phase = self._tables()
        norms = _input_norms(X)
        inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        # (X @ W) / ||x|| = W^T u: normalize after the product, the cheaper side.
        P = projection(X, W, self.output_dtype_, out)
        if self.cosine_ == "cos32v2":
            _cos32v2_unit_rows(P, inv, phase)
            return P
        if self.cosine_ == "cos32":
            _cos32_unit_rows(P, inv, phase)
            return P
        for part, inv_part in zip(row_chunks(P), row_chunks(inv)):
            _scale_add(part, inv_part, phase)
            np.cos(part, out=part)
            # numpy's SIMD dot per row (float32 lanes; relative error ~1e-6 at k = 16384)
            _scale_rows(part, 1.0 / np.sqrt(np.einsum("ij,ij->i", part, part).astype(np.float64)))
        return P

    def _subset_tables(self):
        """(W, phase) of the features ``feature_ids``: the same values as the columns of the full map."""
        seed, gamma, d = np.uint64(self.seed), self._gamma(), int(self.n_features_in_)
        ids = self.feature_ids_or_range()

        def build():
            W = normal_columns(seed, STREAM_NORMAL, ids, d, np.sqrt(gamma), np.empty((d, ids.size)))
            return W.astype(self.dtype), phases_of(seed, STREAM_PHASE, ids).astype(self.dtype)

        return cached_table(self, (self.seed, d, self.dtype, gamma, ids.tobytes()), build)
