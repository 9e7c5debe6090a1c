"""The fast Walsh-Hadamard transform equals scipy's Hadamard matrix product, exactly."""

import numpy as np
import pytest
from scipy.linalg import hadamard

from dask_kernels.maps._fwht import fwht, fwht_gathered, fwht_scaled


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096])
def test_matches_hadamard_exactly(d, dtype):
    # Small integers: every partial sum is an integer below 2**24, exact in float32.
    X = np.random.default_rng(d).integers(-8, 9, size=(7, d)).astype(dtype)
    expected = X.astype(np.int64) @ hadamard(d).astype(np.int64)
    Y = X.copy()
    assert fwht(Y) is Y
    np.testing.assert_array_equal(Y, expected.astype(dtype))


def test_one_dimensional_and_involution():
    x = np.arange(16, dtype=np.float32)
    y = fwht(x.copy())
    np.testing.assert_array_equal(y, hadamard(16) @ np.arange(16))
    np.testing.assert_array_equal(fwht(y), 16 * x)  # H H = d I


def test_rows_are_independent():
    X = np.random.default_rng(0).integers(-3, 4, size=(33, 64)).astype(np.float32)
    full = fwht(X.copy())
    parts = np.vstack([fwht(X[:5].copy()), fwht(X[5:6].copy()), fwht(X[6:].copy())])
    np.testing.assert_array_equal(full, parts)


def test_bad_input():
    with pytest.raises(ValueError, match="power of two"):
        fwht(np.zeros((2, 12), np.float32))
    with pytest.raises(TypeError):
        fwht(np.zeros((2, 8), np.int64))
    with pytest.raises(ValueError, match="C-contiguous"):
        fwht(np.zeros((8, 4), np.float32).T)


def _radix2_reference(X):
    """The definition, stage by stage in numpy: span h pairs (lo, hi) -> (lo + hi, lo - hi)."""
    X = X.copy()
    n, d = X.shape
    h = 1
    while h < d:
        Y = X.reshape(n, d // (2 * h), 2, h)
        lo, hi = Y[:, :, 0, :].copy(), Y[:, :, 1, :].copy()
        Y[:, :, 0, :] = lo + hi
        Y[:, :, 1, :] = lo - hi
        h *= 2
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [1, 2, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384])
def test_rounding_is_bitwise_the_radix2_definition(d, dtype):
    # Non-integer values, so every addition rounds: the vector stages and their grouping into
    # radix-8/4/2 register passes must not change a bit of the Fastfood features built on them.
    X = np.random.default_rng(d + 1).standard_normal((3, d)).astype(dtype)
    np.testing.assert_array_equal(fwht(X.copy()), _radix2_reference(X))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [16, 32, 256, 1024, 4096])
def test_fused_diagonal_and_permutation_change_no_bit(d, dtype):
    # Fastfood's H B x and H G P u with the product and the gather fused into the first pass
    # (rows of at least one 512-bit vector): bitwise the separate product / gather, then H.
    rng = np.random.default_rng(d)
    x, scale = rng.standard_normal((2, d)).astype(dtype)
    index = rng.permutation(d).astype(np.int32)
    out = np.empty(d, dtype)
    fwht_scaled(x, scale, out)
    np.testing.assert_array_equal(out, _radix2_reference((x * scale)[None])[0])
    fwht_gathered(x, index, scale, out)
    np.testing.assert_array_equal(out, _radix2_reference((x[index] * scale)[None])[0])
