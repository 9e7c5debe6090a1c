"""NRFF: unit-length features whose inner products estimate exp(-gamma (1 - rho)) with
variance V_n / k (Li 2017, Theorem 3), against RFF's V / k."""

import json
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from dask_kernels import NRFF, RFF, from_spec
from dask_kernels.exact.rbf import cosine_rbf_kernel


def v_rff(rho, gamma):
    return 0.5 + 0.5 * (1 - np.exp(-2 * gamma * (1 - rho))) ** 2


def v_nrff(rho, gamma):
    e = np.exp(-2 * gamma * (1 - rho))
    return v_rff(rho, gamma) - 0.25 * e * (3 - e**2)


def pair(rho, d=6):
    u = np.zeros(d)
    v = np.zeros(d)
    u[0] = 1.0
    v[0], v[1] = rho, np.sqrt(1 - rho**2)
    return np.vstack([u, 3.0 * v])  # NRFF must not care about the length


@pytest.mark.parametrize("rho,gamma", [(0.9, 1.0), (0.5, 2.0), (0.0, 0.5)])
@pytest.mark.parametrize("k", [32, 256])
def test_mse_matches_theory(rho, gamma, k):
    # R independent seeds; the MSE's Monte-Carlo standard error is the sample sd of the squared
    # errors over sqrt(R). Allow 5 standard errors. V_n / k is Li's large-k approximation
    # (accurate for k > 10), its O(1/k^2) remainder is far below these errors.
    R = 1500
    X = pair(rho)
    K = np.exp(-gamma * (1 - rho))
    nrff = NRFF(n_components=k, gamma=gamma, dtype="float64").fit(X)
    rff = RFF(n_components=k, gamma=gamma / 2, dtype="float64").fit(X / np.linalg.norm(X, axis=1, keepdims=True))
    U = rff._validate_input(X / np.linalg.norm(X, axis=1, keepdims=True), reset=False)
    mse = {}
    for model, Xin, V in [(nrff, X, v_nrff(rho, gamma)), (rff, U, v_rff(rho, gamma))]:
        sq = np.empty(R)
        for s in range(R):
            model.set_params(seed=s)
            Z = model.transform_block(Xin)
            sq[s] = (Z[0] @ Z[1] - K) ** 2
        se = sq.std() / np.sqrt(R)
        assert abs(sq.mean() - V / k) < 5 * se, (type(model).__name__, sq.mean(), V / k, se)
        mse[type(model).__name__] = (sq.mean(), se)
    # Power: where the two theories differ by more than 10 SE, NRFF's MSE rejects RFF's V / k.
    gap = (v_rff(rho, gamma) - v_nrff(rho, gamma)) / k
    if gap > 10 * mse["NRFF"][1]:
        assert abs(mse["NRFF"][0] - v_rff(rho, gamma) / k) > 5 * mse["NRFF"][1]


def test_kernel_approximation_and_unit_rows():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((25, 10))
    X[0] = 0.0  # zero row: u = 0, documented
    gamma, k = 1.5, 3000
    Z = NRFF(n_components=k, gamma=gamma, seed=3).fit_transform(X)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-5)
    K = cosine_rbf_kernel(X, gamma=gamma)
    est = Z @ Z.T
    # the zero row: kernel exp(-gamma / 2) with every other row; one product has variance <= 1
    assert np.abs(est[0, 1:] - np.exp(-gamma / 2)).max() < np.sqrt(2 * np.log(2 * 24 / 1e-6) / k)
    iu = np.triu_indices(len(X), 1)
    iu = (iu[0][iu[0] > 0], iu[1][iu[0] > 0])
    rho = np.log(K[iu]) / gamma + 1
    sd = np.sqrt(v_nrff(rho, gamma) / k)
    z = (est[iu] - K[iu]) / sd
    assert np.abs(z).max() < np.sqrt(2 * np.log(2 * len(rho) / 1e-6))
    # mean error over pairs near 0 (errors are correlated, so bound by the mean sd)
    assert abs((est[iu] - K[iu]).mean()) < 5 * sd.mean()


def test_chunk_and_sparse_invariance():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 30))
    X[rng.random(X.shape) < 0.7] = 0
    m = NRFF(n_components=200, gamma=2.0, seed=7).fit(X)
    # float32 BLAS rounding of the argument sqrt(gamma) r . u (+ phase), on features of size
    # ~1/sqrt(k): tolerance 1e-5 * (1 + max |argument|) / sqrt(k), as documented.
    W, phase = m._tables()
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    U = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)
    tol = 1e-5 * (1 + np.abs(U @ W.astype(np.float64) + phase).max()) / np.sqrt(200)
    full = m.transform_block(X)
    parts = np.vstack([m.transform_block(X[:3]), m.transform_block(X[3:4]), m.transform_block(X[4:])])
    assert np.abs(full - parts).max() < tol
    assert np.abs(full - m.transform_block(sp.csr_matrix(X))).max() < tol


def test_spec_pickle_clone_and_dtype():
    X = np.random.default_rng(2).standard_normal((5, 4))
    m = NRFF(n_components=12, gamma=0.4, seed=11, dtype="float64").fit(X)
    Z = m.transform(X)
    assert Z.dtype == np.float64 and Z.shape == (5, 12) and m.n_output_features_ == 12
    np.testing.assert_array_equal(from_spec(json.loads(m.spec_json())).transform(X), Z)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).transform(X), Z)
    np.testing.assert_array_equal(clone(m).fit(X).transform(X), Z)
    assert NRFF(n_components=12).fit(X).transform(X).dtype == np.float32
    assert list(m.get_feature_names_out()[:2]) == ["nrff0", "nrff1"]


def test_errors():
    X = np.ones((4, 3))
    m = NRFF(n_components=5).fit(X)
    bad = X.copy()
    bad[2, 0] = -np.inf
    with pytest.raises(ValueError, match="row 2"):
        m.transform(bad)
    with pytest.raises(ValueError, match="3 features"):
        m.transform(np.ones((1, 2)))
    for params in ({"n_components": 0}, {"gamma": 0}, {"gamma": np.nan}, {"dtype": "int8"}, {"seed": 2**64}):
        with pytest.raises(ValueError):
            NRFF(**params).fit(X)


@pytest.mark.parametrize("n", [1, 17, 300, 4096])
def test_unit_scaling_sums_squares_in_the_specified_order(n):
    # The bytes of existing float32 specs fix the order: 16 float64 lane sums over the row in
    # order (each square and each sum rounded), the lanes added 0..15, then the remainder.
    # The float64 sum is compared bit for bit (at n = 4096 numpy's pairwise np.sum differs from it).
    from numba import njit

    from dask_kernels.maps.nrff import _lane_squares, _scale_to_unit

    row = (np.random.default_rng(n).standard_normal(n) * 1e3).astype(np.float32)
    n16 = n - n % 16
    acc = np.zeros(16)
    for j0 in range(0, n16, 16):
        acc = acc + row[j0 : j0 + 16].astype(np.float64) ** 2
    lanes = 0.0
    for m in range(16):
        lanes += acc[m]
    assert njit(lambda r, m: _lane_squares(r, m))(row, n16) == lanes
    total = lanes
    for v in row[n16:].astype(np.float64):
        total += v * v
    expect = row * np.float32(1.0 / np.sqrt(total))
    got = row.copy()
    _scale_to_unit(got)
    np.testing.assert_array_equal(got.view(np.int32), expect.view(np.int32))
