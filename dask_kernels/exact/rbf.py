"""Exact Gaussian, Laplacian and cosine-RBF kernels, for validating the Fourier-type maps.

The Gaussian and Laplacian kernels are scikit-learn's (``sklearn.metrics.pairwise``), after our
input contract (finite, real, bounded so that the distances cannot overflow); the cosine-RBF
kernel of :class:`~dask_kernels.NRFF` has no scikit-learn counterpart.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from sklearn.metrics import pairwise

from ..blocks import validate_block

if TYPE_CHECKING:  # names used only in annotations
    import numpy.typing as npt


def _validated(X):
    # |x - y|^2 summed over d features stays finite for |x| <= sqrt(max / (4 d)).
    X = X if sp.issparse(X) else np.atleast_2d(np.asarray(X))
    d = max(X.shape[-1], 1)
    return validate_block(X, dtypes=(np.float64,), max_abs=math.sqrt(float(np.finfo(np.float64).max) / (4 * d)))


def _dense(X):
    X = _validated(X)
    return X.toarray() if sp.issparse(X) else X


def rbf_kernel(X: npt.ArrayLike, Y: npt.ArrayLike | None = None, gamma: float = 1.0) -> np.ndarray:
    """Gaussian kernel ``exp(-gamma ||x - y||^2)`` between the rows of X and Y (float64).

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels.exact.rbf import rbf_kernel
    >>> rbf_kernel(np.array([[0.0, 0.0]]), np.array([[1.0, 1.0]]), gamma=0.5)
    array([[0.36787944]])
    """
    return pairwise.rbf_kernel(_validated(X), None if Y is None else _validated(Y), gamma=gamma)


def laplacian_kernel(X: npt.ArrayLike, Y: npt.ArrayLike | None = None, gamma: float = 1.0) -> np.ndarray:
    """Laplacian kernel ``exp(-gamma ||x - y||_1)`` between the rows of X and Y (float64)."""
    return pairwise.laplacian_kernel(_validated(X), None if Y is None else _validated(Y), gamma=gamma)


def cosine_rbf_kernel(X: npt.ArrayLike, Y: npt.ArrayLike | None = None, gamma: float = 1.0) -> np.ndarray:
    """The NRFF kernel ``exp(-gamma (1 - rho))``, rho the cosine similarity (float64).

    In general ``exp(-gamma ||u - v||^2 / 2)`` with ``u = x / ||x||``, which is the same for
    nonzero rows; a zero row has ``u = 0``, so its kernel with any nonzero row is
    ``exp(-gamma / 2)`` and with another zero row 1 (what :class:`~dask_kernels.NRFF` estimates).
    """
    X = _dense(X)
    Y = X if Y is None else _dense(Y)
    nx = np.linalg.norm(X, axis=1, keepdims=True)
    ny = np.linalg.norm(Y, axis=1, keepdims=True)
    U = np.divide(X, nx, out=np.zeros_like(X), where=nx > 0)
    V = np.divide(Y, ny, out=np.zeros_like(Y), where=ny > 0)
    return np.exp(-0.5 * gamma * cdist(U, V, "sqeuclidean"))
