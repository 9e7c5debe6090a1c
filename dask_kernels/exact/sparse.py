"""The sparse Gaussian (or Laplacian) kernel that ``RFF(density=s)`` estimates."""

from __future__ import annotations

import numpy as np

from .rbf import _dense


def sparse_rbf_kernel(X, Y=None, *, n_nonzero: int, gamma: float = 1.0, kernel: str = "rbf") -> np.ndarray:
    """Average over input subsets F of size m of ``prod_{i in F} k_1(x_i - y_i)`` (float64).

    ``k_m(x, y) = C(d, m)^-1 sum_{|F| = m} prod_{i in F} k_1(x_i - y_i)`` with
    ``k_1(t) = exp(-gamma t^2)`` (``kernel="rbf"``, the "sparse Gaussian kernel" of May's
    thesis, eq. 5.1) or ``exp(-gamma |t|)`` (``kernel="laplacian"``): the kernel of random
    Fourier features whose frequency vectors are nonzero on m random inputs
    (:class:`dask_kernels.RFF` with ``density < 1``, ``m = n_nonzero_``). For m = d it is the
    dense kernel; for m = 1 the mean of the one-dimensional kernels.

    Computed exactly, in O(n_X n_Y d m), by the recurrence of the normalized elementary
    symmetric polynomials ``E_j(i) = e_j(a_1..a_i) / C(i, j)``:
    ``E_j(i) = (i - j) / i E_j(i - 1) + j / i a_i E_{j-1}(i - 1)``, every term in [0, 1].

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_X, d)
    Y : array-like or sparse matrix of shape (n_Y, d), default=X
    n_nonzero : int
        Subset size m, ``1 <= m <= d``.
    gamma : float, default=1.0
    kernel : {"rbf", "laplacian"}, default="rbf"

    Returns
    -------
    ndarray of shape (n_X, n_Y)

    References
    ----------
    .. [1] A. May, "Kernel approximation methods for speech recognition", PhD thesis, Columbia
       University, 2017, section 5.2, eq. (5.1).

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels.exact import rbf_kernel, sparse_rbf_kernel
    >>> x, y = np.array([[0.0, 0.0, 0.0]]), np.array([[1.0, 0.0, 2.0]])
    >>> float(sparse_rbf_kernel(x, y, n_nonzero=1, gamma=0.5)[0, 0])  # (e^-0.5 + 1 + e^-2) / 3
    0.5806...
    >>> bool(np.allclose(sparse_rbf_kernel(x, y, n_nonzero=3, gamma=0.5), rbf_kernel(x, y, gamma=0.5)))
    True
    """
    if kernel not in ("rbf", "laplacian"):
        raise ValueError(f"kernel must be 'rbf' or 'laplacian', got {kernel!r}")
    X = _dense(X)
    Y = X if Y is None else _dense(Y)
    d = X.shape[1]
    if Y.shape[1] != d:
        raise ValueError(f"X has {d} features, Y has {Y.shape[1]}")
    m = int(n_nonzero)
    if not 1 <= m <= d:
        raise ValueError(f"n_nonzero must be in [1, {d}] (the input width), got {n_nonzero}")
    E = np.zeros((X.shape[0], Y.shape[0], m + 1))
    E[..., 0] = 1.0
    for i in range(1, d + 1):
        t = X[:, i - 1, None] - Y[None, :, i - 1]
        a = np.exp(-gamma * (t * t if kernel == "rbf" else np.abs(t)))
        for j in range(min(i, m), 0, -1):
            E[..., j] = (i - j) / i * E[..., j] + j / i * a * E[..., j - 1]
    return E[..., m]
