"""Exact generalized min-max (GMM) and min-max kernels, for validation and small data.

``GMM(x, y) = sum_i min(x~_i, y~_i) / sum_i max(x~_i, y~_i)`` on the sign-split vectors
(``x~[2i] = max(x_i, 0)``, ``x~[2i+1] = max(-x_i, 0)``). Per original feature that is
``min(|x_i|, |y_i|)`` over ``max(|x_i|, |y_i|)`` when ``x_i`` and ``y_i`` fall in the same half
(both > 0, or both <= 0), and ``0`` over ``|x_i| + |y_i|`` otherwise.

0/0: when both rows are entirely zero the kernel is defined as 1 (the rows are identical), and
an all-zero row against a nonzero row gives 0. This is what GCWS estimates: an all-zero row
always draws the reserved sample ``i* = -1``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from numba import njit

from ..blocks import validate_block


@njit(nogil=True, cache=True, inline="always")
def _ratio(num, den):
    return num / den if den > 0.0 else 1.0


@njit(nogil=True, cache=True, inline="always")
def _min_max_terms(u, v):
    """One feature's contribution to (sum min, sum max) over its two sign-split halves."""
    if (u > 0.0) == (v > 0.0):
        return min(abs(u), abs(v)), max(abs(u), abs(v))
    return 0.0, abs(u) + abs(v)


@njit(nogil=True, cache=True)
def _gmm_dense(X, Y):
    out = np.empty((X.shape[0], Y.shape[0]))
    for a in range(X.shape[0]):
        for b in range(Y.shape[0]):
            num = 0.0
            den = 0.0
            for i in range(X.shape[1]):
                lo, hi = _min_max_terms(X[a, i], Y[b, i])
                num += lo
                den += hi
            out[a, b] = _ratio(num, den)
    return out


@njit(nogil=True, cache=True)
def _gmm_csr(xd, xi, xp, yd, yi, yp):
    # Both inputs have sorted, unique column indices; merge the two index lists per pair.
    n = xp.size - 1
    m = yp.size - 1
    out = np.empty((n, m))
    for a in range(n):
        for b in range(m):
            out[a, b] = _gmm_csr_rows(xd, xi, xp[a], xp[a + 1], yd, yi, yp[b], yp[b + 1])
    return out


@njit(nogil=True, cache=True, inline="always")
def _gmm_csr_rows(xd, xi, p, pe, yd, yi, q, qe):
    """GMM of the CSR rows ``[p, pe)`` of x and ``[q, qe)`` of y (sorted, unique column indices)."""
    num = 0.0
    den = 0.0
    while p < pe or q < qe:
        if q >= qe or (p < pe and xi[p] < yi[q]):
            den += abs(xd[p])
            p += 1
        elif p >= pe or yi[q] < xi[p]:
            den += abs(yd[q])
            q += 1
        else:
            lo, hi = _min_max_terms(xd[p], yd[q])
            num += lo
            den += hi
            p += 1
            q += 1
    return _ratio(num, den)


def max_abs_input(d: int) -> float:
    """Largest ``|x|`` (and ``|center|``) for d features: the sums of up to 2d terms of
    ``|x_i - c_i| <= 2 max|x|`` stay below ``finfo(float64).max``."""
    return float(np.finfo(np.float64).max) / (8.0 * max(int(d), 1))


def _prepare(X, center):
    d = X.shape[1] if sp.issparse(X) or np.ndim(X) == 2 else None
    X = validate_block(X, dtypes=(np.float64,), max_abs=None if d is None else max_abs_input(d))
    if center is not None:
        c = validate_block(np.reshape(np.asarray(center), (1, -1)), X.shape[1], dtypes=(np.float64,),
                           max_abs=max_abs_input(X.shape[1]))
        X = np.ascontiguousarray((X.toarray() if sp.issparse(X) else X) - c)
    return X


def gmm_kernel(X: Any, Y: Any = None, *, center: npt.ArrayLike | None = None) -> np.ndarray:
    """Exact GMM kernel matrix between the rows of ``X`` and ``Y``.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    Y : array-like or sparse matrix of shape (m, d), default=X
    center : array-like of shape (d,), optional
        Subtracted from every row before the sign split (as in :class:`dask_kernels.GCWS`).

    Returns
    -------
    ndarray of shape (n, m), float64, values in [0, 1]. Two all-zero rows give 1.

    Raises
    ------
    ValueError
        Naming the row and column of a NaN, infinity or value beyond ``max_abs_input(d)``
        (``finfo(float64).max / (8 d)``), or malformed sparse input (see
        :func:`dask_kernels.blocks.validate_block`).

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import gmm_kernel
    >>> gmm_kernel(np.array([[1.0, -2.0]]), np.array([[2.0, -1.0]]))
    array([[0.5]])
    """
    X = _prepare(X, center)
    Y = X if Y is None else _prepare(Y, center)
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}")
    if sp.issparse(X) and sp.issparse(Y):
        return _gmm_csr(X.data, X.indices, X.indptr, Y.data, Y.indices, Y.indptr)
    X = X.toarray() if sp.issparse(X) else X
    Y = Y.toarray() if sp.issparse(Y) else Y
    return _gmm_dense(X, Y)


def minmax_kernel(X: Any, Y: Any = None) -> np.ndarray:
    """Exact min-max (weighted Jaccard) kernel ``sum min(x, y) / sum max(x, y)``.

    Defined for nonnegative data, where it equals :func:`gmm_kernel`; negative entries raise
    ``ValueError`` naming the row. Two all-zero rows give 1.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import minmax_kernel
    >>> minmax_kernel(np.array([[1.0, 0.0, 3.0]]), np.array([[1.0, 2.0, 1.0]]))
    array([[0.33333333]])
    """
    for name, A in (("X", X), ("Y", Y)):
        if A is None:
            continue
        data = validate_block(A, dtypes=(np.float64,))
        neg = (data < 0).nonzero()[0] if sp.issparse(A) else np.nonzero((data < 0).any(axis=1))[0]
        if len(neg):
            raise ValueError(
                f"minmax_kernel needs nonnegative data: {name} row {int(neg.min())} has a negative "
                "entry (use gmm_kernel, which sign-splits)"
            )
    return gmm_kernel(X, Y)
