"""Fastfood: the structured matrix is what the paper says, its features are unbiased for the
Gaussian (and Matern-type) kernel, bitwise chunk invariant, and follow the map contract."""

import json
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import special, stats
from scipy.linalg import hadamard
from sklearn.base import clone

from dask_kernels import RFF, Fastfood, from_spec
from dask_kernels.exact.rbf import rbf_kernel
from dask_kernels.maps.fastfood import chi_radii, matern_radii, padded_dim
from dask_kernels.rng import normal, rank


def explicit_V(m):
    """The stacked blocks S H G P H B / (sigma sqrt d) as a dense (k, d) matrix."""
    B, P, G, scale, _ = m._tables()
    d = m.padded_dim_
    H = hadamard(d)
    blocks = [np.diag(scale[t]) @ H @ np.diag(G[t]) @ np.eye(d)[P[t]] @ H @ np.diag(B[t]) for t in range(len(B))]
    return np.vstack(blocks)[: m.n_components]


@pytest.mark.parametrize("d_in,k", [(1, 3), (3, 5), (10, 100), (16, 16), (17, 33)])
def test_matches_explicit_matrix_and_width(d_in, k):
    X = np.random.default_rng(d_in).standard_normal((4, d_in))
    m = Fastfood(n_components=k, gamma=0.3, seed=2, dtype="float64").fit(X)
    assert m.padded_dim_ == padded_dim(d_in) and m.padded_dim_ >= d_in
    Xp = np.zeros((4, m.padded_dim_))
    Xp[:, :d_in] = X
    V = explicit_V(m)
    np.testing.assert_allclose(m.projection_block(X), Xp @ V.T, rtol=1e-12, atol=1e-12)
    Z = m.transform(X)
    assert Z.shape == (4, k) and m.n_output_features_ == k
    np.testing.assert_allclose(Z, np.sqrt(2 / k) * np.cos(Xp @ V.T + m._tables()[4]), rtol=1e-12, atol=1e-12)
    # row lengths: ||V_j|| = s_j / sigma exactly (S folds in 1 / ||G||_F)
    s = chi_radii(np.uint64(2), m.padded_dim_, len(m._tables()[0]) * m.padded_dim_)[:k]
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), s / m.sigma_, rtol=1e-10)


def test_parameters_are_the_hash_functions():
    m = Fastfood(n_components=20, seed=5, dtype="float64").fit(np.ones((1, 8)))
    B, P, G, _, _ = m._tables()
    for t in range(3):
        for i in range(8):
            assert B[t, i] == (1.0 if rank(5, 41, t, i) % 2 == 0 else -1.0)
            assert G[t, i] == normal(5, 43, t, i)
        ranks = [rank(5, 42, t, i) for i in range(8)]
        np.testing.assert_array_equal(P[t], np.argsort(ranks))
        assert sorted(P[t]) == list(range(8))


@pytest.mark.parametrize("d", [1, 2, 16, 1024])
def test_chi_radii_distribution(d):
    s = chi_radii(np.uint64(3), d, 4000)
    assert stats.kstest(s, stats.chi(d).cdf).pvalue > 1e-5


@pytest.mark.parametrize("d,t", [(1, 3), (4, 2), (16, 3), (64, 5)])
def test_matern_radii_distribution(d, t):
    # direct simulation: t vectors uniform in the unit ball of R^d, summed
    rng = np.random.default_rng(d * 10 + t)
    g = rng.standard_normal((20000, t, d))
    xi = g / np.linalg.norm(g, axis=2, keepdims=True) * rng.random((20000, t, 1)) ** (1 / d)
    direct = np.linalg.norm(xi.sum(1), axis=1) * np.sqrt((d + 2) / t)
    ours = matern_radii(np.uint64(1), d, 4000, t)
    assert stats.ks_2samp(ours, direct).pvalue > 1e-5


def _block_means_of_cos(m, delta, n_seeds):
    """Mean of cos(V delta) within each block of d rows: independent across blocks and seeds."""
    means = []
    for s in range(n_seeds):
        proj = m.set_params(seed=s).projection_block(delta[None, :])[0]
        means.append(np.cos(proj).reshape(-1, m.padded_dim_).mean(1))
    return np.concatenate(means)


@pytest.mark.parametrize("direction", ["axis", "random"])
def test_unbiased_gaussian(direction):
    # E cos(w . delta) = exp(-||delta||^2 / (2 sigma^2)) for every row w of V (the rows are
    # exactly Gaussian in distribution: s_j U with s_j ~ chi(d), U uniform on the sphere).
    d_in, sigma = 10, 1.3
    rng = np.random.default_rng(7)
    m = Fastfood(n_components=16 * 500, sigma=sigma, dtype="float64").fit(np.zeros((1, d_in)))
    for r in (0.5, 1.3, 2.5):
        delta = np.zeros(d_in)
        if direction == "axis":
            delta[3] = r
        else:
            v = rng.standard_normal(d_in)
            delta = r * v / np.linalg.norm(v)
        blocks = _block_means_of_cos(m, delta, 8)
        se = blocks.std() / np.sqrt(blocks.size)
        assert abs(blocks.mean() - np.exp(-(r**2) / (2 * sigma**2))) < 5 * se


@pytest.mark.parametrize("d_in,t", [(3, 1), (12, 3)])
def test_unbiased_matern(d_in, t):
    sigma = 1.0
    m = Fastfood(n_components=16 * 500, sigma=sigma, radial="matern", matern_t=t, dtype="float64")
    m.fit(np.zeros((1, d_in)))
    d = m.padded_dim_
    rng = np.random.default_rng(8)
    gaps = []
    for r in (0.5, 1.5, 3.0):
        v = rng.standard_normal(d_in)
        delta = r * v / np.linalg.norm(v)
        rho = r * np.sqrt((d + 2) / t) / sigma
        phi = np.exp(special.gammaln(d / 2 + 1) + (d / 2) * np.log(2 / rho)) * special.jv(d / 2, rho)
        blocks = _block_means_of_cos(m, delta, 8)
        se = blocks.std() / np.sqrt(blocks.size)
        assert abs(blocks.mean() - phi**t) < 5 * se
        gaps.append(abs(phi**t - np.exp(-(r**2) / (2 * sigma**2))) / se)
    # At d = 4, t = 1 (frequencies uniform in a ball) the kernel differs from the Gaussian by
    # many standard errors, so the test can tell them apart; at t = 3 they are already close.
    if t == 1:
        assert max(gaps) > 10


def test_feature_estimates_unbiased_over_seeds():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((8, 6)) * 0.5
    K = rbf_kernel(X, gamma=0.5)
    est = []
    for s in range(300):
        Z = Fastfood(n_components=64, gamma=0.5, seed=s, dtype="float64").fit_transform(X)
        est.append(Z @ Z.T)
    est = np.array(est)
    iu = np.triu_indices(8, 1)
    se = est.std(0)[iu] / np.sqrt(len(est))
    z = (est.mean(0) - K)[iu] / se
    assert np.abs(z).max() < np.sqrt(2 * np.log(2 * len(z) / 1e-6))


def test_error_comparable_to_rff():
    # Same width, 10 seeds each: Fastfood's mean squared error over pairs measured 1.2-1.3x
    # RFF's here (features within a block are dependent). "Comparable": below 1.6x, and not
    # suspiciously better than RFF (which would point at a broken estimate).
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 64)) / 8
    K = rbf_kernel(X, gamma=0.5)
    iu = np.triu_indices(40, 1)
    mse = {}
    for cls in (Fastfood, RFF):
        errs = []
        for s in range(10):
            Z = cls(n_components=256, gamma=0.5, seed=s, dtype="float64").fit_transform(X)
            errs.append((Z @ Z.T - K)[iu])
        mse[cls.__name__] = np.mean(np.square(errs))
    assert 0.7 < mse["Fastfood"] / mse["RFF"] < 1.6


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bitwise_chunk_and_sparse_invariance(dtype):
    rng = np.random.default_rng(10)
    X = rng.standard_normal((37, 20))
    X[rng.random(X.shape) < 0.6] = 0.0
    m = Fastfood(n_components=100, gamma=0.2, seed=3, dtype=dtype).fit(X)
    full = m.transform_block(X)
    parts = np.vstack([m.transform_block(X[a:b]) for a, b in [(0, 1), (1, 9), (9, 10), (10, 37)]])
    np.testing.assert_array_equal(full, parts)
    np.testing.assert_array_equal(full, m.transform_block(sp.csr_matrix(X)))
    np.testing.assert_array_equal(full, m.transform(sp.coo_matrix(X)))
    np.testing.assert_array_equal(full[::-1], m.transform_block(np.ascontiguousarray(X[::-1])))
    np.testing.assert_array_equal(full, m.transform_block(X.astype(np.float32)) if dtype == "float32" else full)


def test_gamma_sigma_equivalence_spec_pickle_clone():
    X = np.random.default_rng(11).standard_normal((6, 5))
    a = Fastfood(n_components=40, gamma=0.5, seed=2**64 - 1).fit(X)
    b = Fastfood(n_components=40, sigma=1.0, seed=2**64 - 1).fit(X)
    Z = a.transform(X)
    np.testing.assert_array_equal(Z, b.transform(X))
    np.testing.assert_array_equal(from_spec(json.loads(a.spec_json())).transform(X), Z)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a)).transform(X), Z)
    np.testing.assert_array_equal(clone(a).fit(X).transform(X), Z)
    assert len(pickle.dumps(a)) < 5000
    default = Fastfood(n_components=10, radial="matern").fit(X)
    assert default.sigma_ == pytest.approx(1 / np.sqrt(2))  # gamma = 1
    np.testing.assert_array_equal(from_spec(default.spec_json()).transform(X), default.transform(X))
    assert list(a.get_feature_names_out()[:2]) == ["fastfood0", "fastfood1"]


def test_errors():
    X = np.ones((5, 3))
    m = Fastfood(n_components=8).fit(X)
    bad = X.copy()
    bad[4, 2] = np.nan
    with pytest.raises(ValueError, match="row 4"):
        m.transform(sp.csr_matrix(bad))
    with pytest.raises(ValueError, match="3 features"):
        m.transform(np.ones((1, 4)))
    with pytest.raises(ValueError, match="not both"):
        Fastfood(gamma=1.0, sigma=1.0).fit(X)
    for params in ({"n_components": 0}, {"gamma": -1.0}, {"sigma": 0.0}, {"sigma": np.inf}, {"radial": "cauchy"},
                   {"matern_t": 0}, {"dtype": "float16"}, {"seed": 1.5}):
        with pytest.raises(ValueError):
            Fastfood(**params).fit(X)


def test_dask_map_blocks_threaded_is_bitwise_identical():
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(12).standard_normal((300, 24))
    m = Fastfood(n_components=70, gamma=0.1, seed=8).fit(X)
    spec = m.spec()
    dX = da.from_array(X, chunks=(37, 24))
    out = dX.map_blocks(
        lambda b: from_spec(spec).transform_block(b),
        dtype=np.float32,
        chunks=(dX.chunks[0], (70,)),
        meta=np.empty((0, 70), np.float32),
    )
    np.testing.assert_array_equal(out.compute(scheduler="threads", num_workers=2), m.transform(X))


def test_golden_bytes_at_d_256():
    # d = 256 takes the radix-16 register pass and the flat-table block kernel; Fastfood uses no
    # BLAS and these arguments stay inside cos32v2's domain, so the bytes are fixed: this digest
    # was taken with the previous version's kernel (views per block, two radix-4 passes).
    import hashlib

    X = np.random.default_rng(1).normal(size=(40, 200)).astype(np.float32)
    fmap = Fastfood(n_components=600, gamma=0.01, seed=3).fit(X)
    assert fmap.padded_dim_ == 256
    Z = fmap.transform(X)
    assert hashlib.sha256(Z.tobytes()).hexdigest()[:16] == "33d078ec3528aaff"
    np.testing.assert_array_equal(fmap.transform(sp.csr_matrix(X)), Z)


@pytest.mark.parametrize("d0, k", [(16, 40), (20, 100), (64, 64), (200, 1000), (512, 700)])
def test_row_group_kernel_equals_the_row_kernel_bitwise(d0, k):
    # The row-group kernel (16 rows interleaved, float32 cos32v2, 16 <= d <= 512) must give the
    # row kernel's bits: in range, with values beyond cos32v2's domain (libm for that 16 x 16
    # group), from float64 input, and with k not a multiple of d (a partial last block).
    import math

    from dask_kernels.maps.fastfood import COS32V2, _project_dense, _project_dense_groups

    rng = np.random.default_rng(d0)
    X = rng.standard_normal((48, d0))
    X[5, 1] = 1e7  # arguments far beyond COS32_MAX in row 5
    m = Fastfood(n_components=k, gamma=1.0 / d0, seed=4).fit(X)
    B, P, G, S, b = m._tables()
    factor = np.float32(math.sqrt(2.0 / k))
    for rows in (X, X.astype(np.float32)):
        expected = np.empty((48, k), np.float32)
        _project_dense(rows, B, P, G, S, b, expected, factor, COS32V2)
        got = np.full((48, k), np.nan, np.float32)
        _project_dense_groups(rows, B, P, G, S, b, got, factor)
        np.testing.assert_array_equal(got.view(np.int32), expected.view(np.int32))
    # CSR rows, with duplicate entries (summed in order), from row 3 on
    from dask_kernels.maps.fastfood import _project_csr, _project_csr_groups

    cols = [np.r_[np.arange(d0)[::-1], [0, d0 - 1]] for _ in range(48)]  # unsorted, two duplicates
    data = [np.r_[row[::-1], 0.5 * row[:1], 0.25 * row[-1:]] for row in X]
    C = sp.csr_matrix((np.concatenate(data), np.concatenate(cols), np.arange(49) * (d0 + 2)), shape=X.shape)
    expected = np.empty((45, k), np.float32)
    _project_csr(C.data, C.indices, C.indptr, 3, B, P, G, S, b, expected, factor, COS32V2)
    got = np.full((45, k), np.nan, np.float32)
    _project_csr_groups(C.data, C.indices, C.indptr, 3, B, P, G, S, b, got[:32], factor)
    _project_csr(C.data, C.indices, C.indptr, 35, B, P, G, S, b, got[32:], factor, COS32V2)
    np.testing.assert_array_equal(got.view(np.int32), expected.view(np.int32))
    from dask_kernels.maps._cos32 import COS32_MAX

    assert np.abs(m.projection_block(X[5:6])).max() > 2 * COS32_MAX  # the scalar path was taken
    assert np.abs(m.projection_block(X[6:48])).max() < COS32_MAX / 2  # and the vector path
