"""Exact GMM and min-max kernels, and GMM's theory under bivariate normal data (seed 000)."""

import numpy as np
import pytest
import scipy.sparse as sp

from dask_kernels import gmm_kernel, minmax_kernel


def _gmm_reference(x, y):
    xs = np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)])
    ys = np.concatenate([np.maximum(y, 0), np.maximum(-y, 0)])
    den = np.maximum(xs, ys).sum()
    return np.minimum(xs, ys).sum() / den if den > 0 else 1.0


def test_matches_sign_split_definition_dense_and_csr():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 9))
    X[rng.uniform(size=X.shape) < 0.4] = 0
    Y = rng.normal(size=(4, 9)) * 3
    ref = np.array([[_gmm_reference(x, y) for y in Y] for x in X])
    np.testing.assert_allclose(gmm_kernel(X, Y), ref, rtol=1e-12)
    np.testing.assert_allclose(gmm_kernel(sp.csr_matrix(X), sp.csr_matrix(Y)), ref, rtol=1e-12)
    np.testing.assert_allclose(gmm_kernel(sp.csr_matrix(X), Y), ref, rtol=1e-12)


def test_properties():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 7))
    K = gmm_kernel(X)
    np.testing.assert_allclose(K, K.T)
    np.testing.assert_allclose(np.diag(K), 1.0)
    assert K.min() >= 0 and K.max() <= 1
    np.testing.assert_allclose(gmm_kernel(3.0 * X), K)  # scale invariance
    assert np.all(np.linalg.eigvalsh(K) > -1e-12)  # positive semi-definite


def test_zero_rows_convention():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    K = gmm_kernel(X)
    assert K[0, 1] == 1.0 and K[0, 2] == 0.0


def test_center_shifts_rows():
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(4, 5))
    mu = X.mean(axis=0)
    np.testing.assert_allclose(gmm_kernel(X, center=mu), gmm_kernel(X - mu))


def test_minmax():
    X = np.array([[1.0, 0.0, 3.0]])
    Y = np.array([[1.0, 2.0, 1.0]])
    assert minmax_kernel(X, Y)[0, 0] == pytest.approx(2 / 6)
    with pytest.raises(ValueError, match="row 1"):
        minmax_kernel(np.array([[1.0, 2.0], [1.0, -1.0]]))


def test_nan_names_row():
    X = np.ones((4, 3))
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="row 2"):
        gmm_kernel(X)


def f_inf(rho):
    s = np.sqrt((1 - rho) / 2)
    return (1 - s) / (1 + s)


def f_1(rho):
    s = np.sqrt((1 - rho) / 2)
    return rho + (np.sqrt(1 - rho**2) * np.log(2 - 2 * rho) - 2 * rho * np.arcsin(s)) / np.pi


@pytest.mark.parametrize("rho, table_f1, table_finf", [(-0.5, 0.136182, 0.071797), (0.0, 0.220636, 0.171573), (0.5, 1 / 3, 1 / 3), (0.9, 0.547484, 0.634512)])
def test_reference_formulas(rho, table_f1, table_finf):
    assert f_1(rho) == pytest.approx(table_f1, abs=1e-6)
    assert f_inf(rho) == pytest.approx(table_finf, abs=1e-6)


@pytest.mark.parametrize("rho", [-0.5, 0.0, 0.5, 0.9])
def test_gmm_of_bivariate_normal_tends_to_f_inf(rho):
    # GMM = A / B with A, B sums of D iid terms; by the delta method its standard error is
    # sd(m - g M) / (sqrt(D) E[M]). Check the limit within 4.5 standard errors at D = 200k.
    D = 200_000
    rng = np.random.default_rng(7)
    cov = [[1.0, rho], [rho, 1.0]]
    xy = rng.multivariate_normal([0, 0], cov, size=D)
    x, y = xy[:, 0], xy[:, 1]
    g = gmm_kernel(x[None], y[None])[0, 0]
    same = (x > 0) == (y > 0)
    m = np.where(same, np.minimum(abs(x), abs(y)), 0.0)
    M = np.where(same, np.maximum(abs(x), abs(y)), abs(x) + abs(y))
    se = np.std(m - g * M) / (np.sqrt(D) * M.mean())
    assert abs(g - f_inf(rho)) < 4.5 * se


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_gmm_in_one_dimension_has_mean_f_1(rho):
    n = 200_000
    rng = np.random.default_rng(8)
    xy = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n)
    x, y = xy[:, 0], xy[:, 1]
    same = (x > 0) == (y > 0)
    g = np.where(same, np.minimum(abs(x), abs(y)) / np.maximum(abs(x), abs(y)), 0.0)
    # the same as gmm_kernel on D = 1 rows (checked on a few)
    for i in range(5):
        assert gmm_kernel(x[i : i + 1, None], y[i : i + 1, None])[0, 0] == pytest.approx(g[i])
    assert abs(g.mean() - f_1(rho)) < 4.5 * g.std() / np.sqrt(n)
