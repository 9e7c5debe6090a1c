"""Exact CoRE kernels: the cosine of two rows combined with the resemblance of their patterns.

With ``u = x / ||x||`` and ``v = y / ||y||``, ``rho = u . v`` (the cosine), ``f1`` and ``f2`` the
numbers of nonzeros of ``x`` and ``y``, ``a`` the number of coordinates where both are nonzero,
and ``R = a / (f1 + f2 - a)`` the resemblance of the two nonzero patterns (Li, "CoRE kernels",
2014):

* type 1: ``K1 = rho R``
* type 2: ``K2 = rho sqrt(f1 f2) / (f1 + f2 - a)``, written so that disjoint patterns (a = 0,
  hence rho = 0) give 0 without a 0/0.

An all-zero row has no pattern and no direction: its kernel with any row (itself included) is
0. This is what :class:`dask_kernels.CoRE` estimates (its features of an all-zero row are 0).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..blocks import validate_block
from .._docstrings import fill_doc


def _unit_and_pattern(X):
    """Unit-length rows (float64; all-zero rows stay zero), the 0/1 pattern, nonzero counts.

    Rows are divided by their largest ``|x|`` before the norm, so any finite value works
    (``sum x^2`` would overflow beyond ~1e154)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        X.eliminate_zeros()
        m = np.asarray(abs(X).max(axis=1).toarray(), dtype=np.float64).ravel()
        S = sp.diags(np.divide(1.0, m, out=np.zeros_like(m), where=m > 0)) @ X
        n = np.sqrt(np.asarray(S.multiply(S).sum(axis=1), dtype=np.float64).ravel())
        U = sp.csr_matrix(sp.diags(np.divide(1.0, n, out=np.zeros_like(n), where=n > 0)) @ S)
        B = sp.csr_matrix((np.ones_like(X.data), X.indices, X.indptr), shape=X.shape)
        return U, B, np.diff(X.indptr).astype(np.float64)
    X = np.asarray(X, dtype=np.float64)
    m = np.abs(X).max(axis=1) if X.shape[1] else np.zeros(X.shape[0])
    S = X * np.divide(1.0, m, out=np.zeros_like(m), where=m > 0)[:, None]
    n = np.sqrt(np.einsum("ij,ij->i", S, S))
    U = S * np.divide(1.0, n, out=np.zeros_like(n), where=n > 0)[:, None]
    B = (X != 0).astype(np.float64)
    return U, B, B.sum(axis=1)


def _dense(P):
    return P.toarray() if sp.issparse(P) else np.asarray(P)


@fill_doc
def core_kernel(X: Any, Y: Any = None, *, type: int = 1) -> np.ndarray:
    """Exact CoRE kernel matrix between the rows of ``X`` and ``Y``.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    Y : array-like or sparse matrix of shape (m, d), default=X
    type : {1, 2}, default=1
        1: ``rho R``; 2: ``rho sqrt(f1 f2) / (f1 + f2 - a)`` (see the module docstring).

    Returns
    -------
    ndarray of shape (n, m), float64, values in [-1, 1]. A pair with an all-zero row gives 0.

    Raises
    ------
    ValueError
        Naming the row and column of a NaN or infinity, malformed sparse input, or a bad ``type``.

    %(core_references)s

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import core_kernel
    >>> X = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    >>> core_kernel(X, type=1)  # rho = 1/2, R = 1/3 off the diagonal
    array([[1.        , 0.16666667],
           [0.16666667, 1.        ]])
    >>> round(float(core_kernel(X, type=2)[0, 1]), 12)  # 0.5 * sqrt(2 * 2) / 3
    0.333333333333
    """
    if isinstance(type, bool) or type not in (1, 2):
        raise ValueError(f"type must be 1 or 2, got {type!r}")
    X = validate_block(X, dtypes=(np.float64,))
    Y = X if Y is None else validate_block(Y, dtypes=(np.float64,))
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}")
    U, BX, fx = _unit_and_pattern(X)
    V, BY, fy = (U, BX, fx) if Y is X else _unit_and_pattern(Y)
    rho = _dense(U @ V.T)
    a = _dense(BX @ BY.T)
    union = fx[:, None] + fy[None, :] - a  # 0 only when both rows are all zero (then rho = 0)
    num = a if type == 1 else np.sqrt(fx[:, None] * fy[None, :])
    return rho * np.divide(num, union, out=np.zeros_like(a), where=union > 0)
