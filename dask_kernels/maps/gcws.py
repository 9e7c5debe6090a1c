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

import functools
import numbers
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from numba import njit
from .._compat import Interval, StrOptions

from ..rng import bits, gamma2_f32_words, hi32, index_key, lo32, log32, register_stream, stream_key, unit32_word
from ._dart import DART_SCHEME, K_MAX, LAM_MAX, LAM_MIN, STREAM_DART, check_scheme, dart_csr, dart_dense
from ._dart import dart_table, fit_scale, layer_rates, no_table, table_nbytes
from ._fourier import cached_table
from ._parallel import N_JOBS_CONSTRAINT
from .base import FeatureMap
from .._docstrings import fill_doc

STREAM = register_stream("gcws.icws", 1)
#: The table path is used when its three float32 tables stay below this many bytes.
TABLE_BYTES_LIMIT = 256 * 2**20
#: The dart table (``sampler="dart"``) is used when it needs at most this many bytes: it pays
#: where it stays in cache (1.6 MB for D = 784, k = 256).
DART_TABLE_BYTES_LIMIT = 16 * 2**20
_INF32 = np.float32(np.inf)
_ONE32 = np.float32(1.0)


@njit(nogil=True, cache=True, error_model="numpy")
def _hash_params(skey, s, r, logc, beta, words):
    """Parameters of split index ``s`` for all hashes j (the hash function itself).

    Two loops on purpose: 64-bit hashing and float32 math in one loop make LLVM vectorize
    both at the 64-bit lane count, halving the float throughput. ``words`` is (5, k) scratch.
    """
    ikey = index_key(skey, s)
    for j in range(r.size):
        w = np.uint64(3 * j)
        h_r = bits(ikey, w)
        h_c = bits(ikey, w + np.uint64(1))
        words[0, j] = lo32(h_r)
        words[1, j] = hi32(h_r)
        words[2, j] = lo32(h_c)
        words[3, j] = hi32(h_c)
        words[4, j] = lo32(bits(ikey, w + np.uint64(2)))
    for j in range(r.size):
        r[j] = gamma2_f32_words(words[0, j], words[1, j])
        logc[j] = log32(gamma2_f32_words(words[2, j], words[3, j]))
        beta[j] = unit32_word(words[4, j])


@njit(nogil=True, cache=True, error_model="numpy")
def _build_table(skey, n_split, k):
    r = np.empty((n_split, k), dtype=np.float32)
    logc = np.empty((n_split, k), dtype=np.float32)
    beta = np.empty((n_split, k), dtype=np.float32)
    words = np.empty((5, k), dtype=np.uint32)
    for s in range(n_split):
        _hash_params(skey, s, r[s], logc[s], beta[s], words)
    return r, logc, beta


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _update(z, p, r, logc, beta, best_a, best_p, best_t):
    # Branch-free so LLVM vectorizes over j; strict '<' keeps the first (smallest s) on ties.
    for j in range(best_a.size):
        rj = r[j]
        t = np.floor(z / rj + beta[j])
        a = logc[j] - rj * (t + _ONE32 - beta[j])
        better = a < best_a[j]
        best_a[j] = a if better else best_a[j]
        best_p[j] = p if better else best_p[j]
        best_t[j] = t if better else best_t[j]


@njit(nogil=True, cache=True, error_model="numpy")
def _reset(best_a, best_p, best_t):
    best_a[:] = _INF32
    best_p[:] = -1
    best_t[:] = 0


#: Dense rows processed together so that each parameter row is read once per group.
ROW_GROUP = 8


@njit(nogil=True, cache=True, error_model="numpy")
def _gcws_dense(X, center, skey, tables, use_table, k, mask, i_out, t_out):
    """ICWS samples of a dense block. Rows are taken ROW_GROUP at a time and share each split
    index's parameters; within a row, split indices are still visited in ascending order.

    Writes ``i* & mask`` into ``i_out`` (mask -1: the full i*; 2**b - 1: the b-bit codes, so
    codes need no int64 intermediate) and t* into ``t_out`` unless it has no rows."""
    n_rows, d = X.shape
    best_a = np.empty((ROW_GROUP, k), dtype=np.float32)
    best_i = np.empty((ROW_GROUP, k), dtype=np.int32)  # the winning feature i (not split index)
    best_t = np.empty((ROW_GROUP, k), dtype=np.float32)
    par = np.empty((2, 3, k), dtype=np.float32)  # hash path: parameters of 2i and 2i + 1
    words = np.empty((5, k), dtype=np.uint32)
    for g0 in range(0, n_rows, ROW_GROUP):
        g = min(ROW_GROUP, n_rows - g0)
        for q in range(g):
            _reset(best_a[q], best_i[q], best_t[q])
        for i in range(d):
            made_pos = made_neg = False
            for q in range(g):
                v = X[g0 + q, i] - center[i]
                if v == 0.0:
                    continue
                neg = 0 if v > 0.0 else 1
                s = 2 * i + neg
                z = np.float32(np.log(abs(v)))
                if use_table:
                    _update(z, i, tables[0][s], tables[1][s], tables[2][s], best_a[q], best_i[q], best_t[q])
                else:
                    if not (made_neg if neg else made_pos):
                        _hash_params(skey, s, par[neg, 0], par[neg, 1], par[neg, 2], words)
                        made_pos = made_pos or neg == 0
                        made_neg = made_neg or neg == 1
                    _update(z, i, par[neg, 0], par[neg, 1], par[neg, 2], best_a[q], best_i[q], best_t[q])
        for q in range(g):
            for j in range(k):
                i = best_i[q, j]
                s = np.int64(-1) if i < 0 else 2 * np.int64(i) + (0 if X[g0 + q, i] - center[i] > 0.0 else 1)
                i_out[g0 + q, j] = s & mask
            if t_out.shape[0]:
                for j in range(k):
                    t_out[g0 + q, j] = np.int64(best_t[q, j])


@njit(nogil=True, cache=True, error_model="numpy")
def _gcws_csr(data, indices, indptr, skey, tables, use_table, k, mask, i_out, t_out):
    """ICWS samples of a canonical CSR block (sorted, unique indices), one row at a time.
    Outputs as in :func:`_gcws_dense`."""
    width = 0
    for row in range(indptr.size - 1):
        width = max(width, indptr[row + 1] - indptr[row])
    split = np.empty(width, dtype=np.int64)
    best_a = np.empty(k, dtype=np.float32)
    best_p = np.empty(k, dtype=np.int32)  # position of the winner among the row's nonzeros
    best_t = np.empty(k, dtype=np.float32)
    r = np.empty(k, dtype=np.float32)
    logc = np.empty(k, dtype=np.float32)
    beta = np.empty(k, dtype=np.float32)
    words = np.empty((5, k), dtype=np.uint32)
    for row in range(indptr.size - 1):
        _reset(best_a, best_p, best_t)
        nnz = 0
        for q in range(indptr[row], indptr[row + 1]):
            v = data[q]
            if v == 0.0:
                continue
            s = 2 * np.int64(indices[q]) + (0 if v > 0.0 else 1)
            split[nnz] = s
            z = np.float32(np.log(abs(v)))
            if use_table:
                _update(z, nnz, tables[0][s], tables[1][s], tables[2][s], best_a, best_p, best_t)
            else:
                _hash_params(skey, s, r, logc, beta, words)
                _update(z, nnz, r, logc, beta, best_a, best_p, best_t)
            nnz += 1
        for j in range(k):
            p = best_p[j]
            i_out[row, j] = (split[p] if p >= 0 else np.int64(-1)) & mask
        if t_out.shape[0]:
            for j in range(k):
                t_out[row, j] = np.int64(best_t[j])


@functools.lru_cache(maxsize=8)
def _dart_rates(k):
    """DartMinHash's dart rate per layer for k hashes (see ``layer_rates``), once per process."""
    return layer_rates(k)


def _parameter_table(seed, n_split, k):
    """The hash function's values for every split index (read-only; cached per map by ``_tables``)."""
    tables = _build_table(np.uint64(stream_key(np.uint64(seed), STREAM)), n_split, k)
    for t in tables:
        t.setflags(write=False)
    return tables


#: Largest ``|x|`` and ``|center|`` with a center: ``|x - center| <= 2**1023`` stays finite.
CENTER_MAX = 2.0**1022


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


def code_dtype(bits: int) -> np.dtype:
    """Smallest unsigned integer dtype holding ``bits``-bit codes."""
    return np.dtype(np.uint8) if bits <= 8 else np.dtype(np.uint16)


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
        Number of hashes k.
    bits : int, default=8
        Code width b (1 to 16): the lowest b bits of i*. Codes are uint8 for b <= 8, else uint16.
    %(seed)s
    center : None, "mean" or array-like of shape (n_features,), default=None
        Vector subtracted from every row before the sign split; "mean" learns the column means
        in ``fit``. With sparse input the block is densified after centering.
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
    %(n_jobs)s

    Attributes
    ----------
    n_features_in_ : int
    center_ : ndarray of shape (n_features,) or None
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
    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "bits": [Interval(numbers.Integral, 1, 16, closed="both")],
        "seed": [Interval(numbers.Integral, 0, 2**64 - 1, closed="both")],
        "center": [None, StrOptions({"mean"}), "array-like"],
        "output": [StrOptions({"codes", "onehot"})],
        "table": ["boolean", StrOptions({"auto"})],
        "sampler": [StrOptions({"icws", "dart"})],
        **N_JOBS_CONSTRAINT,
    }

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
        n_jobs: int | None = None,
    ) -> None:
        self.n_components = n_components
        self.bits = bits
        self.seed = seed
        self.center = center
        self.output = output
        self.table = table
        self.sampler = sampler
        self.n_jobs = n_jobs

    # -- input contract ---------------------------------------------------------------------
    @property
    def max_abs_input(self) -> float | None:
        """None without centering; with a center ``2**1022`` (4.5e307), so that ``x - center``
        (both within the bound) cannot overflow."""
        return None if self.center is None else CENTER_MAX

    def _validate_params_extra(self):
        if self.center is not None and not isinstance(self.center, str):
            _check_center(self.center, "center")
        if self.sampler == "dart" and self.n_components > K_MAX:
            raise ValueError(f"n_components={self.n_components}: sampler='dart' takes at most {K_MAX} hashes")

    def _validate_state(self, state):
        if self.sampler == "dart":
            check_scheme(state)
        keys = {"center", "dart_scheme", "dart_scale"} if self.sampler == "dart" else {"center"}
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
    def _fit(self, X):
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

    def _fitted_state(self):
        state = {"center": None if self.center_ is None else self.center_.tolist()}
        if self.dart_scale_ is not None:  # dart only: ICWS specs stay as they were
            state["dart_scheme"] = DART_SCHEME
            state["dart_scale"] = float(self.dart_scale_)
        return state

    def _set_fitted_state(self, state):
        c = state.get("center")
        self.center_ = None if c is None else np.asarray(c, dtype=np.float64)
        self.dart_scale_ = check_scheme(state, "spec['state']") if self.sampler == "dart" else None

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
    def _uses_table(self):
        n_split, k = 2 * self.n_features_in_, self.n_components
        if self.sampler == "dart":
            nbytes, limit = table_nbytes(n_split, k), DART_TABLE_BYTES_LIMIT
        else:
            nbytes, limit = 3 * 4 * n_split * k, TABLE_BYTES_LIMIT
        return bool(self.table) if self.table != "auto" else nbytes <= limit

    def _dart_table(self, skey):
        key = ("dart", int(self.seed), 2 * int(self.n_features_in_), int(self.n_components))
        return cached_table(self, key, lambda: dart_table(skey, key[2], key[3]))

    def _stream_key(self):
        # np.uint64 so Numba does not type keys >= 2**63 as an overflowing int64.
        return np.uint64(stream_key(np.uint64(self.seed), STREAM))

    def _tables(self):
        key = (int(self.seed), 2 * int(self.n_features_in_), int(self.n_components))
        return cached_table(self, key, lambda: _parameter_table(*key))  # the maps' one table cache

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
        return self._sample_block(self._validate_input(X, reset=False))

    def _check_fitted(self):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)

    def _sample_block(self, X, codes_only=False, row_offset=0):
        """(i*, t*) of a validated block, or with ``codes_only`` (codes, None)."""
        if self.sampler == "dart":
            return self._dart_block(X, codes_only, row_offset)
        k = int(self.n_components)
        n = X.shape[0]
        if codes_only:
            mask, i_out, t_out = np.int64(2**self.bits - 1), np.empty((n, k), self.output_dtype_), None
        else:
            mask, i_out, t_out = np.int64(-1), np.empty((n, k), np.int64), np.empty((n, k), np.int64)
        t_arg = t_out if t_out is not None else np.empty((0, k), np.int64)
        center = self.center_
        if sp.issparse(X) and center is not None:
            X = X.toarray()
        use_table = self._uses_table()
        tables = self._tables() if use_table else (np.empty((0, 0), np.float32),) * 3
        skey = self._stream_key()
        if sp.issparse(X):
            _gcws_csr(X.data, X.indices, X.indptr, skey, tables, use_table, k, mask, i_out, t_arg)
        else:
            c = center if center is not None else np.zeros(X.shape[1])
            _gcws_dense(X, c, skey, tables, use_table, k, mask, i_out, t_arg)
        return i_out, t_out

    def _dart_block(self, X, codes_only, row_offset):
        """DartMinHash samples (split index, dart id as int64) or (codes, None)."""
        k, n = int(self.n_components), X.shape[0]
        skey = np.uint64(stream_key(np.uint64(self.seed), STREAM_DART))
        mask = np.uint64(2**self.bits - 1)
        if codes_only:
            code_out, s_out, id_out = np.empty((n, k), self.output_dtype_), None, None
        else:
            code_out, s_out, id_out = None, np.empty((n, k), np.int64), np.empty((n, k), np.int64)
        none = np.empty((0, k), np.int64)
        rates = _dart_rates(k)
        table = self._dart_table(skey) if self._uses_table() else no_table()
        scale = float(self.dart_scale_)
        outs = (code_out if codes_only else none, none if codes_only else s_out, none if codes_only else id_out)
        if sp.issparse(X) and self.center_ is not None:
            X = X.toarray()
        if sp.issparse(X):
            bad = dart_csr(X.data, X.indices, X.indptr, skey, scale, k, rates, table, mask, codes_only, *outs)
        else:
            c = self.center_ if self.center_ is not None else np.zeros(X.shape[1])
            bad = dart_dense(X, c, skey, scale, k, rates, table, mask, codes_only, *outs)
        if bad >= 0:
            raise ValueError(
                f"GCWS(sampler='dart'): row {row_offset + bad} has a sign-split l1 norm outside "
                f"[{LAM_MIN / scale:.3g}, {LAM_MAX / scale:.3g}] (from the map's fit: 2**-800 to about 800 "
                f"times its largest row); rescale the data or refit on rows like it"
            )
        return (code_out, None) if codes_only else (s_out, id_out)

    def transform_block(self, X: Any, row_offset: int = 0) -> np.ndarray:
        """Codes of a validated block: ndarray (n, n_components) of ``output_dtype_``."""
        return self._sample_block(X, codes_only=True, row_offset=row_offset)[0]

    def spec(self) -> dict[str, Any]:
        """As :meth:`FeatureMap.spec`; the default sampler ("icws") is left out of it, so
        specs (and store fingerprints) written before samplers existed stay the same."""
        spec = super().spec()
        if spec["params"].get("sampler") == "icws":
            del spec["params"]["sampler"]
        return spec

    def expand(self, block: np.ndarray) -> sp.csr_matrix:
        """One-hot CSR of stored codes, shape (n, n_components * 2**bits): see :func:`expand_codes`."""
        return expand_codes(block, self.bits)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """``gcws0 .. gcws{k-1}`` for codes; ``gcws{j}_{code}`` for the one-hot output."""
        self._check_fitted()
        if self.output == "codes":
            return super().get_feature_names_out(input_features)
        return np.asarray(
            [f"gcws{j}_{c}" for j in range(self.n_components) for c in range(2**self.bits)], dtype=object
        )
