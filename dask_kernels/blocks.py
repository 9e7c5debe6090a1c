"""Input blocks as the Numba kernels expect them, and finite checks that name the row.

Dense blocks are C-contiguous float arrays; sparse blocks are CSR with sorted, unique column
indices (duplicates summed), so that dense and sparse input of the same rows visit nonzeros in
the same order and give identical results.
"""

import numpy as np
import scipy.sparse as sp
from numba import njit


@njit(nogil=True, cache=True)
def _first_nonfinite_dense(X):
    n, d = X.shape
    for i in range(n):
        for j in range(d):
            if not np.isfinite(X[i, j]):
                return i, j
    return -1, -1


@njit(nogil=True, cache=True)
def _first_nonfinite_csr(data, indices, indptr):
    for i in range(indptr.size - 1):
        for p in range(indptr[i], indptr[i + 1]):
            if not np.isfinite(data[p]):
                return i, indices[p]
    return -1, -1


def check_finite_rows(X, row_offset=0):
    """Raise ``ValueError`` naming the first row (global number) holding NaN or infinity."""
    if sp.issparse(X):
        row, col = _first_nonfinite_csr(X.data, X.indices, X.indptr)
        value = X[row, col] if row >= 0 else None
    else:
        row, col = _first_nonfinite_dense(X)
        value = X[row, col] if row >= 0 else None
    if row >= 0:
        raise ValueError(
            f"Input contains NaN or infinity ({value}) in row {row + row_offset}, column {col}; "
            "clean or impute the data first."
        )


def as_block(X, dtype=(np.float64, np.float32)):
    """Coerce an already-validated block to what ``transform_block`` kernels expect.

    Dense input becomes C-contiguous; sparse input becomes CSR with sorted indices, duplicates
    summed and explicit zeros kept out of the nonzero count.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if X.dtype not in dtype:
            X = X.astype(dtype[0])
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        return X
    X = np.asarray(X)
    if X.dtype not in dtype:
        X = X.astype(dtype[0])
    return np.ascontiguousarray(X)
