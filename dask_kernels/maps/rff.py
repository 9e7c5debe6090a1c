"""Random Fourier features (Rahimi-Recht) for the Gaussian and Laplacian kernels.

Random streams under the map's seed (``dask_kernels.rng``, scheme dk-rng-1):

* stream 21: Gaussian frequencies, ``W[i, j] = sqrt(2 gamma) * normal(seed, 21, j, i)``
* stream 22: Laplacian frequencies, ``W[i, j] = gamma * tan(pi (uniform(seed, 22, j, i) - 1/2))``
* stream 23: phases, ``b[j] = 2 pi * unit64(bits(index_key(stream_key(seed, 23), j), 0))``

Feature j depends only on (seed, j), so a wider map extends a narrower one, and input
dimension i only on (seed, j, i).
"""


import numpy as np
import scipy.sparse as sp
from .._compat import StrOptions

import math

from ._fourier import CAUCHY_MAX, COMMON_CONSTRAINTS, NORMAL_MAX, POSITIVE_FINITE, FloatFeatures, cauchy_table
from ._fourier import normal_table, projection_bound, projection_tables, row_chunks
from ._cos32 import affine_cos32_rows
from .base import FeatureMap
from ..rng import register_stream

STREAM_GAUSSIAN = register_stream("rff.gaussian", 21)
STREAM_CAUCHY = register_stream("rff.cauchy", 22)
STREAM_PHASE = register_stream("rff.phase", 23)


def projection(X, W, dtype):
    """``X @ W`` for a dense or CSR block, C-contiguous in ``dtype`` (BLAS for dense input)."""
    X = X.astype(dtype, copy=False)
    return np.ascontiguousarray(X @ W if not sp.issparse(X) else np.asarray(X @ W), dtype=dtype)


class RFF(FloatFeatures, FeatureMap):
    """Random Fourier features for ``exp(-gamma ||x - y||^2)`` or ``exp(-gamma ||x - y||_1)``.

    ``z_j(x) = sqrt(2 / k) * cos(w_j . x + b_j)`` for j < k = ``n_components``, with
    ``b_j ~ U(0, 2 pi)`` and ``w_j ~ N(0, 2 gamma I)`` (``kernel="rbf"``, scikit-learn's
    ``RBFSampler`` convention) or ``w_ji ~ Cauchy(0, gamma)`` i.i.d. (``kernel="laplacian"``).
    Then ``E[z(x) . z(y)] = k(x, y)`` and, for the Gaussian kernel, a single product has
    variance ``1/2 + 1/2 (1 - k(x, y)^2)^2``, so the estimate's variance is that over k.

    Parameters
    ----------
    n_components : int, default=100
        Output width k, exactly.
    gamma : float, default=1.0
        Kernel parameter (> 0).
    kernel : {"rbf", "laplacian"}, default="rbf"
    seed : int, default=0
        Seed of the counter-based random numbers (0 <= seed < 2**64).
    dtype : {"float32", "float64"}, default="float32"
        Output dtype, also the precision of the projection (float32 uses SGEMM).
    n_jobs : int or None, default=None
        Threads of :meth:`transform` over row blocks of in-memory input: None is every usable
        CPU when called from the main thread and one otherwise (never nested inside Dask tasks
        or your own pool), -1 every CPU, -2 all but one. The output is bitwise identical for
        any value; it is not part of :meth:`spec` (it changes speed, not features).

    Attributes
    ----------
    n_features_in_ : int
    n_output_features_ : int
        ``n_components``.
    output_dtype_ : numpy.dtype

    Notes
    -----
    The projection is a BLAS matrix product, whose rounding may depend on the block shape: a
    row's features agree across chunkings to about 1e-6 relative to ``|w . x|`` in float32
    (tests use ``atol = 1e-5 * (1 + max |w . x + b|) * sqrt(2 / k)``), and exactly between dense and CSR input only
    up to the same rounding. Input must be finite with ``|x| <= max_abs_input``
    (``finfo(dtype).max / (2 d w_max (1 + d eps))``, beyond which ``w . x`` may overflow: 1.8e34
    for float32, d = 784, gamma = 1; 3.8e19 for the Laplacian kernel); other values raise
    ``ValueError`` naming the row and column. The (d, k) frequency matrix is computed once per process from the
    seed and cached; it is not part of the spec or of a pickle.

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
    """

    method = "rff"
    _parameter_constraints = {
        **COMMON_CONSTRAINTS,
        "gamma": [POSITIVE_FINITE],
        "kernel": [StrOptions({"rbf", "laplacian"})],
    }

    def __init__(self, *, n_components=100, gamma=1.0, kernel="rbf", seed=0, dtype="float32", n_jobs=None):
        self.n_components = n_components
        self.gamma = gamma
        self.kernel = kernel
        self.seed = seed
        self.dtype = dtype
        self.n_jobs = n_jobs

    @property
    def max_abs_input(self):
        """Largest accepted ``|x|``: ``finfo(dtype).max / (2 d w_max (1 + d eps))``, so ``w . x``
        cannot overflow; ``w_max`` = ``sqrt(2 gamma) 8.66`` (rbf) or ``gamma 5.7e15`` (laplacian)."""
        gamma = float(self.gamma)
        w_max = math.sqrt(2.0 * gamma) * NORMAL_MAX if self.kernel == "rbf" else gamma * CAUCHY_MAX
        return projection_bound(self.dtype, int(self.n_features_in_), w_max)

    def _tables(self):
        """(W of shape (d, k), phase of shape (k,)) in the output dtype; cached per process."""
        seed, gamma = np.uint64(self.seed), float(self.gamma)

        def fill(W):
            if self.kernel == "rbf":
                normal_table(seed, STREAM_GAUSSIAN, *W.shape, np.sqrt(2.0 * gamma), W)
            else:
                cauchy_table(seed, STREAM_CAUCHY, *W.shape, gamma, W)

        return projection_tables(self, (gamma, self.kernel), fill, STREAM_PHASE)

    def transform_block(self, X, row_offset=0):
        """Features of a validated block: ndarray (n, n_components) of ``output_dtype_``."""
        W, phase = self._tables()
        P = projection(X, W, self.output_dtype_)
        factor = self.output_dtype_.type(np.sqrt(2.0 / self.n_components))
        if self.cosine_ == "cos32":
            affine_cos32_rows(P, np.ones(P.shape[0]), phase, factor)
            return P
        for part in row_chunks(P):
            part += phase
            np.cos(part, out=part)
            part *= factor
        return P
