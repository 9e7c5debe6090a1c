"""GCWS's kernels and its kernel plan: what a worker needs to compute GCWS codes.

The ICWS sampler (see :mod:`dask_kernels.maps.gcws` for the algorithm and its random
parameters) and the dispatch to DartMinHash (:mod:`dask_kernels.maps._dart`), with no
scikit-learn: :class:`GCWSPlan` is :meth:`GCWS.kernel_plan` (see :mod:`dask_kernels.maps._plan`),
and ``GCWS`` computes its own codes through it, so the two cannot differ.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..rng import bits, gamma2_f32_words, hi32, index_key, lo32, log32, register_stream, stream_key, unit32_word
from ._dart import LAM_MAX, LAM_MIN, STREAM_DART, dart_csr, dart_dense, dart_table, layer_rates, no_table
from ._dart import table_nbytes
from ._plan import KernelPlan
from ._scaling import apply_scale

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
    """The hash function's values for every split index (read-only; cached per plan)."""
    tables = _build_table(np.uint64(stream_key(np.uint64(seed), STREAM)), n_split, k)
    for t in tables:
        t.setflags(write=False)
    return tables


#: Largest ``|x|`` and ``|center|`` with a center: ``|x - center| <= 2**1023`` stays finite.
CENTER_MAX = 2.0**1022

def code_dtype(bits: int) -> np.dtype:
    """Smallest unsigned integer dtype holding ``bits``-bit codes."""
    return np.dtype(np.uint8) if bits <= 8 else np.dtype(np.uint16)


class GCWSPlan(KernelPlan):
    """:class:`~dask_kernels.maps.gcws.GCWS`'s block transform (codes) and samples, as numbers.

    Parameters
    ----------
    n_features_in : int
    n_components, bits, seed, sampler, table :
        The map's parameters (``table``: True, False or "auto").
    center : ndarray of float64 of shape (n_features_in,) or None
        The fitted center (``center_``).
    dart_scale : float or None
        The fitted dart scale (``sampler="dart"`` only).
    scale : tuple (shift or None, factor) of float64 arrays, or None
        The fitted input scaling (:mod:`dask_kernels.maps._scaling`), applied before sampling.
    """

    def __init__(self, n_features_in: int, *, n_components: int, bits: int, seed: int, sampler: str,
                 table: bool | str, center: np.ndarray | None, dart_scale: float | None,
                 scale: tuple | None = None) -> None:
        bounded = center is not None or scale is not None
        super().__init__(n_features_in, code_dtype(bits), max_abs_input=CENTER_MAX if bounded else None)
        self.n_components, self.bits, self.seed, self.sampler = int(n_components), int(bits), int(seed), sampler
        self.table = table
        self.center = center
        self.dart_scale = None if dart_scale is None else float(dart_scale)
        self.scale = scale

    @property
    def key(self) -> tuple:
        center = None if self.center is None else self.center.tobytes()
        scale = None if self.scale is None else tuple(None if a is None else a.tobytes() for a in self.scale)
        return (*super().key, self.n_components, self.bits, self.seed, self.sampler, self.table, center,
                self.dart_scale, scale)

    def uses_table(self) -> bool:
        """Whether the parameter table is used (``table="auto"``: when it fits the limit)."""
        n_split, k = 2 * self.n_features_in_, self.n_components
        if self.sampler == "dart":
            nbytes, limit = table_nbytes(n_split, k), DART_TABLE_BYTES_LIMIT
        else:
            nbytes, limit = 3 * 4 * n_split * k, TABLE_BYTES_LIMIT
        return bool(self.table) if self.table != "auto" else nbytes <= limit

    def parameter_table(self) -> tuple:
        """The sampler's parameter table (built once per plan), or its empty stand-in when
        :meth:`uses_table` is False: ICWS's (r, log c, beta), DartMinHash's :func:`dart_table`."""
        n_split, k = 2 * self.n_features_in_, self.n_components
        if self.sampler == "dart":
            skey = np.uint64(stream_key(np.uint64(self.seed), STREAM_DART))
            return self.cached("dart", lambda: dart_table(skey, n_split, k)) if self.uses_table() else no_table()
        return (self.cached("icws", lambda: _parameter_table(self.seed, n_split, k)) if self.uses_table()
                else (np.empty((0, 0), np.float32),) * 3)

    def transform_block(self, X: Any, row_offset: int = 0) -> np.ndarray:
        """Codes of a validated block: ndarray (n, n_components) of ``output_dtype_``."""
        return self.sample(X, codes_only=True, row_offset=row_offset)[0]

    def sample(self, X: Any, codes_only: bool = False, row_offset: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
        """(i*, t*) of a validated block, or with ``codes_only`` (codes, None)."""
        if self.scale is not None:
            X = apply_scale(X, *self.scale)
        if self.sampler == "dart":
            return self._dart_block(X, codes_only, row_offset)
        k = self.n_components
        n = X.shape[0]
        if codes_only:
            mask, i_out, t_out = np.int64(2**self.bits - 1), np.empty((n, k), self.output_dtype_), None
        else:
            mask, i_out, t_out = np.int64(-1), np.empty((n, k), np.int64), np.empty((n, k), np.int64)
        t_arg = t_out if t_out is not None else np.empty((0, k), np.int64)
        center = self.center
        if sp.issparse(X) and center is not None:
            X = X.toarray()
        use_table = self.uses_table()
        tables = self.parameter_table()
        # np.uint64 so Numba does not type keys >= 2**63 as an overflowing int64.
        skey = np.uint64(stream_key(np.uint64(self.seed), STREAM))
        if sp.issparse(X):
            _gcws_csr(X.data, X.indices, X.indptr, skey, tables, use_table, k, mask, i_out, t_arg)
        else:
            c = center if center is not None else np.zeros(X.shape[1])
            _gcws_dense(X, c, skey, tables, use_table, k, mask, i_out, t_arg)
        return i_out, t_out

    def _dart_block(self, X, codes_only, row_offset):
        """DartMinHash samples (split index, dart id as int64) or (codes, None)."""
        k, n = self.n_components, X.shape[0]
        skey = np.uint64(stream_key(np.uint64(self.seed), STREAM_DART))
        mask = np.uint64(2**self.bits - 1)
        if codes_only:
            code_out, s_out, id_out = np.empty((n, k), self.output_dtype_), None, None
        else:
            code_out, s_out, id_out = None, np.empty((n, k), np.int64), np.empty((n, k), np.int64)
        none = np.empty((0, k), np.int64)
        rates = _dart_rates(k)
        table = self.parameter_table()
        scale = self.dart_scale
        outs = (code_out if codes_only else none, none if codes_only else s_out, none if codes_only else id_out)
        if sp.issparse(X) and self.center is not None:
            X = X.toarray()
        if sp.issparse(X):
            bad = dart_csr(X.data, X.indices, X.indptr, skey, scale, k, rates, table, mask, codes_only, *outs)
        else:
            c = self.center if self.center is not None else np.zeros(X.shape[1])
            bad = dart_dense(X, c, skey, scale, k, rates, table, mask, codes_only, *outs)
        if bad >= 0:
            raise ValueError(
                f"GCWS(sampler='dart'): row {row_offset + bad} has a sign-split l1 norm outside "
                f"[{LAM_MIN / scale:.3g}, {LAM_MAX / scale:.3g}] (from the map's fit: 2**-800 to about 800 "
                f"times its largest row); rescale the data or refit on rows like it"
            )
        return (code_out, None) if codes_only else (s_out, id_out)


def default_plan(n_features_in: int) -> GCWSPlan:
    """The plan of ``GCWS()`` (default parameters, no center) on ``n_features_in`` columns: the
    kernels' argument types, for warming a worker (:data:`dask_kernels.warm.WARM_PLANS`)."""
    return GCWSPlan(n_features_in, n_components=256, bits=8, seed=0, sampler="icws", table="auto", center=None,
                    dart_scale=None)
