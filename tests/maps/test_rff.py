"""RFF: unbiased kernel estimates with the theoretical variance, chunk invariance, contract."""

import json
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from _blas_rounding import assert_same_features
from sklearn.base import clone

from dask_kernels import RFF, from_spec
from dask_kernels.exact.rbf import laplacian_kernel, rbf_kernel
from dask_kernels.rng import normal, uniform

# For a Gaussian tail, P(|z| > t) <= 2 exp(-t^2 / 2); with P pairs and a family-wise false
# alarm rate of 1e-6, the max standardized error stays below sqrt(2 ln(2 P / 1e-6)).


def max_z(n_pairs, alpha=1e-6):
    return np.sqrt(2 * np.log(2 * n_pairs / alpha))


def product_variance(K, K2):
    """Variance of one RFF product 2 cos(a) cos(b): 1 + K(2 delta) / 2 - K(delta)^2."""
    return 1.0 + K2 / 2.0 - K**2


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_unbiased_with_theoretical_variance(kernel):
    # Mean over S independent seeds of each pair's estimate: within max_z standard errors of
    # the exact kernel, with the standard error from the exact per-product variance.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 5)) * 0.4
    gamma, k, S = 0.7, 500, 40
    exact = rbf_kernel if kernel == "rbf" else laplacian_kernel
    K = exact(X, gamma=gamma)
    K2 = exact(2 * X, gamma=gamma)  # K at twice the difference
    est = 0.0
    for s in range(S):
        Z = RFF(n_components=k, gamma=gamma, kernel=kernel, seed=s, dtype="float64").fit_transform(X)
        est = est + Z @ Z.T / S
    iu = np.triu_indices(len(X), 1)
    se = np.sqrt(product_variance(K, K2) / (k * S))
    z = (est - K)[iu] / se[iu]
    assert np.abs(z).max() < max_z(len(iu[0]))
    # and the spread across seeds is the theoretical one (chi-square-ish check on one pair)
    Zs = [RFF(n_components=k, gamma=gamma, kernel=kernel, seed=s).fit_transform(X[:2]) for s in range(200)]
    e = np.array([z[0] @ z[1] for z in Zs]) - K[0, 1]
    var_theory = product_variance(K[0, 1], K2[0, 1]) / k
    # sample variance of 200 draws: relative SE sqrt(2 / 199) ~ 0.1; allow 5 of them
    assert abs(e.var() / var_theory - 1) < 0.5


def test_max_error_bounded():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 8)) * 0.3
    k = 4000
    Z = RFF(n_components=k, gamma=1.0, seed=5).fit_transform(X)
    K = rbf_kernel(X, gamma=1.0)
    iu = np.triu_indices(len(X), 1)
    sd = np.sqrt(product_variance(K, K**4) / k)[iu]
    assert np.abs((Z @ Z.T - K)[iu] / sd).max() < max_z(len(iu[0]))


def test_parameters_are_the_hash_functions():
    X = np.zeros((1, 3))
    m = RFF(n_components=4, gamma=2.0, seed=9, dtype="float64").fit(X)
    W, b = m._tables()
    for i in range(3):
        for j in range(4):
            assert W[i, j] == np.sqrt(4.0) * normal(9, 21, j, i)
    assert np.allclose(b, [2 * np.pi * uniform(9, 23, j, 0) for j in range(4)])
    # a wider map extends a narrower one
    wide = RFF(n_components=8, gamma=2.0, seed=9, dtype="float64").fit(X)
    np.testing.assert_array_equal(wide._tables()[0][:, :4], W)


def test_output_width_dtype_scaling():
    X = np.random.default_rng(2).standard_normal((5, 4))
    for dtype in ("float32", "float64"):
        m = RFF(n_components=37, seed=1, dtype=dtype).fit(X)
        Z = m.transform(X)
        assert Z.shape == (5, 37) and Z.dtype == np.dtype(dtype)
        assert m.n_output_features_ == 37 and m.output_dtype_ == np.dtype(dtype)
        assert np.abs(Z).max() <= np.sqrt(2 / 37) * (1 + 1e-6)
    W, b = RFF(n_components=37, seed=1, dtype="float64").fit(X)._tables()
    np.testing.assert_allclose(
        RFF(n_components=37, seed=1, dtype="float64").fit(X).transform(X), np.sqrt(2 / 37) * np.cos(X @ W + b)
    )
    assert list(RFF(n_components=3).fit(X).get_feature_names_out()) == ["rff0", "rff1", "rff2"]


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_chunk_and_sparse_invariance(kernel):
    # BLAS rounding may depend on the block shape: features agree to 1e-5 * (1 + |w.x + b|).
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 20))
    X[rng.random(X.shape) < 0.6] = 0.0
    m = RFF(n_components=300, gamma=0.5, kernel=kernel, seed=4).fit(X)
    W, b = m._tables()
    tol = 1e-5 * (1 + np.abs(X @ W.astype(np.float64) + b).max()) * np.sqrt(2 / 300)
    full = m.transform_block(X)
    parts = np.vstack([m.transform_block(X[:7]), m.transform_block(X[7:8]), m.transform_block(X[8:])])
    assert np.abs(full - parts).max() <= tol
    assert np.abs(full - m.transform_block(sp.csr_matrix(X))).max() <= tol
    assert np.abs(full - m.transform(sp.csc_matrix(X))).max() <= tol


def test_spec_round_trip_pickle_clone():
    X = np.random.default_rng(4).standard_normal((6, 5))
    m = RFF(n_components=16, gamma=0.3, kernel="laplacian", seed=2**63 + 5).fit(X)
    Z = m.transform(X)
    rebuilt = from_spec(json.loads(m.spec_json()))
    assert isinstance(rebuilt, RFF)
    np.testing.assert_array_equal(rebuilt.transform(X), Z)
    blob = pickle.dumps(m)
    assert len(blob) < 5000  # the cached table is not pickled
    np.testing.assert_array_equal(pickle.loads(blob).transform(X), Z)
    np.testing.assert_array_equal(clone(m).fit(X).transform(X), Z)


def test_errors_name_the_row_and_width():
    X = np.ones((5, 3))
    m = RFF(n_components=4).fit(X)
    bad = X.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="row 3"):
        m.transform(bad)
    with pytest.raises(ValueError, match="row 3"):
        m.transform(sp.csr_matrix(bad))
    with pytest.raises(ValueError, match="4 features"):
        m.transform(np.ones((2, 4)))
    with pytest.raises(ValueError, match="4 features"):  # the check is validate_block's (maps trust it)
        m.validate_block(np.ones((2, 4)))


@pytest.mark.parametrize(
    "params",
    [
        {"n_components": 0},
        {"n_components": 2.5},
        {"gamma": 0.0},
        {"gamma": -1.0},
        {"gamma": np.inf},
        {"kernel": "poly"},
        {"seed": -1},
        {"dtype": "float16"},
    ],
)
def test_nonsense_parameters(params):
    with pytest.raises(ValueError):
        RFF(**params).fit(np.ones((3, 2)))


@pytest.mark.parametrize("cls", ["RFF", "NRFF"])
@pytest.mark.parametrize("n", [65, 512, 2100, 8200, 9000])
def test_tiled_public_transform_is_the_block_transform_for_any_n_jobs(cls, n, monkeypatch):
    # Wide float32 maps cut dense input into column panels (projection_tiles): every value
    # must be the one transform_block computes on its row block (BLAS held to one thread, as
    # the public transform holds it) up to the rounding of the BLAS's product over other columns
    # or threads, the same bits for any n_jobs, and the tiles must cover the output once.
    # At 8200 and 9000 rows the row blocks fill 2 CPUs (no panels): at 8200 (the table bound
    # lowered to this small W) the product is one call on all rows with the BLAS's threads; at
    # 9000 each tile of whole rows computes its rows' features too.
    from threadpoolctl import threadpool_limits

    from dask_kernels import NRFF
    from dask_kernels.maps import _fourier
    from dask_kernels.maps._fourier import product_on_blas, projection_tiles, tiled
    from dask_kernels.maps._parallel import usable_cpus

    if n == 8200:
        monkeypatch.setattr(_fourier, "BLAS_TABLE_MIN", 0)
    X = np.random.default_rng(n).normal(size=(n, 40)).astype(np.float32)
    fmap = {"RFF": RFF, "NRFF": NRFF}[cls](n_components=1100, gamma=0.1, seed=5).fit(X)
    assert tiled(fmap) == (usable_cpus() > 1)
    if usable_cpus() == 2:  # (the row blocks fill other CPU counts at other row counts)
        assert (product_on_blas(fmap, X, fmap._tables()[0], None) is not None) == (n == 8200)
    tiles = projection_tiles(fmap, n)
    cover = np.zeros((n, 1100), dtype=int)
    for a, b, c0, c1 in tiles:
        cover[a:b, c0:c1] += 1
        assert c0 % 16 == 0 and c1 - c0 >= 512
    assert (cover == 1).all()
    outs = [fmap.set_params(n_jobs=j).transform(X) for j in (1, 2, 3)]
    with threadpool_limits(1, user_api="blas"):
        ref = np.concatenate([fmap.transform_block(X[a:b]) for a, b in sorted({t[:2] for t in tiles})])
    for out in outs:  # bitwise where the tiles are whole row blocks; else to the product's rounding
        assert_same_features(fmap, X, out, ref)
    if n == 8200:  # the product on the BLAS's threads: bitwise for any n_jobs but 1 (one BLAS thread)
        np.testing.assert_array_equal(outs[1], outs[2])
    else:  # tiles held to one BLAS thread, the same tiles for any n_jobs: bitwise
        np.testing.assert_array_equal(outs[0], outs[1])
        np.testing.assert_array_equal(outs[0], outs[2])
