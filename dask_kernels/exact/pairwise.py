"""Kernel blocks ``k(X, Y)`` between a block of rows and a fixed set of rows, by kernel name.

This is the inner step of a Nystroem map (rows against landmarks), so it is written for speed
and for both precisions:

* ``"rbf"``: ``exp(-gamma ||x - y||^2)`` from ``||x||^2 + ||y||^2 - 2 x . y`` with one matrix
  product in the requested dtype (SGEMM for float32), clipped at 0 (the expansion can round to
  a tiny negative distance). In float64 this is what scikit-learn's ``rbf_kernel`` computes.
* ``"laplacian"``: scikit-learn's ``laplacian_kernel`` (float64 Manhattan distances; dense or
  sparse).
* ``"cosine_rbf"``: ``exp(-gamma ||u - v||^2 / 2)`` with ``u = x / ||x||`` (0 for a zero row),
  so ``exp(-gamma (1 - rho))`` for nonzero rows, as :func:`dask_kernels.exact.cosine_rbf_kernel`.
* ``"gmm"`` / ``"minmax"``: the exact GMM kernel (Numba, serial). Against dense ``Y``: ``Y`` is
  sign-split and transposed once (:func:`gmm_split`), and each nonzero of a row adds
  ``min(|x_j|, y~_j)`` to all m sums in one contiguous, vectorizable loop; the denominator is
  ``sum |x| + sum |y| - numerator``. Against CSR ``Y``: the pairwise merge of
  :func:`dask_kernels.gmm_kernel`. min-max is GMM restricted to nonnegative data: the caller
  checks the sign.

``Y`` is fixed across calls, so callers may pass ``y_sq`` (``||y||^2`` per row) for rbf to
avoid recomputing it per block.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..blocks import as_block
from .gmm import _gmm_csr

KERNELS = ("gmm", "minmax", "rbf", "laplacian", "cosine_rbf")


# -- GMM against a fixed dense set: sign-split, transposed, one vectorizable pass per nonzero --------
def gmm_split(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(YT, ysum)`` for :func:`kernel_block`'s GMM fast path: the sign-split rows of a dense
    ``Y`` transposed to shape (2d, m) (``YT[j] = max(y_j, 0)``, ``YT[d + j] = max(-y_j, 0)``),
    and ``ysum[b] = sum_j |y_bj|``."""
    Y = np.asarray(Y, dtype=np.float64)
    YT = np.ascontiguousarray(np.concatenate([np.maximum(Y, 0.0), np.maximum(-Y, 0.0)], axis=1).T)
    return YT, np.abs(Y).sum(axis=1)


@njit(nogil=True, cache=True, inline="always")
def _gmm_add(w, row, YT, acc):
    # min(x~_row, y~_row) for every landmark at once: contiguous, branch-free, vectorizable
    for b in range(acc.size):
        acc[b] += min(w, YT[row, b])


@njit(nogil=True, cache=True, inline="always")
def _gmm_finish(acc, sx, ysum, out, a):
    # sum max = sum x~ + sum y~ - sum min; two all-zero rows give 1
    for b in range(acc.size):
        den = sx + ysum[b] - acc[b]
        out[a, b] = acc[b] / den if den > 0.0 else 1.0


@njit(nogil=True, cache=True)
def _gmm_dense_vs_split(X, YT, ysum):
    n, d = X.shape
    out = np.empty((n, YT.shape[1]))
    acc = np.empty(YT.shape[1])
    for a in range(n):
        acc[:] = 0.0
        sx = 0.0
        for j in range(d):
            v = X[a, j]
            if v != 0.0:  # a zero has min 0 with anything: only nonzeros cost
                sx += abs(v)
                _gmm_add(abs(v), j if v > 0.0 else d + j, YT, acc)
        _gmm_finish(acc, sx, ysum, out, a)
    return out


@njit(nogil=True, cache=True)
def _gmm_csr_vs_split(data, indices, indptr, d, YT, ysum):
    n = indptr.size - 1
    out = np.empty((n, YT.shape[1]))
    acc = np.empty(YT.shape[1])
    for a in range(n):
        acc[:] = 0.0
        sx = 0.0
        for p in range(indptr[a], indptr[a + 1]):
            v = data[p]
            if v != 0.0:
                sx += abs(v)
                _gmm_add(abs(v), indices[p] if v > 0.0 else d + indices[p], YT, acc)
        _gmm_finish(acc, sx, ysum, out, a)
    return out


def row_sq_norms(X: Any) -> np.ndarray:
    """``||x||^2`` of every row, float64."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    X = np.asarray(X, dtype=np.float64)
    return np.einsum("ij,ij->i", X, X)


def unit_rows(X: Any) -> np.ndarray | sp.csr_matrix:
    """Rows scaled to unit Euclidean norm; an all-zero row stays zero (same sparsity)."""
    n = np.sqrt(row_sq_norms(X))
    inv = np.divide(1.0, n, out=np.zeros_like(n), where=n > 0)
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(inv) @ X)
    return np.asarray(X, dtype=np.float64) * inv[:, None]


def _dot(X, Y, dtype):
    """``X @ Y.T`` as a C-contiguous dense array of ``dtype`` (BLAS for dense operands)."""
    if sp.issparse(X) or sp.issparse(Y):
        X = X.astype(dtype) if sp.issparse(X) else np.asarray(X, dtype=dtype)
        Y = Y.astype(dtype) if sp.issparse(Y) else np.asarray(Y, dtype=dtype)
        P = X @ Y.T
        P = P.toarray() if sp.issparse(P) else np.asarray(P)
        return np.ascontiguousarray(P, dtype=dtype)
    X, Y = np.asarray(X, dtype=dtype), np.asarray(Y, dtype=dtype)
    if Y.shape[0] == 1:  # one fixed row (k-means++ draws): threaded BLAS only adds overhead here
        return np.einsum("ij,j->i", X, Y[0])[:, None]
    return X @ Y.T


def _gaussian_of_sq(X, Y, gamma, dtype, x_sq, y_sq):
    """``exp(-gamma max(0, x_sq + y_sq - 2 X Y^T))`` in ``dtype``, computed in place.

    Dense X is cast to ``dtype`` once; its squared norms come from that copy (float32 rows: the
    norms carry the same rounding as the product, so the distance of a row to itself stays ~0).
    """
    if not sp.issparse(X):
        X = np.asarray(X, dtype=dtype)
        if x_sq is None:
            x_sq = np.einsum("ij,ij->i", X, X)
    elif x_sq is None:
        x_sq = row_sq_norms(X)
    D = _dot(X, Y, dtype)
    D *= dtype.type(-2.0)
    D += np.asarray(x_sq, dtype=dtype)[:, None]
    D += np.asarray(y_sq, dtype=dtype)[None, :]
    np.maximum(D, 0, out=D)
    D *= dtype.type(-gamma)
    np.exp(D, out=D)
    return D


def kernel_block(kernel: str, X: Any, Y: Any, *, gamma: float | None = None, dtype: Any = np.float64,
                 y_sq: np.ndarray | None = None, y_split: tuple[np.ndarray, np.ndarray] | None = None,
                 x_sq: np.ndarray | None = None) -> np.ndarray:
    """The kernel matrix ``k(X, Y)`` of shape (n, m) in ``dtype``.

    Parameters
    ----------
    kernel : {"gmm", "minmax", "rbf", "laplacian", "cosine_rbf"}
    X : ndarray or CSR matrix of shape (n, d)
        Validated rows (finite; CSR canonical).
    Y : ndarray or CSR matrix of shape (m, d)
        The fixed rows (rbf: pass them already in ``dtype`` to skip a cast per call).
    gamma : float
        Bandwidth of rbf / laplacian / cosine_rbf; ignored by gmm and minmax.
    dtype : numpy dtype, default float64
        Precision of the matrix products for rbf / cosine_rbf, and dtype of the result.
    y_sq : ndarray of shape (m,), optional
        ``row_sq_norms(Y)``, precomputed (rbf).
    x_sq : ndarray of shape (n,), optional
        ``row_sq_norms(X)``, precomputed (rbf; for repeated calls on the same rows).
    y_split : tuple, optional
        ``gmm_split(Y)``, precomputed (gmm / minmax with dense ``Y``).

    Returns
    -------
    ndarray of shape (n, m)

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels.exact.pairwise import kernel_block
    >>> kernel_block("rbf", np.array([[0.0, 0.0]]), np.array([[1.0, 1.0]]), gamma=0.5)
    array([[0.36787944]])
    >>> kernel_block("gmm", np.array([[1.0, -2.0]]), np.array([[2.0, -1.0]]))
    array([[0.5]])
    """
    dtype = np.dtype(dtype)
    if kernel == "rbf":
        y_sq = row_sq_norms(Y) if y_sq is None else y_sq
        return _gaussian_of_sq(X, Y, gamma, dtype, x_sq, y_sq)
    if kernel == "cosine_rbf":
        U, V = unit_rows(X), unit_rows(Y)
        return _gaussian_of_sq(U, V, 0.5 * gamma, dtype, row_sq_norms(U), row_sq_norms(V))
    if kernel == "laplacian":
        from sklearn.metrics.pairwise import laplacian_kernel  # here: loading a map need not import it

        return np.ascontiguousarray(laplacian_kernel(X, Y, gamma=gamma), dtype=dtype)
    if kernel in ("gmm", "minmax"):
        if not sp.issparse(Y):  # dense fixed rows: the vectorized pass (also for CSR X)
            YT, ysum = gmm_split(Y) if y_split is None else y_split
            if sp.issparse(X):
                X = as_block(X, (np.float64,))
                K = _gmm_csr_vs_split(X.data, X.indices, X.indptr, X.shape[1], YT, ysum)
            else:
                K = _gmm_dense_vs_split(np.ascontiguousarray(X, dtype=np.float64), YT, ysum)
            return K.astype(dtype, copy=False)
        X, Y = as_block(sp.csr_matrix(X), (np.float64,)), as_block(Y, (np.float64,))  # sorted indices
        return _gmm_csr(X.data, X.indices, X.indptr, Y.data, Y.indices, Y.indptr).astype(dtype, copy=False)
    raise ValueError(f"unknown kernel {kernel!r}; known: {', '.join(KERNELS)}")
