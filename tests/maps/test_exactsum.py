"""Exact float sums (maps/_exactsum.py): equal to the rational sum, for any split and order."""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from dask_kernels.maps._exactsum import SQUARE_MAX, block_sums, exact_mean, exact_values, exact_variance, merge_sums

RNG = np.random.default_rng(5)
#: magnitudes from 1e-13 to 1e13 and signs mixed: a float sum of these depends on the order
X = RNG.standard_normal((400, 5)) * np.exp(RNG.uniform(-30, 30, (400, 5)))
X[::3, 1] = 0.0
X[7, 2] = 5e-324  # a subnormal
X[8, 2] = -1.5e300


def _fraction_sums(A):
    return [sum((Fraction(float(v)) for v in A[:, j]), Fraction(0)) for j in range(A.shape[1])]


def test_column_sums_are_the_exact_rational_sums():
    assert exact_values(block_sums(X, by_column=True)) == _fraction_sums(X)


@pytest.mark.parametrize("cuts", [[1], [7, 200], [13, 14, 150, 399]])
def test_any_split_and_merge_order_gives_the_same_sums(cuts):
    whole = block_sums(X, by_column=True)
    parts = [block_sums(p, by_column=True) for p in np.split(X, cuts)]
    for merged in (merge_sums(*parts), merge_sums(*parts[::-1]), merge_sums(merge_sums(*parts[:1]), *parts[1:])):
        assert exact_values(merged) == exact_values(whole)
    # while the float sums of the same parts differ (the test data is such that order matters)
    floats = {tuple(sum(p.sum(axis=0) for p in np.split(X, c))) for c in ([1], [7, 200], [13, 14, 150, 399])}
    assert len(floats) > 1


def test_squares_and_variance_are_exact():
    # squares of |x| <= 2**500, and no underflow in Dekker's products (the subnormal row)
    ok = (np.abs(X) < 1e100) & ((np.abs(X) > 1e-100) | (X == 0))
    Y = X[ok.all(axis=1)]
    assert Y.shape[0] > 300
    total = sum((Fraction(float(v)) for v in Y.ravel()), Fraction(0))
    squares = sum((Fraction(float(v)) ** 2 for v in Y.ravel()), Fraction(0))
    s, q = exact_values(block_sums(Y, squares=True))
    assert (s, q) == (total, squares)
    mean, var = exact_variance(block_sums(Y, squares=True), Y.size)
    assert var == squares / Y.size - (total / Y.size) ** 2
    assert float(var) == pytest.approx(Y.var(), rel=1e-9)


def test_csr_and_dense_give_the_same_sums_and_empty_blocks_merge_away():
    S = sp.csr_matrix(X)
    for kw in ({"by_column": True}, {"squares": True, "unit": True}):
        assert exact_values(block_sums(S, **kw)) == exact_values(block_sums(X, **kw))
    empty = block_sums(np.zeros((0, 5)), by_column=True)
    assert exact_values(merge_sums(empty, block_sums(X, by_column=True), None)) == _fraction_sums(X)


def test_mean_is_correctly_rounded():
    A = np.array([[1e16], [1.0], [-1e16], [1.0], [3.0]] * 40)
    assert exact_mean(block_sums(A, by_column=True), A.shape[0])[0] == 200 / A.shape[0]


def test_a_square_that_would_not_be_exact_is_refused():
    with pytest.raises(ValueError, match="above 2\\*\\*500"):
        block_sums(np.array([[SQUARE_MAX * 2]]), squares=True)
