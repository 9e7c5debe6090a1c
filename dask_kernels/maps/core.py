"""CoRE hashing: minwise hashes plus random projections that linearize the CoRE kernels.

Each row is scaled to unit length, ``u = x / ||x||``. For hash j (Li, "CoRE kernels", 2014):

* ``L_j(u)``: the minwise location, the nonzero coordinate i of smallest rank
  ``rank(seed, STREAM_RANK, i, j)`` (a counter-based 64-bit hash: no stored permutation, so any
  dimension up to 2**31 costs nothing per dimension); ties go to the smaller i;
* ``V_j(u) = u[L_j]``, its value;
* ``P_j(u) = sum_i u_i r_ij`` with ``r_ij = normal(seed, STREAM_PROJ, i, j)`` (Box-Muller of
  :mod:`dask_kernels.rng`), summed in float64 in increasing i.

Estimators (``f`` = number of nonzeros):

    K1^ = (1/k) sum_j P_j(u) P_j(v) 1{L_j(u) = L_j(v)}                  E = rho R
    K2^ = (sqrt(f1 f2) / k) sum_j V_j(u) V_j(v) 1{L_j(u) = L_j(v)}      E = rho sqrt(f1 f2) / (f1 + f2 - a)

Stored layout (one float32 row of width 2k, so featurize and stores keep one plain array):
columns ``[0, k)`` hold the codes ``L_j mod 2**bits`` (integers below 2**16, exact in float32),
columns ``[k, 2k)`` the values, ``P_j(u)`` (type 1) or ``V_j(u) sqrt(f)`` (type 2). ``expand``
turns that into the CSR a linear learner consumes: for hash j, column ``j 2**bits + code_j``
holds ``value_j / sqrt(k)``, so the inner product of two rows' features is the estimate above
with locations compared on their lowest ``bits`` bits.

Cost: O(nnz k) per row (a rank and, for type 1, one Box-Muller draw per nonzero and hash); dense
and CSR input visit the same nonzeros in the same order with the same arithmetic, so they give
identical bytes, in any block and any process.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import njit
from .._estimator import check_is_fitted
from .._params import Interval, ParameterConstraints, StrOptions

from ..rng import bits, index_key, normal_of_key, register_stream, stream_key
from ._bounds import MAX_CENTERED_FEATURES, components_interval
from ._parallel import N_JOBS_CONSTRAINT
from ._partitioned import dask_rows, is_dask, is_partitions, n_features_of
from ._scaling import (SCALE_MAX, apply_scale, fitted_scale, fitted_scale_partitioned, fitted_shift_factor,
                       refuse_wide_scale, state_to_stats)
from .base import FeatureMap
from .._docstrings import fill_doc

STREAM_RANK = register_stream("core.rank", 61)
STREAM_PROJ = register_stream("core.projection", 62)
#: Rows hashed per kernel call in ``transform_block``: bounds its int64/float64 scratch
#: (24 bytes per row and hash) whatever the block size.
_ROWS_PER_CALL = 1024
_NO_RANK = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(nogil=True, cache=True, inline="always")
def _visit(i, u, rkey, pkey, project, best, loc, val, proj):
    """Offer nonzero (i, u) to every hash: minwise update, and its term of every projection."""
    ikey = index_key(rkey, np.uint64(i))
    for j in range(best.size):
        h = bits(ikey, np.uint64(j))
        if h < best[j] or loc[j] < 0:
            best[j] = h
            loc[j] = i
            val[j] = u
    if project:
        pk = index_key(pkey, np.uint64(i))
        for j in range(best.size):
            proj[j] += u * normal_of_key(pk, np.uint64(j))


@njit(nogil=True, cache=True, inline="always")
def _reset(best, loc, val, proj):
    best[:] = _NO_RANK
    loc[:] = -1
    val[:] = 0.0
    proj[:] = 0.0


@njit(nogil=True, cache=True)
def _core_dense(X, rkey, pkey, project, loc_o, val_o, proj_o, f_o):
    """Hash every row of a dense block: loc_o (int64, -1 for an all-zero row), val_o, proj_o
    (float64, (n, k)) and f_o (nonzeros per row)."""
    k = loc_o.shape[1]
    best = np.empty(k, np.uint64)
    loc = np.empty(k, np.int64)
    val = np.empty(k)
    proj = np.empty(k)
    for r in range(X.shape[0]):
        m = 0.0
        for i in range(X.shape[1]):
            m = max(m, abs(np.float64(X[r, i])))
        s = 0.0
        f = 0
        if m > 0.0:
            for i in range(X.shape[1]):
                t = np.float64(X[r, i]) / m
                s += t * t
                f += X[r, i] != 0
        inv = 1.0 / np.sqrt(s) if s > 0.0 else 0.0
        _reset(best, loc, val, proj)
        for i in range(X.shape[1]):
            v = np.float64(X[r, i])
            if v != 0.0:
                _visit(i, (v / m) * inv, rkey, pkey, project, best, loc, val, proj)
        loc_o[r] = loc
        val_o[r] = val
        proj_o[r] = proj
        f_o[r] = f


@njit(nogil=True, cache=True)
def _core_csr(data, indices, indptr, rkey, pkey, project, loc_o, val_o, proj_o, f_o):
    """As :func:`_core_dense` for a canonical CSR block (sorted, unique indices)."""
    k = loc_o.shape[1]
    best = np.empty(k, np.uint64)
    loc = np.empty(k, np.int64)
    val = np.empty(k)
    proj = np.empty(k)
    for r in range(indptr.size - 1):
        m = 0.0
        for q in range(indptr[r], indptr[r + 1]):
            m = max(m, abs(np.float64(data[q])))
        s = 0.0
        f = 0
        if m > 0.0:
            for q in range(indptr[r], indptr[r + 1]):
                t = np.float64(data[q]) / m
                s += t * t
                f += data[q] != 0
        inv = 1.0 / np.sqrt(s) if s > 0.0 else 0.0
        _reset(best, loc, val, proj)
        for q in range(indptr[r], indptr[r + 1]):
            v = np.float64(data[q])
            if v != 0.0:
                _visit(np.int64(indices[q]), (v / m) * inv, rkey, pkey, project, best, loc, val, proj)
        loc_o[r] = loc
        val_o[r] = val
        proj_o[r] = proj
        f_o[r] = f


@fill_doc
class CoRE(FeatureMap):
    """CoRE hashing: features whose inner products estimate the CoRE kernels.

    The CoRE kernels combine the cosine ``rho`` of two rows with the resemblance ``R`` of their
    nonzero patterns (:func:`dask_kernels.core_kernel`): a natural kernel for sparse,
    high-dimensional data such as text. Each of the k hashes is a minwise hash of the pattern
    (location ``L_j``, value ``V_j``) and, for type 1, a Gaussian random projection ``P_j``;
    everything is recomputed from ``(seed, j, i)`` by the counter-based generator, so nothing
    per dimension is stored or shipped.

    Parameters
    ----------
    n_components : int, default=256
        Number of hashes k, at most 2**20.
    type : {1, 2}, default=1
        1 estimates ``K1 = rho R`` (stored value ``P_j(u)``); 2 estimates
        ``K2 = rho sqrt(f1 f2) / (f1 + f2 - a)`` (stored value ``V_j(u) sqrt(f)``).
    bits : int, default=8
        Code width b (1 to 16): the lowest b bits of ``L_j``. Two rows whose locations differ
        but agree on b bits also "collide", which biases the expanded estimate upwards by about
        ``(1 - R) 2**-b`` times the value products; :meth:`sample` gives the full locations.
    %(seed)s
    output : {"codes", "onehot"}, default="codes"
        What ``transform`` returns: the stored float32 layout of shape (n, 2k) (codes, then
        values), or its expansion (CSR of shape (n, k * 2**bits)). Pipelines and stores always
        keep the stored layout; :meth:`expand` converts.
    scale : {"auto", "maxabs"} or None, default="auto"
        Per-feature scaling learned in ``fit`` from all training rows: "maxabs" divides each
        column by its largest training ``|x|`` before the rows are hashed. The cosine in CoRE's
        kernels is not invariant to per-feature units (a column measured in large units
        dominates every row's direction), while the nonzero pattern, and so the resemblance,
        is unchanged (zeros stay zeros; a shift would destroy the pattern, so there is no
        "minmax"). "auto": "maxabs" for input of at most 2**20 features, else no scaling (the
        statistics, a dense vector, would not fit the spec). None: no scaling, the map of
        specs written before this parameter existed (a spec without ``scale`` is read as None).
        The statistics are column maxima, exact, so the spec is the same bits for any chunking;
        a dask array or partitioned sparse input is read once to compute them. A column that is
        zero on every training row gets factor 1.
    %(n_jobs)s

    Attributes
    ----------
    n_features_in_ : int
    scale_ : dict or None
        The fitted scaling, ``{"rule": "maxabs", "max_abs": [...]}``, or None.
    n_output_features_ : int
        ``2 * n_components``: k codes then k values.
    output_dtype_ : numpy.dtype
        float32.

    Notes
    -----
    * Input is checked once per block (NaN, infinity, complex, malformed sparse structure,
      width). Any finite value is accepted (``max_abs_input`` is None): rows are divided by their
      largest ``|x|`` before the norm is taken.
    * An all-zero row has no pattern: its codes are 0 and its values 0, so its estimated kernel
      with any row is 0, as :func:`dask_kernels.core_kernel` defines it.
    * The variance of the type-1 estimate with full locations is
      ``(1/k) [(1 + 2 rho^2) R - rho^2 R^2]``.

    %(core_references)s

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import CoRE
    >>> X = np.array([[1.0, 0.0, 2.0, 0.0], [0.5, 0.0, 1.0, 3.0]])
    >>> core = CoRE(n_components=4, type=1, bits=8, seed=0).fit(X)
    >>> stored = core.transform(X)
    >>> stored.shape, stored.dtype
    ((2, 8), dtype('float32'))
    >>> F = core.expand(stored)
    >>> F.shape, F.nnz
    ((2, 1024), 8)
    """

    method = "core"
    _parameter_constraints = ParameterConstraints({
        "n_components": components_interval(),
        "type": [Interval(numbers.Integral, 1, 2, closed="both")],
        "bits": [Interval(numbers.Integral, 1, 16, closed="both")],
        "seed": [Interval(numbers.Integral, 0, 2**64 - 1, closed="both")],
        "output": [StrOptions({"codes", "onehot"})],
        "scale": [None, StrOptions({"auto", "maxabs"})],
        **N_JOBS_CONSTRAINT,
    })
    #: specs written before scaling existed have no ``scale``: they rebuild the unscaled map
    _spec_omitted = {"scale": None}

    def __init__(self, *, n_components: int = 256, type: int = 1, bits: int = 8, seed: int = 0,
                 output: str = "codes", scale: str | None = "auto", n_jobs: int | None = None) -> None:
        self.n_components = n_components
        self.n_jobs = n_jobs
        self.type = type
        self.bits = bits
        self.seed = seed
        self.output = output
        self.scale = scale

    def _validate_params_extra(self):
        if isinstance(self.type, bool):
            raise ValueError(f"type must be 1 or 2, got {self.type!r}")

    # -- scaling ------------------------------------------------------------------------------
    @property
    def max_abs_input(self) -> float | None:
        """None without scaling (rows are divided by their largest ``|x|``); with it ``2**1022``,
        the bound of :mod:`dask_kernels.maps._scaling`."""
        return None if getattr(self, "scale_", self.scale) is None else SCALE_MAX

    @property
    def fits_partitioned(self) -> bool:
        """Whether ``featurize`` and ``fit_incremental`` fit an unfitted clone on all rows (one
        pass for the scale statistics) rather than on the first block."""
        return self.scale is not None

    def _scales(self, n_features):
        return self.scale == "maxabs" or (self.scale == "auto" and n_features <= MAX_CENTERED_FEATURES)

    def _check_width(self, n_features):
        refuse_wide_scale("CoRE", self.scale, n_features)

    def fit(self, X: Any, y: Any = None) -> CoRE:
        """Validate parameters and input, and learn the scale statistics.

        Parameters
        ----------
        X : array-like, sparse matrix, dask array, dask DataFrame or SparsePartitions of shape (n_samples, n_features)
            With a scale, dask arrays and partitioned sparse input are read once, block by
            block, on the active Dask scheduler; the spec does not depend on the chunking.
        y : ignored

        Returns
        -------
        self
        """
        X = dask_rows(X)
        if not (is_dask(X) or is_partitions(X)):
            return super().fit(X, y)
        self._validate_params()
        self._validate_params_extra()
        d = n_features_of(X)
        self._check_width(d)
        # without a scale nothing is learned from the rows: none is read (svmlight partitions
        # wider than 2**20 columns are no array to validate whole)
        self.scale_ = fitted_scale_partitioned("maxabs", X, "CoRE")[0] if self._scales(d) else None
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = d
        self.is_fitted_ = True
        return self

    def _fit(self, X):
        self.scale_ = fitted_scale("maxabs" if self._scales(X.shape[1]) else None, X)

    def _factor(self):
        sf = fitted_shift_factor(getattr(self, "scale_", None), self.n_features_in_)
        return None if sf is None else sf[1]  # maxabs: no shift

    def _fitted_state(self):
        return {} if self.scale is None else {"scale": self.scale_}  # scale=None: specs as before

    def _validate_state(self, state):
        keys = set() if self.scale is None else {"scale"}
        if set(state) != keys:
            raise ValueError(f"feature-map spec['state']: expected the keys {sorted(keys)} (spec['params']['scale'] "
                             f"is {self.scale!r}), got {sorted(state)}")
        if state.get("scale") is not None:
            state_to_stats(state["scale"], int(self.n_features_in_), "feature-map spec['state']['scale']")
            if state["scale"]["rule"] != "maxabs":
                raise ValueError("feature-map spec['state']['scale']: CoRE scales by 'maxabs' only, got rule "
                                 f"{state['scale']['rule']!r}")

    def _set_fitted_state(self, state):
        self.scale_ = state.get("scale")

    @property
    def n_output_features_(self) -> int:
        return 2 * int(self.n_components)

    @property
    def output_dtype_(self) -> np.dtype:
        return np.dtype(np.float32)

    def _keys(self):
        seed = np.uint64(self.seed)
        return np.uint64(stream_key(seed, np.uint64(STREAM_RANK))), np.uint64(stream_key(seed, np.uint64(STREAM_PROJ)))

    # -- hashing ------------------------------------------------------------------------------
    def _hash(self, X, project):
        """(L, V, P, f) of a validated block; L is -1 on all-zero rows, P is empty without
        ``project``."""
        k, n = int(self.n_components), X.shape[0]
        loc = np.empty((n, k), np.int64)
        val = np.empty((n, k))
        proj = np.empty((n, k) if project else (0, 0))
        f = np.empty(n, np.int64)
        rkey, pkey = self._keys()
        p_out = proj if project else np.empty((n, k))
        if sp.issparse(X):
            _core_csr(X.data, X.indices, X.indptr, rkey, pkey, project, loc, val, p_out, f)
        else:
            _core_dense(X, rkey, pkey, project, loc, val, p_out, f)
        return loc, val, proj, f

    def sample(self, X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Full minwise locations, values and projections of every row.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        locations : ndarray of int64, shape (n_samples, n_components)
            ``L_j`` (an input column), -1 for an all-zero row.
        values : ndarray of float64, shape (n_samples, n_components)
            ``V_j`` (an entry of the unit-length row).
        projections : ndarray of float64, shape (n_samples, n_components)
            ``P_j`` (computed for both types).
        nnz : ndarray of int64, shape (n_samples,)
            ``f``, the number of nonzeros of each row.
        """
        check_is_fitted(self)
        X = self._validate_input(X, reset=False)
        factor = self._factor()
        return self._hash(X if factor is None else apply_scale(X, None, factor), project=True)

    def transform_block(self, X: np.ndarray | sp.csr_matrix, row_offset: int = 0) -> np.ndarray:
        """Stored layout of a validated block: float32 (n, 2k), codes then values."""
        k = int(self.n_components)
        out = np.empty((X.shape[0], 2 * k), np.float32)
        factor = self._factor()
        for a in range(0, X.shape[0], _ROWS_PER_CALL):  # bounded float64 scratch per call
            b = min(X.shape[0], a + _ROWS_PER_CALL)
            rows = X[a:b] if factor is None else apply_scale(X[a:b], None, factor)  # scaled per call: bounded
            loc, val, proj, f = self._hash(rows, project=self.type == 1)
            out[a:b, :k] = np.where(loc >= 0, loc & (2**self.bits - 1), 0)
            out[a:b, k:] = proj if self.type == 1 else val * np.sqrt(f.astype(np.float64))[:, None]
        return out

    def expand(self, block: np.ndarray) -> sp.csr_matrix:
        """The linear features of stored rows: CSR of shape (n, k * 2**bits), float32, k
        entries per row; hash j puts ``value_j / sqrt(k)`` at column ``j * 2**bits + code_j``.

        Raises
        ------
        ValueError
            If ``block`` is not (n, 2k) or a code is not an integer in ``[0, 2**bits)`` (naming
            the row and hash).
        """
        k, b = int(self.n_components), int(self.bits)
        block = np.asarray(block)
        if block.ndim != 2 or block.shape[1] != 2 * k:
            raise ValueError(f"CoRE.expand: expected stored rows of shape (n, {2 * k}), got {block.shape}")
        codes = block[:, :k]
        bad = ~((codes >= 0) & (codes < 2**b) & (codes == np.floor(codes)))
        if bad.any():
            r, j = np.argwhere(bad)[0]
            raise ValueError(f"CoRE.expand: row {int(r)}, hash {int(j)}: code {codes[r, j]!r} is not an integer in "
                             f"[0, 2**{b}): were these rows made by this map?")
        n = block.shape[0]
        cols = (np.arange(k, dtype=np.int64) << b) + codes.astype(np.int64)
        data = (block[:, k:].astype(np.float32) * np.float32(1.0 / np.sqrt(k))).ravel()
        return sp.csr_matrix((data, cols.ravel(), np.arange(0, n * k + 1, k, dtype=np.int64)), shape=(n, k << b))

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """``core_code{j}`` and ``core_value{j}`` for the stored layout; ``core{j}_{code}`` one-hot."""
        super().get_feature_names_out(input_features)  # checks input_features
        k = int(self.n_components)
        if self.output == "codes":
            return np.asarray([f"core_code{j}" for j in range(k)] + [f"core_value{j}" for j in range(k)], dtype=object)
        return np.asarray([f"core{j}_{c}" for j in range(k) for c in range(2**self.bits)], dtype=object)
