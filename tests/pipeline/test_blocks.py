"""Finite checks name the first bad row and column, for every dtype, layout and kind of value."""

import re

import numpy as np
import pytest
import scipy.sparse as sp

from dask_kernels.blocks import check_finite_rows, validate_block


def first_nonfinite(X):
    """(row, column) named by validate_block's error, or (-1, -1)."""
    try:
        validate_block(X)
    except ValueError as e:
        m = re.search(r"row (\d+), column (\d+)", str(e))
        return int(m.group(1)), int(m.group(2))
    return -1, -1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [(0, 0), (37, 5), (199, 63)])
def test_first_nonfinite_finds_the_first_bad_value(dtype, bad, where):
    X = np.random.default_rng(0).standard_normal((200, 64)).astype(dtype)
    assert first_nonfinite(X) == (-1, -1) and first_nonfinite(sp.csr_matrix(X)) == (-1, -1)
    X[where] = bad
    X[199, 0] = bad  # a later bad value must not win
    expected = min(where, (199, 0))
    assert first_nonfinite(X) == expected
    assert first_nonfinite(sp.csr_matrix(X)) == expected
    assert first_nonfinite(np.asfortranarray(X)) == expected


def test_check_finite_rows_names_global_rows():
    X = np.ones((10, 4), np.float32)
    check_finite_rows(X, 100)
    X[6, 2] = np.inf
    with pytest.raises(ValueError, match=r"\(inf\) in row 106, column 2"):
        check_finite_rows(X, 100)
    with pytest.raises(ValueError, match="in row 9006, column 2"):
        check_finite_rows(sp.csr_matrix(X), row_numbers=np.arange(10) + 9000)
