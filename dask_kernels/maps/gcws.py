"""GCWS: generalized consistent weighted sampling, linearizing the GMM kernel (Li, KDD 2017).

Each row is sign-split into a nonnegative vector ``x~`` of length 2D (``x~[2i]`` the positive
part of feature i, ``x~[2i+1]`` the negative part), then hashed k times with Ioffe's ICWS
(Algorithm 1 of the paper). For hash j and every nonzero split index s:

    r, c ~ Gamma(2, 1),  beta ~ U(0, 1)         (functions of (seed, s, j) only)
    t = floor(log(x~_s) / r + beta)
    a = log(c) - r (t + 1 - beta)
    (i*_j, t*_j) = (s, t) at the smallest a

``P[(i*, t*)(x) == (i*, t*)(y)] = GMM(x, y)``. The code of hash j is the lowest ``bits`` bits of
i*_j; a linear learner sees it as a one-hot block of length 2**bits.

Random parameters: stream ``STREAM`` of :mod:`dask_kernels.rng`, index = split index s,
words ``3j`` (r), ``3j + 1`` (c) and ``3j + 2`` (beta); r and c are ``gamma2_f32`` of their word,
``beta = unit32`` of its word. The table path stores exactly these values for every split index
of a moderate dimension; the hash path recomputes them per nonzero, so sparse input of any
dimension (up to 2**31) needs no per-dimension memory. Both run the same update code, so they
give identical codes.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from .._estimator import check_is_fitted
from .._params import Interval, ParameterConstraints, StrOptions

from ._bounds import MAX_CENTERED_FEATURES, MAX_TABLE_BYTES, components_interval, refuse_above
from ._dart import DART_SCHEME, K_MAX, check_scheme, fit_scale, table_nbytes
from ._fourier import cached_table
from ._gcws_kernels import (  # noqa: F401  (the kernels and their constants, re-exported)
    CENTER_MAX, DART_TABLE_BYTES_LIMIT, ROW_GROUP, STREAM, TABLE_BYTES_LIMIT, GCWSPlan, _build_table, _gcws_csr,
    _gcws_dense, _hash_params, _parameter_table, code_dtype)
from ._parallel import N_JOBS_CONSTRAINT
from ._partitioned import dask_rows, is_dask, is_partitions, n_features_of
from ._scaling import (AUTO_RULES, RULES, apply_scale, check_scale_state, fitted_scale, fitted_scale_partitioned,
                       fitted_shift_factor, refuse_wide_scale, scale_rule)
from .base import FeatureMap
from .._docstrings import fill_doc



def _check_center(center, key, n_features=None):
    """A center vector as float64, or ValueError naming ``key``: 1-D numbers, finite, within
    ``CENTER_MAX``, of length ``n_features`` when given (the kernel reads ``center[i]`` for
    every input column)."""
    try:
        c = np.asarray(center, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{key}: expected a list of numbers") from None
    if c.ndim != 1 or (n_features is not None and c.shape[0] != n_features):
        raise ValueError(f"{key}: has shape {c.shape}, expected ({n_features if n_features is not None else 'd'},)")
    bad = np.flatnonzero(~(np.abs(c) <= CENTER_MAX))
    if bad.size:
        raise ValueError(f"{key}: entry {int(bad[0])} is {float(c[bad[0]])!r}, expected a finite number of magnitude "
                         f"at most 2**1022")
    return c


def _dask_sparse(X):
    """Whether a dask array's blocks are sparse matrices (its ``_meta``)."""
    return sp.issparse(getattr(X, "_meta", None))


def expand_codes(codes: npt.ArrayLike, bits: int) -> sp.csr_matrix:
    """One-hot expansion of b-bit codes: CSR of shape (n, k * 2**bits), exactly k ones per row.

    Hash j with code c sets column ``j * 2**bits + c``. This is what a linear learner consumes;
    the inner product of two expanded rows counts matching codes.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import expand_codes
    >>> expand_codes(np.array([[3, 0]], dtype=np.uint8), bits=2).toarray()
    array([[0., 0., 0., 1., 1., 0., 0., 0.]], dtype=float32)
    """
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError(f"codes must be 2-D (rows, hashes), got shape {codes.shape}")
    if codes.size and int(codes.max()) >= 2**bits:
        raise ValueError(f"a code is >= 2**bits = {2**bits}: were these codes made with bits={bits}?")
    n, k = codes.shape
    # int32 indices whenever they fit: SciPy would copy int64 ones down to int32 anyway (5x the time)
    idx = np.int32 if max(k << bits, n * k) < 2**31 else np.int64
    cols = (np.arange(k, dtype=idx) << bits) + codes.astype(idx)
    return sp.csr_matrix(
        (np.ones(n * k, dtype=np.float32), cols.ravel(), np.arange(0, n * k + 1, k, dtype=idx)),
        shape=(n, k << bits),
    )


@fill_doc
class GCWS(FeatureMap):
    """Generalized consistent weighted sampling: b-bit codes that linearize the GMM kernel.

    The expected fraction of matching ``(i*, t*)`` samples of two rows equals their GMM kernel
    (:func:`dask_kernels.gmm_kernel`); the b-bit codes expanded one-hot give a linear learner
    that kernel's accuracy at linear cost.

    Parameters
    ----------
    n_components : int, default=256
        Number of hashes k, at most 2**20. With a center, the input may have at most 2**20
        features (``dask_kernels.maps._bounds``).
    bits : int, default=8
        Code width b (1 to 16): the lowest b bits of i*. Codes are uint8 for b <= 8, else uint16.
    %(seed)s
    center : None, "mean" or array-like of shape (n_features,), default=None
        Vector subtracted from every row before the sign split; "mean" learns the column means
        in ``fit``. With sparse input the block is densified after centering. A center replaces
        the scaling: ``scale="auto"`` then scales nothing, and another ``scale`` is refused.
    output : {"codes", "onehot"}, default="codes"
        What ``transform`` returns: codes of shape (n, k), or their one-hot expansion as CSR of
        shape (n, k * 2**bits). Pipelines and stores always keep codes.
    table : {"auto", True, False}, default="auto"
        Cache the random parameters of every split index in a table (fast for dense and
        moderate-dimension input). "auto" uses the table when it needs at most 256 MiB
        (``sampler="dart"``: its first darts of every split index, at most 16 MiB, e.g. up to
        about 3,800 features for 256 hashes). Codes are identical either way.
    sampler : {"icws", "dart"}, default="icws"
        "icws": Ioffe's ICWS as above (O(nnz * k) per row; the code is the lowest b bits of
        i*). "dart": DartMinHash (Christiani 2020) on the same sign-split vector, expected
        O(k log k + nnz) per row; its sample is the winning dart's 64-bit id word and the code
        is its lowest b bits, so codes collide with probability ``GMM + (1 - GMM) 2**-b`` (see
        ``dask_kernels.maps._dart``). ``fit`` sets its unit of weight from the largest row's
        split l1 norm; rows up to about 800 times that norm are accepted (cost grows with the
        norm above 80 % of it). At most 2**20 hashes. The two samplers give different codes for the same
        seed; the spec records the sampler and the dart scheme version ("icws" specs stay
        exactly as before).
    scale : {"auto", "auto_standard", "minmax", "maxabs", "standard"} or None, default="auto"
        Per-feature scaling learned in ``fit`` from all training rows (GMM is not invariant to
        per-feature offsets and units): "minmax" maps each column's training range onto
        [-1, 1] (``x' = (x - mid) / half_range``); "maxabs" divides each column by its largest
        ``|x|`` (zeros stay zeros, sparse stays sparse); "standard" centres each column on its
        mean and divides it by its standard deviation (``StandardScaler``; sparse input is
        densified); "auto" is "minmax" for dense input with more than half of its entries
        nonzero, else "maxabs" (mostly-zero rows, e.g. images, lose accuracy when their zeros
        are shifted, and centred they are dense, which costs time in proportion), and "maxabs"
        for sparse input; input of more than 2**20 features is not scaled (the statistics would
        not fit the spec); "auto_standard" is "auto" with "standard" in place
        of "minmax" (the default of ``dask-kernels train`` on dense rows, measured more
        accurate there). A constant column gets factor 1. None: no scaling, the map of specs
        written before this parameter existed (a spec without ``scale`` is read as None). The statistics
        are column minima and maxima (or, for "standard", column sums), exact, so the
        spec is bitwise the same for any chunking of the rows; a dask array or partitioned
        sparse input is read once to compute them. See :mod:`dask_kernels.maps._scaling`.
    %(n_jobs)s

    Attributes
    ----------
    n_features_in_ : int
    center_ : ndarray of shape (n_features,) or None
    scale_ : dict or None
        The fitted scaling: ``{"rule": "minmax", "min": [...], "max": [...]}`` or
        ``{"rule": "maxabs", "max_abs": [...]}`` or ``{"rule": "standard", "mean": [...], "std":
        [...]}``; None without scaling.
    n_output_features_ : int
        Width of ``transform_block`` (stored codes): ``n_components``.
    output_dtype_ : numpy.dtype
        uint8 or uint16.

    Notes
    -----
    * Negative values are handled by the sign split; rows need not be normalized (GMM is
      scale-invariant: ``GMM(c x, c y) = GMM(x, y)`` for c > 0).
    * An all-zero row has no nonzero to sample: it gets the reserved sample ``i* = -1,
      t* = 0``, so its code is ``2**bits - 1`` (the lowest bits of -1). Two all-zero rows
      collide on every hash, matching ``gmm_kernel``'s convention GMM(0, 0) = 1.
    * Input is checked once per block: NaN, infinity, complex values, malformed sparse
      structure and a wrong width raise ``ValueError`` naming the row (and column). Without a
      center any finite value is accepted (``max_abs_input`` is None); with one, ``|x|`` and
      ``|center|`` must be at most ``2**1022`` so that ``x - center`` is finite.
    * Cost is O(nnz * k) per row: zeros cost nothing.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import GCWS
    >>> X = np.array([[1.0, -2.0, 0.0], [2.0, -1.0, 0.5]])
    >>> gcws = GCWS(n_components=4, bits=8, seed=0).fit(X)
    >>> codes = gcws.transform(X)
    >>> codes.shape, codes.dtype
    ((2, 4), dtype('uint8'))
    >>> gcws.expand(codes).shape
    (2, 1024)
    """

    method = "gcws"
    _parameter_constraints = ParameterConstraints({
        "n_components": components_interval(),
        "bits": [Interval(numbers.Integral, 1, 16, closed="both")],
        "seed": [Interval(numbers.Integral, 0, 2**64 - 1, closed="both")],
        "center": [None, StrOptions({"mean"}), "array-like"],
        "output": [StrOptions({"codes", "onehot"})],
        "table": ["boolean", StrOptions({"auto"})],
        "sampler": [StrOptions({"icws", "dart"})],
        "scale": [None, StrOptions({*AUTO_RULES, *RULES})],
        **N_JOBS_CONSTRAINT,
    })
    #: parameters left out of the spec at these values, and read so when a spec lacks them:
    #: specs written before samplers and scaling existed rebuild the same map
    _spec_omitted = {"sampler": "icws", "scale": None}

    def __init__(
        self,
        *,
        n_components: int = 256,
        bits: int = 8,
        seed: int = 0,
        center: None | str | npt.ArrayLike = None,
        output: str = "codes",
        table: bool | str = "auto",
        sampler: str = "icws",
        scale: str | None = "auto",
        n_jobs: int | None = None,
    ) -> None:
        self.n_components = n_components
        self.bits = bits
        self.seed = seed
        self.center = center
        self.output = output
        self.table = table
        self.sampler = sampler
        self.scale = scale
        self.n_jobs = n_jobs

    # -- input contract ---------------------------------------------------------------------
    @property
    def max_abs_input(self) -> float | None:
        """None without centering or scaling; with either ``2**1022`` (4.5e307), so that
        ``x - center`` (both within the bound) cannot overflow."""
        scale = getattr(self, "scale_", self.scale)
        return None if self.center is None and scale is None else CENTER_MAX

    @property
    def fits_partitioned(self) -> bool:
        """Whether ``featurize`` and ``fit_incremental`` fit an unfitted clone on all rows (one
        pass for the scale statistics) rather than on the first block."""
        return self.scale is not None and self.center is None and self.sampler == "icws"

    def _scale_rule(self, sparse, n_features):
        """The rule ``scale`` resolves to for this input (None: no scaling; a center replaces it)."""
        return None if self.scale is None or self.center is not None else scale_rule(self.scale, sparse, n_features)

    def _validate_params_extra(self):
        if self.center is not None and self.scale not in (None, *AUTO_RULES):
            raise ValueError(f"center and scale={self.scale!r} both set the offset of every feature: give one "
                             "(scale='auto' scales nothing when a center is given)")
        if self.center is not None and not isinstance(self.center, str):
            _check_center(self.center, "center")
        if self.sampler == "dart" and self.n_components > K_MAX:
            raise ValueError(f"n_components={self.n_components}: sampler='dart' takes at most {K_MAX} hashes")

    def _check_width(self, n_features):
        d, k = int(n_features), int(self.n_components)
        if self.center is None:
            refuse_wide_scale("GCWS", self.scale, d)
        if self.center is not None:
            what = "'mean'" if isinstance(self.center, str) else "a vector"
            refuse_above(d, MAX_CENTERED_FEATURES,
                         f"GCWS: n_features_in={{value:,}} with center={what}: more than the bound of {{bound:,}} "
                         "input features with a center (it is a dense vector kept in the spec, and sparse rows are "
                         "densified to subtract it); leave center=None for wide sparse input")
        if self.table is True:
            nbytes = table_nbytes(2 * d, k) if self.sampler == "dart" else 3 * 4 * 2 * d * k
            refuse_above(nbytes, MAX_TABLE_BYTES,
                         f"GCWS: table=True with n_features_in={d:,} x n_components={k:,} needs a parameter table "
                         "of {value:,} bytes in every process that computes codes, more than the bound of {bound:,}; "
                         "use table='auto' (a table only where it is small; the same codes)")

    def _validate_state(self, state):
        if self.sampler == "dart":
            check_scheme(state)
        keys = {"center", "dart_scheme", "dart_scale"} if self.sampler == "dart" else {"center"}
        if self.scale is not None:
            keys.add("scale")
            check_scale_state(self.scale, state, self.n_features_in_)
        if "center" not in state or set(state) - keys:
            raise ValueError(f"feature-map spec['state']: expected the keys {sorted(keys)}, got {sorted(state)}")
        c = state["center"]
        key = "feature-map spec['state']['center']"
        if (c is None) != (self.center is None):
            raise ValueError(f"{key}: {'missing' if c is None else 'present'} but spec['params']['center'] is "
                             f"{self.center!r}")
        if c is not None:
            c = _check_center(c, key, int(self.n_features_in_))
            if not isinstance(self.center, str) and not np.array_equal(c, np.asarray(self.center, np.float64)):
                raise ValueError(f"{key}: differs from spec['params']['center']")

    # -- fitted state -------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> GCWS:
        """Validate parameters and input, and learn the center, the scale statistics and
        (``sampler="dart"``) the dart scale.

        Parameters
        ----------
        X : array-like, sparse matrix, dask array, dask DataFrame or SparsePartitions of shape (n_samples, n_features)
            Dask arrays and partitioned sparse input (when :attr:`fits_partitioned`) are read once,
            block by block, on the active Dask scheduler; the spec does not depend on the chunking.
        y : ignored

        Returns
        -------
        self
        """
        X = dask_rows(X)
        if isinstance(X, np.memmap) and X.ndim == 2 and self.fits_partitioned:
            import dask.array as da  # a memory-mapped file (e.g. the command line's .npy) read in 32 MiB blocks

            X = da.from_array(X, chunks=(max(1, 2**22 // max(1, X.shape[1])), -1), name=False)
        if not ((is_dask(X) or is_partitions(X)) and self.fits_partitioned):
            return super().fit(X, y)
        self._validate_params()
        self._validate_params_extra()
        d = n_features_of(X)
        self._check_width(d)
        rule = self._scale_rule(is_partitions(X) or _dask_sparse(X), d)
        if rule is None:
            stats, n = None, int(X.shape[0])
            if n == 0:
                raise ValueError(f"Found array with 0 sample(s) (shape=(0, {d})) while a minimum of 1 is required.")
        else:
            stats, n, d = fitted_scale_partitioned(rule, X, "GCWS")
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = d
        self.center_, self.dart_scale_ = None, None
        self.scale_ = stats
        self.is_fitted_ = True
        return self

    def _fit(self, X):
        self.scale_ = fitted_scale(self._scale_rule(sp.issparse(X), X.shape[1]), X)
        if self.scale_ is not None:
            X = apply_scale(X, *self._shift_factor())
        if self.center is None:
            self.center_ = None
        elif isinstance(self.center, str):
            center = np.asarray(X.mean(axis=0), dtype=np.float64).ravel()
            if not np.all(np.isfinite(center)):  # the sum overflowed: average scaled values
                center = np.asarray((X * (1.0 / X.shape[0])).sum(axis=0), dtype=np.float64).ravel()
                center = np.clip(center, -CENTER_MAX, CENTER_MAX)  # rounding may step past it
            self.center_ = center
        else:
            self.center_ = _check_center(self.center, "center", X.shape[1])

        if self.sampler == "dart":
            D = X.toarray() if sp.issparse(X) and self.center_ is not None else X
            D = D - self.center_ if self.center_ is not None else D
            l1 = np.asarray(abs(D).sum(axis=1), dtype=np.float64).ravel()
            self.dart_scale_ = fit_scale(l1)
        else:
            self.dart_scale_ = None

    def _shift_factor(self):
        return fitted_shift_factor(self.scale_, self.n_features_in_)

    def _fitted_state(self):
        state = {"center": None if self.center_ is None else self.center_.tolist()}
        if self.scale is not None:  # scale=None: specs stay as they were before scaling existed
            state["scale"] = self.scale_
        if self.dart_scale_ is not None:  # dart only: ICWS specs stay as they were
            state["dart_scheme"] = DART_SCHEME
            state["dart_scale"] = float(self.dart_scale_)
        return state

    def _set_fitted_state(self, state):
        c = state.get("center")
        self.center_ = None if c is None else np.asarray(c, dtype=np.float64)
        self.dart_scale_ = check_scheme(state, "spec['state']") if self.sampler == "dart" else None
        self.scale_ = state.get("scale")

    @property
    def n_output_features_(self) -> int:
        return int(self.n_components)

    @property
    def output_dtype_(self) -> np.dtype:
        return code_dtype(self.bits)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        params = super().get_params(deep)
        if isinstance(params["center"], np.ndarray):  # keep specs JSON-able
            params["center"] = params["center"].tolist()
        return params

    # -- parameters ---------------------------------------------------------------------------
    def kernel_plan(self) -> GCWSPlan:
        """The codes' kernel and this map's numbers (see :mod:`dask_kernels.maps._plan`)."""
        return GCWSPlan(int(self.n_features_in_), n_components=self.n_components, bits=self.bits, seed=self.seed,
                        sampler=self.sampler, table=self.table, center=self.center_, dart_scale=self.dart_scale_,
                        scale=self._shift_factor())

    def _plan(self):
        plan = self.kernel_plan()
        return cached_table(self, plan.key, lambda: plan)  # the maps' one cache: the plan keeps its tables

    def _uses_table(self):
        return self._plan().uses_table()

    # -- transforms ---------------------------------------------------------------------------
    def sample(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Full samples of every row (ICWS's (i*, t*), or the winning darts).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        i_star : ndarray of int64, shape (n_samples, n_components)
            Index into the split vector: ``2i`` is the positive part of feature i, ``2i + 1``
            the negative part; -1 for an all-zero row.
        t_star : ndarray of int64, shape (n_samples, n_components)
            ICWS: t*. ``sampler="dart"``: the winning dart's 64-bit id (as int64; -1 for an
            all-zero row), whose lowest ``bits`` bits are the code. Two rows' samples are
            equal, both arrays, with probability GMM.
        """
        self._check_fitted()
        return self._plan().sample(self._validate_input(X, reset=False))

    def _check_fitted(self):
        check_is_fitted(self)

    def hashed_rows(self, X: Any) -> np.ndarray | sp.csr_matrix:
        """The rows as this map hashes them: ``X`` after the fitted centering or scaling.

        The codes of two rows agree as often as the GMM similarity of these rows (not of the
        rows as given, unless the map neither centers nor scales: ``scale=None``, or sparse
        input under ``scale="auto"`` scaled by each column's largest magnitude, which GMM is
        not invariant to either). :func:`~dask_kernels.similarity_join` applies it to the
        raw rows of a store's codes; give it ``X=gcws.hashed_rows(X)`` with codes in memory.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray or csr_matrix of float64, shape (n_samples, n_features)
            CSR stays CSR without a center or a shift.

        Examples
        --------
        >>> import numpy as np
        >>> from dask_kernels import GCWS, gmm_kernel
        >>> X = np.array([[1.0, 100.0], [2.0, 300.0], [4.0, 200.0]])
        >>> gcws = GCWS(n_components=8, scale="minmax").fit(X)   # each column to [-1, 1]
        >>> gcws.hashed_rows(X).round(3).tolist()
        [[-1.0, -1.0], [-0.333, 1.0], [1.0, 0.0]]
        """
        self._check_fitted()
        X = self._validate_input(X, reset=False)
        if self.center_ is not None:
            return (X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)) - self.center_
        if self.scale_ is not None:
            return apply_scale(X, *self._shift_factor())
        return sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else np.asarray(X, dtype=np.float64)

    def transform_block(self, X: Any, row_offset: int = 0) -> np.ndarray:
        """Codes of a validated block: ndarray (n, n_components) of ``output_dtype_``."""
        return self._plan().transform_block(X, row_offset)

    def expand(self, block: np.ndarray) -> sp.csr_matrix:
        """One-hot CSR of stored codes, shape (n, n_components * 2**bits): see :func:`expand_codes`."""
        return expand_codes(block, self.bits)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """``gcws0 .. gcws{k-1}`` for codes; ``gcws{j}_{code}`` for the one-hot output."""
        codes = super().get_feature_names_out(input_features)  # checks input_features
        if self.output == "codes":
            return codes
        return np.asarray(
            [f"gcws{j}_{c}" for j in range(self.n_components) for c in range(2**self.bits)], dtype=object
        )
