"""RFF(density=s): sparse random features (May 2017, section 5.2).

Each frequency vector is the dense map's, kept on m uniformly random inputs. The features are
then unbiased for the sparse kernel k_m (dask_kernels.exact.sparse_rbf_kernel) with the
variance of every random Fourier feature, 1 + k_m(2 delta) / 2 - k_m(delta)^2 per product.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import comb

from dask_kernels import RFF, from_spec
from dask_kernels.exact import laplacian_kernel, rbf_kernel, sparse_rbf_kernel


def max_z(n, alpha=1e-6):
    """Gaussian tail bound: P(max of n |z| > t) <= alpha for t = sqrt(2 ln(2 n / alpha))."""
    return np.sqrt(2 * np.log(2 * n / alpha))


def test_sparse_kernel_brute_force():
    # the recurrence against the definition (all C(6, 3) = 20 subsets)
    from itertools import combinations

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(1, 6)), rng.normal(size=(1, 6))
    for kernel, k1 in (("rbf", lambda t: np.exp(-0.3 * t * t)), ("laplacian", lambda t: np.exp(-0.3 * abs(t)))):
        a = k1(x[0] - y[0])
        brute = np.mean([np.prod(a[list(F)]) for F in combinations(range(6), 3)])
        assert sparse_rbf_kernel(x, y, n_nonzero=3, gamma=0.3, kernel=kernel)[0, 0] == pytest.approx(brute, rel=1e-12)
    assert comb(6, 3) == 20
    X = rng.normal(size=(5, 6))
    np.testing.assert_allclose(sparse_rbf_kernel(X, n_nonzero=6, gamma=0.3), rbf_kernel(X, gamma=0.3), rtol=1e-12)
    np.testing.assert_allclose(sparse_rbf_kernel(X, n_nonzero=6, gamma=0.3, kernel="laplacian"),
                               laplacian_kernel(X, gamma=0.3), rtol=1e-12)


def test_rescaled_gamma_matches_the_gaussian_to_second_order():
    # k_m(gamma d / m) = 1 - gamma ||delta||^2 + O(||delta||^4), like exp(-gamma ||delta||^2)
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=(1, 30)), rng.normal(size=(1, 30))
    for eps in (1e-1, 1e-2):
        a, b = x * eps, y * eps
        r2 = 0.5 * float(((a - b) ** 2).sum())
        diff = abs(sparse_rbf_kernel(a, b, n_nonzero=6, gamma=0.5 * 30 / 6)[0, 0] - rbf_kernel(a, b, gamma=0.5)[0, 0])
        assert diff < 5 * r2**2 * 30 / 6  # fourth order: the subset variance of the sum, times (d / m)
        assert diff > 0.01 * r2**2  # and not better: the kernels differ


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("density", [0.05, 0.25, 0.6])
def test_unbiased_for_the_sparse_kernel_with_theoretical_variance(kernel, density):
    rng = np.random.default_rng(1)
    d = 20
    X = rng.normal(size=(10, d)) * 0.5
    gamma, k, S = 0.5, 2000, 5
    m = max(1, round(density * d))
    K = sparse_rbf_kernel(X, n_nonzero=m, gamma=gamma, kernel=kernel)
    K2 = sparse_rbf_kernel(2 * X, n_nonzero=m, gamma=gamma, kernel=kernel)
    est = 0.0
    for s in range(S):
        fmap = RFF(n_components=k, gamma=gamma, kernel=kernel, density=density, seed=s, dtype="float64")
        Z = fmap.fit_transform(X)
        assert fmap.n_nonzero_ == m
        est = est + Z @ Z.T / S
    iu = np.triu_indices(len(X), 1)
    se = np.sqrt((1.0 + K2 / 2.0 - K**2) / (k * S))
    z = (est - K)[iu] / se[iu]
    assert np.abs(z).max() < max_z(len(iu[0]))
    # and it is not the dense kernel: at density 0.05 (m = 1) the two differ by far more than se
    if density == 0.05:
        dense = (rbf_kernel if kernel == "rbf" else laplacian_kernel)(X, gamma=gamma)
        assert np.abs((est - dense)[iu] / se[iu]).max() > 10 * max_z(len(iu[0]))


def test_support_is_uniform_and_values_are_the_dense_maps():
    d, k, density = 50, 4000, 0.1
    X = np.zeros((1, d))
    fmap = RFF(n_components=k, density=density, seed=2, dtype="float64").fit(X)
    W, phase = fmap._tables()
    m = fmap.n_nonzero_
    assert m == 5 and W.idx.shape == (k, m)
    assert np.all(np.diff(W.idx, axis=1) > 0) and W.idx.min() >= 0 and W.idx.max() < d  # distinct, sorted
    # each input is in a support with probability m / d: binomial counts within 5 sigma
    counts = np.bincount(W.idx.ravel(), minlength=d)
    p = m / d
    assert np.abs(counts - k * p).max() < 5 * np.sqrt(k * p * (1 - p))
    # the nonzero values are the dense map's entries, bitwise; phases too
    dense_W, dense_phase = RFF(n_components=k, seed=2, dtype="float64").fit(X)._tables()
    assert all(np.array_equal(W.vals[c], dense_W[W.idx[c], c]) for c in range(k))
    assert np.array_equal(phase, dense_phase)


def test_full_support_matches_the_dense_map():
    # density just below 1 on d = 8 rounds to m = d: the sparse path computes the dense features
    X = np.random.default_rng(3).normal(size=(30, 8))
    dense = RFF(n_components=64, gamma=0.5, seed=4, dtype="float64").fit_transform(X)
    sparse = RFF(n_components=64, gamma=0.5, seed=4, dtype="float64", density=0.99).fit(X)
    assert sparse.n_nonzero_ == 8
    np.testing.assert_allclose(sparse.transform(X), dense, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dense_csr_and_chunks_agree_bitwise(dtype):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 30))
    X[rng.random(X.shape) < 0.7] = 0.0
    fmap = RFF(n_components=100, density=0.2, seed=6, dtype=dtype).fit(X)
    Z = fmap.transform(X)
    assert Z.dtype == np.dtype(dtype)
    assert np.array_equal(fmap.transform(sp.csr_matrix(X)), Z)
    assert np.array_equal(np.vstack([fmap.transform(X[i : i + 7]) for i in range(0, 40, 7)]), Z)
    # feature ids and density compose: columns of the full sparse map
    ids = [99, 3, 50]
    sub = RFF(n_components=3, density=0.2, seed=6, dtype=dtype, feature_ids=ids).fit(X)
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(sub.transform(X), Z[:, ids] * np.sqrt(100 / 3), rtol=0, atol=tol)


def test_spec_round_trip_and_bad_density():
    X = np.random.default_rng(7).normal(size=(5, 12))
    fmap = RFF(n_components=16, density=0.3, seed=1).fit(X)
    assert fmap.spec()["params"]["density"] == 0.3
    assert np.array_equal(from_spec(fmap.spec_json()).transform(X), fmap.transform(X))
    for bad in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="density"):
            RFF(density=bad).fit(X)
        spec = fmap.spec()
        spec["params"]["density"] = bad
        with pytest.raises(ValueError, match=r"spec\['params'\]\['density'\]"):
            from_spec(spec)
    with pytest.raises(ValueError, match="stored nonzeros"):
        RFF(n_components=2**20, density=1.0 - 1e-9).fit(np.zeros((1, 2**12)))
