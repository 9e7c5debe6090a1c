"""Random Fourier features (Rahimi-Recht) for the Gaussian and Laplacian kernels.

Random streams under the map's seed (``dask_kernels.rng``, scheme dk-rng-1):

* stream 21: Gaussian frequencies, ``W[i, j] = sqrt(2 gamma) * normal(seed, 21, j, i)``
* stream 22: Laplacian frequencies, ``W[i, j] = gamma * tan(pi (uniform(seed, 22, j, i) - 1/2))``
* stream 23: phases, ``b[j] = 2 pi * unit64(bits(index_key(stream_key(seed, 23), j), 0))``
* stream 24 (``density < 1`` only): the support of the sparse w_j (:mod:`._sparse`)

Feature j depends only on (seed, j), so a wider map extends a narrower one, and input
dimension i only on (seed, j, i).
"""


from __future__ import annotations

from typing import TYPE_CHECKING, Any
import numpy as np
import scipy.sparse as sp
from .._params import Interval, ParameterConstraints, StrOptions

import math
import numbers
from functools import partial

from ._fourier import CAUCHY_MAX, COMMON_CONSTRAINTS, NORMAL_MAX, FloatFeatures, cauchy_table
from ._fourier import normal_table, projection_bound, projection_tables, row_chunks
from ._cos32 import affine_cos32_rows, shift_cos32v2_rows, shift_cos32v2_tile
from ._fourier import GemmRowBlocks, cached_table, product_on_blas, projection_tiles, tiled
from ._parallel import row_blocks
from ._bounds import check_projection, refuse_above
from ._sparse import MAX_NONZEROS, SparseFrequencies, sparse_support, sparse_values
from ._subset import FEATURE_IDS_CONSTRAINT, FeatureIds, cauchy_columns, normal_columns, phases_of
from ._gamma import GAMMA_CONSTRAINT, ScaleGamma
from ._scaling import SCALE_CONSTRAINT, LearnedScale
from .base import FeatureMap
from .._docstrings import fill_doc
from ..rng import register_stream

if TYPE_CHECKING:  # names used only in annotations
    import numpy.typing as npt


STREAM_GAUSSIAN = register_stream("rff.gaussian", 21)
STREAM_CAUCHY = register_stream("rff.cauchy", 22)
STREAM_PHASE = register_stream("rff.phase", 23)
STREAM_SUPPORT = register_stream("rff.support", 24)


def projection(X, W, dtype, out=None):
    """``X @ W`` for a dense or CSR block, C-contiguous in ``dtype`` (BLAS for dense input);
    into ``out`` (C-contiguous, of that shape and dtype) when given."""
    if isinstance(W, SparseFrequencies):
        return W.project(X, dtype, out)
    X = X.astype(dtype, copy=False)
    if out is None:
        return np.ascontiguousarray(X @ W if not sp.issparse(X) else np.asarray(X @ W), dtype=dtype)
    if sp.issparse(X):
        out[...] = X @ W
    else:
        np.matmul(X, W, out=out)
    return out


@fill_doc
class RFF(GemmRowBlocks, FeatureIds, LearnedScale, ScaleGamma, FloatFeatures, FeatureMap):
    """Random Fourier features for ``exp(-gamma ||x - y||^2)`` or ``exp(-gamma ||x - y||_1)``.

    ``z_j(x) = sqrt(2 / k) * cos(w_j . x + b_j)`` for j < k = ``n_components``, with
    ``b_j ~ U(0, 2 pi)`` and ``w_j ~ N(0, 2 gamma I)`` (``kernel="rbf"``, scikit-learn's
    ``RBFSampler`` convention) or ``w_ji ~ Cauchy(0, gamma)`` i.i.d. (``kernel="laplacian"``).
    Then ``E[z(x) . z(y)] = k(x, y)`` and, for the Gaussian kernel, a single product has
    variance ``1/2 + 1/2 (1 - k(x, y)^2)^2``, so the estimate's variance is that over k.

    Parameters
    ----------
    %(n_components)s
    gamma : float or "scale", default=1.0
        Kernel parameter (> 0). "scale" (``kernel="rbf"`` only) learns scikit-learn's
        ``1 / (n_features * X.var())`` in ``fit`` from all training rows (the variance over
        all entries, computed exactly, so the same for any chunking of a dask input); the
        spec records the fitted value (``gamma_``).
    kernel : {"rbf", "laplacian"}, default="rbf"
    %(seed)s
    dtype : {"float32", "float64"}, default="float32"
        Output dtype, also the precision of the projection (float32 uses SGEMM).
    %(n_jobs)s
    %(feature_ids)s
        Every parameter of feature j is a pure function of (seed, j), so feature
        ``feature_ids[c]`` is column ``feature_ids[c]`` of any wider map with the same
        parameters, up to the normalization ``sqrt(2 / n_components)``. Random feature
        selection (:func:`dask_kernels.select_features`) returns such maps.
    %(input_scale)s
    density : float in (0, 1], default=1.0
        Sparse random features (May 2017, section 5.2): with ``density < 1`` each ``w_j`` is
        nonzero on ``m = max(1, round(density * n_features_in))`` inputs drawn uniformly at
        random for each feature, with the dense map's values there; a row then costs
        O(k m) instead of O(k d). This approximates the *sparse* kernel
        ``k_m(x, y) = mean over m-subsets F of prod_{i in F} exp(-gamma (x_i - y_i)^2)``
        (or ``exp(-gamma |x_i - y_i|)``), see :func:`dask_kernels.exact.sparse_rbf_kernel`, not
        the dense Gaussian: no rescaling turns one into the other. With the dense map's gamma,
        k_m is much flatter (few inputs per feature); ``gamma * d / m`` matches the dense
        Gaussian to second order in ``||x - y||`` (the same ``E ||w||^2``).

    Attributes
    ----------
    %(fourier_attributes)s
    gamma_ : float
        The fitted gamma (``gamma="scale"`` only).
    n_nonzero_ : int
        Nonzeros per frequency vector: ``n_features_in_``, or m when ``density < 1``.

    Notes
    -----
    The (d, k) frequency matrix is built in float64 and may take at most 2 GiB
    (``n_features_in * n_components <= 2**28``; with ``density < 1``, at most 2**27 stored
    nonzeros): ``fit`` and :func:`~dask_kernels.from_spec` refuse larger maps before building
    anything (``dask_kernels.maps._bounds``).
    The projection is a BLAS matrix product, whose rounding may depend on the block shape: a
    row's features agree across chunkings to about 1e-6 relative to ``|w . x|`` in float32
    (tests use ``atol = 1e-5 * (1 + max |w . x + b|) * sqrt(2 / k)``), and exactly between dense and CSR input only
    up to the same rounding. Input must be finite with ``|x| <= max_abs_features``
    (``finfo(dtype).max / (2 d w_max (1 + d eps))``, beyond which ``w . x`` may overflow: 1.8e34
    for float32, d = 784, gamma = 1; 3.8e19 for the Laplacian kernel); other values raise
    ``ValueError`` naming the row and column. The (d, k) frequency matrix is computed once per process from the
    seed and cached; it is not part of the spec or of a pickle. With ``density < 1`` the
    projection is a gather over each feature's support summed in float64 (same values for dense
    and CSR input, independent of the chunking).

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import RFF
    >>> X = np.array([[0.0, 1.0], [1.0, 1.0]])
    >>> Z = RFF(n_components=4096, gamma=0.5, seed=1).fit_transform(X)
    >>> Z.shape, Z.dtype
    ((2, 4096), dtype('float32'))
    >>> round(float(Z[0] @ Z[1]), 1)  # exp(-0.5) = 0.61
    0.6

    Any subset of features, from the ids alone (up to the normalization sqrt(2 / k)):

    >>> full = RFF(n_components=64, seed=1).fit(X).transform(X)
    >>> part = RFF(n_components=2, feature_ids=[40, 3], seed=1).fit(X).transform(X)
    >>> bool(np.allclose(part, full[:, [40, 3]] * np.sqrt(64 / 2), atol=1e-5))
    True

    Columns in different units, each scaled onto [-1, 1] by its training range, the bandwidth
    then learned from the scaled rows:

    >>> X = np.array([[1.0, 200.0], [2.0, 100.0], [3.0, 300.0]])
    >>> rff = RFF(n_components=8, scale="minmax", gamma="scale", seed=0).fit(X)
    >>> rff.scale_
    {'rule': 'minmax', 'min': [1.0, 100.0], 'max': [3.0, 300.0]}
    >>> rff.validate_block(X)  # the rows the features see
    array([[-1.,  0.],
           [ 0., -1.],
           [ 1.,  1.]], dtype=float32)

    References
    ----------
    .. [1] A. Rahimi and B. Recht, "Random features for large-scale kernel machines", NIPS 2007.
    .. [2] A. May, "Kernel approximation methods for speech recognition", PhD thesis, Columbia
       University, 2017, sections 5.1-5.2 (feature ids kept by selection; sparse random features).
    """

    method = "rff"
    _parameter_constraints = ParameterConstraints({
        **COMMON_CONSTRAINTS,
        "gamma": GAMMA_CONSTRAINT,
        "kernel": [StrOptions({"rbf", "laplacian"})],
        **FEATURE_IDS_CONSTRAINT,
        **SCALE_CONSTRAINT,
        "density": [Interval(numbers.Real, 0, 1, closed="right")],
    })
    _optional_params = {"feature_ids": None, "density": 1.0}

    def __init__(
        self,
        *,
        n_components: int = 100,
        gamma: float = 1.0,
        kernel: str = "rbf",
        seed: int = 0,
        dtype: str = "float32",
        n_jobs: int | None = None,
        feature_ids: npt.ArrayLike | None = None,
        density: float = 1.0,
        scale: str | None = None,
    ) -> None:
        self.n_components = n_components
        self.gamma = gamma
        self.kernel = kernel
        self.seed = seed
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.feature_ids = feature_ids
        self.density = density
        self.scale = scale

    def _check_width(self, n_features):
        super()._check_width(n_features)  # the scale's bound
        k = int(self.n_components)
        if float(self.density) >= 1.0:
            check_projection("RFF", n_features, k)
            return
        m = self._nonzeros(n_features)
        refuse_above(k * m, MAX_NONZEROS,
                     f"RFF: density={self.density}: n_components={k:,} x {m:,} nonzeros per feature = {{value:,}} "
                     "stored nonzeros (16 bytes each), more than the bound of {bound:,}; lower density or "
                     "n_components")

    def _nonzeros(self, d):
        return d if float(self.density) >= 1.0 else min(d, max(1, round(float(self.density) * d)))

    @property
    def n_nonzero_(self) -> int:
        return self._nonzeros(int(self.n_features_in_))

    @property
    def max_abs_features(self):
        """Largest ``|x|`` the features take (``max_abs_input`` without ``scale``): ``finfo(dtype).max / (2 d w_max (1 + d eps))``, so ``w . x``
        cannot overflow; ``w_max`` = ``sqrt(2 gamma) 8.66`` (rbf) or ``gamma 5.7e15`` (laplacian)."""
        w_max = self.max_abs_frequency
        if w_max is None:  # gamma="scale" before fit: any finite value (the statistics bound their own)
            return None
        return projection_bound(self.dtype, int(self.n_features_in_), w_max)

    @property
    def max_abs_frequency(self):
        """Largest ``|w|`` a frequency can take (None before gamma="scale" is fitted)."""
        gamma = self._gamma()
        if gamma is None:
            return None
        return math.sqrt(2.0 * gamma) * NORMAL_MAX if self.kernel == "rbf" else gamma * CAUCHY_MAX

    def _tables(self):
        """(W of shape (d, k), phase of shape (k,)) in the output dtype; cached per process.

        With ``feature_ids`` or ``density < 1``, W is built for the given ids (a dense table, or
        :class:`._sparse.SparseFrequencies`)."""
        if self.feature_ids is not None or float(self.density) < 1.0:
            return self._subset_tables()
        seed, gamma = np.uint64(self.seed), self._gamma()

        def fill(W):
            if self.kernel == "rbf":
                normal_table(seed, STREAM_GAUSSIAN, *W.shape, np.sqrt(2.0 * gamma), W)
            else:
                cauchy_table(seed, STREAM_CAUCHY, *W.shape, gamma, W)

        return projection_tables(self, (gamma, self.kernel), fill, STREAM_PHASE)

    def transform_block(self, X: Any, row_offset: int = 0) -> np.ndarray:
        """Features of a validated block: ndarray (n, n_components) of ``output_dtype_``."""
        return self._transform_into(X, None, row_offset)

    def _transform_phases(self, X):
        """The public transform of dense input in tiles (:func:`._fourier.projection_tiles`), each
        tile's product and cosine one task; None (row blocks) for other maps and inputs."""
        if sp.issparse(X) or not tiled(self):
            return None
        W, phase = self._tables()
        X = X.astype(self.output_dtype_, copy=False)
        out = np.empty((X.shape[0], int(self.n_components)), dtype=self.output_dtype_)
        factor = self.output_dtype_.type(np.sqrt(2.0 / self.n_components))
        ones = np.ones(X.shape[0])

        def tile(a, b, c0, c1):
            np.matmul(X[a:b], W[:, c0:c1], out=out[a:b, c0:c1])
            shift_cos32v2_tile(out, a, b, c0, c1, ones, phase, factor)

        product = product_on_blas(self, X, W, out)
        if product is not None:  # many rows: the product with the BLAS's threads, then the cosine
            k = int(self.n_components)
            return out, [product, [partial(shift_cos32v2_tile, out, a, b, 0, k, ones, phase, factor)
                                   for a, b in row_blocks(X.shape[0])]]
        return out, [[partial(tile, *t) for t in projection_tiles(self, X.shape[0])]]

    def _transform_into(self, X, out, row_offset=0):
        """:meth:`transform_block` written into ``out`` (or a new array when None)."""
        W, phase = self._tables()
        P = projection(X, W, self.output_dtype_, out)
        factor = self.output_dtype_.type(np.sqrt(2.0 / self.n_components))
        if self.cosine_ == "cos32v2":
            shift_cos32v2_rows(P, np.ones(P.shape[0]), phase, factor)
            return P
        if self.cosine_ == "cos32":
            affine_cos32_rows(P, np.ones(P.shape[0]), phase, factor)
            return P
        for part in row_chunks(P):
            part += phase
            np.cos(part, out=part)
            part *= factor
        return P

    def _subset_tables(self):
        seed, gamma, d = np.uint64(self.seed), self._gamma(), int(self.n_features_in_)
        ids = self.feature_ids_or_range()
        rbf = self.kernel == "rbf"
        scale = np.sqrt(2.0 * gamma) if rbf else gamma
        stream = STREAM_GAUSSIAN if rbf else STREAM_CAUCHY

        def build():
            phase = phases_of(seed, STREAM_PHASE, ids).astype(self.dtype)
            if float(self.density) < 1.0:
                idx = sparse_support(seed, STREAM_SUPPORT, ids, d, self.n_nonzero_)
                return SparseFrequencies(idx, sparse_values(seed, stream, not rbf, ids, idx, scale), d), phase
            W = np.empty((d, ids.size))
            (normal_columns if rbf else cauchy_columns)(seed, stream, ids, d, scale, W)
            return W.astype(self.dtype), phase

        key = (self.seed, d, self.dtype, gamma, self.kernel, float(self.density), ids.tobytes())
        return cached_table(self, key, build)
