"""CoRE: the exact kernels against a direct formula, the hashed estimators against their theory
(Li, "CoRE kernels", 2014), reproducibility, scikit-learn conformance and the pipeline."""

import hashlib
import subprocess
import sys
import textwrap

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier

import dask_kernels
from dask_kernels import CoRE, core_kernel, fit_incremental, from_spec
from dask_kernels.maps.core import STREAM_PROJ, STREAM_RANK
from dask_kernels.rng import normal_array, rank_array

K_THEORY = 20_000  # hashes per pair in the statistical tests
Z = 4.5  # two-sided z bound: a false alarm about once in 150,000 runs per assertion


# -- exact kernels --------------------------------------------------------------------------------
def _direct(x, y, kind):
    """CoRE kernel of one pair, straight from the definition (ALGORITHMS 6 / paper eq. 1-2)."""
    if not x.any() or not y.any():
        return 0.0
    x, y = x / np.abs(x).max(), y / np.abs(y).max()  # the cosine is scale-free; avoids overflow
    rho = float(x @ y) / (np.linalg.norm(x) * np.linalg.norm(y))
    f1, f2 = np.count_nonzero(x), np.count_nonzero(y)
    a = np.count_nonzero((x != 0) & (y != 0))
    return rho * a / (f1 + f2 - a) if kind == 1 else rho * np.sqrt(f1 * f2) / (f1 + f2 - a)


def _sparse_rows(n, d, density, seed):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed, data_rvs=lambda m: rng.normal(size=m)).toarray()
    X[1] = 0.0  # an all-zero row
    X[2] = X[3] * 1e200  # scale must not matter, nor overflow ||x||^2
    return X


@pytest.mark.parametrize("kind", [1, 2])
def test_core_kernel_matches_direct_formula(kind):
    X = _sparse_rows(12, 40, 0.2, 0)
    Y = _sparse_rows(7, 40, 0.3, 1)
    want = np.array([[_direct(x, y, kind) for y in Y] for x in X])
    for A, B in ((X, Y), (sp.csr_matrix(X), sp.csr_matrix(Y)), (sp.csr_matrix(X), Y)):
        np.testing.assert_allclose(core_kernel(A, B, type=kind), want, rtol=1e-12, atol=1e-15)
    K = core_kernel(X, type=kind)
    np.testing.assert_allclose(K, [[_direct(x, y, kind) for y in X] for x in X], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.diag(K)[[0, 2, 3]], 1.0)
    assert K[1].max() == 0.0 and K[2, 3] == pytest.approx(1.0)


def test_core_kernel_type2_is_zero_on_disjoint_patterns_and_checks_input():
    X = np.array([[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 3.0, -1.0]])
    assert core_kernel(X, type=2)[0, 1] == 0.0
    with pytest.raises(ValueError, match="type must be 1 or 2"):
        core_kernel(X, type=3)
    with pytest.raises(ValueError, match="row 1"):
        core_kernel(np.array([[1.0, 0.0], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="features"):
        core_kernel(X, np.ones((1, 3)))


# -- hashed estimators ----------------------------------------------------------------------------
def _pairs():
    rng = np.random.default_rng(7)
    d = 3000
    out = {}
    a = np.zeros(d)
    b = np.zeros(d)
    a[:40] = rng.uniform(0.5, 2.0, 40)
    b[40:90] = rng.uniform(0.5, 2.0, 50)
    out["disjoint"] = (a, b)
    c = np.zeros(d)
    c[rng.choice(d, 60, replace=False)] = rng.normal(size=60)
    out["identical"] = (c, 3.0 * c)
    p = np.zeros(d)
    q = np.zeros(d)
    p[100:180] = rng.uniform(0.1, 1.0, 80)
    q[140:200] = rng.uniform(0.1, 1.0, 60)
    q[140:180] = p[140:180] * rng.uniform(0.8, 1.2, 40)  # overlap of 40: R = 40 / 100
    out["partial overlap"] = (p, q)
    s = np.zeros(d)
    t = np.zeros(d)
    idx = rng.choice(d, 120, replace=False)
    s[idx[:80]] = rng.normal(size=80)
    t[idx[40:]] = -s[idx[40:]] + rng.normal(scale=0.3, size=80)  # negative cosine
    out["negative values"] = (s, t)
    return out


PAIRS = _pairs()


def _resemblance(x, y):
    a = np.count_nonzero((x != 0) & (y != 0))
    return a / (np.count_nonzero(x) + np.count_nonzero(y) - a)


@pytest.mark.parametrize("name", list(PAIRS))
def test_type1_estimate_unbiased_with_the_papers_variance(name):
    # Full locations L_j (sample()): the paper's variance assumes no b-bit collisions.
    x, y = PAIRS[name]
    X = sp.csr_matrix(np.vstack([x, y]))
    L, V, P, f = CoRE(n_components=K_THEORY, type=1, seed=3, scale=None).fit(X).sample(X)
    rho = float(x @ y) / (np.linalg.norm(x) * np.linalg.norm(y))
    R = _resemblance(x, y)
    terms = P[0] * P[1] * (L[0] == L[1])
    var = (1 + 2 * rho**2) * R - rho**2 * R**2
    assert abs(terms.mean() - rho * R) <= Z * np.sqrt(var / K_THEORY) + 1e-15, (name, terms.mean(), rho * R)
    if R == 0:
        assert not terms.any()
        return
    # the sample variance against the theory, with its own standard error (4th central moment)
    c = terms - terms.mean()
    s2 = np.mean(c**2)
    se = np.sqrt((np.mean(c**4) - s2**2) / K_THEORY)
    assert abs(s2 - var) <= Z * se, (name, s2, var, se)
    if name == "identical":
        assert R == 1 and rho == pytest.approx(1.0)
    if name == "negative values":
        assert rho < -0.5


@pytest.mark.parametrize("name", list(PAIRS))
def test_type2_estimate_unbiased(name):
    x, y = PAIRS[name]
    X = np.vstack([x, y])
    L, V, P, f = CoRE(n_components=K_THEORY, type=2, seed=4, scale=None).fit(X).sample(X)
    terms = np.sqrt(f[0] * f[1]) * V[0] * V[1] * (L[0] == L[1])
    want = core_kernel(X, type=2)[0, 1]
    assert abs(terms.mean() - want) <= Z * terms.std() / np.sqrt(K_THEORY) + 1e-15, (name, terms.mean(), want)


def test_locations_projections_follow_the_counter_rng():
    # the direct formula: L_j = argmin over nonzeros of rank(seed, STREAM_RANK, i, j),
    # P_j = sum_i u_i normal(seed, STREAM_PROJ, i, j)
    x = np.zeros(500)
    cols = np.array([3, 77, 78, 301, 499])
    x[cols] = [1.0, -2.0, 0.5, 3.0, -0.25]
    k, seed = 64, 11
    L, V, P, f = CoRE(n_components=k, seed=seed, scale=None).fit(x[None]).sample(x[None])
    ranks = rank_array(np.uint64(seed), np.uint64(STREAM_RANK), cols.astype(np.uint64), np.arange(k, dtype=np.uint64))
    np.testing.assert_array_equal(L[0], cols[np.argmin(ranks, axis=0)])
    u = x / np.linalg.norm(x)
    np.testing.assert_allclose(V[0], u[L[0]], rtol=1e-15)
    r = normal_array(np.uint64(seed), np.uint64(STREAM_PROJ), cols.astype(np.uint64), np.arange(k, dtype=np.uint64))
    np.testing.assert_allclose(P[0], u[cols] @ r, rtol=1e-12)
    assert f[0] == 5


@pytest.mark.parametrize("kind", [1, 2])
def test_expanded_features_give_the_estimate(kind):
    # with 2**bits >= d the codes are the full locations: <F(x), F(y)> is the estimator exactly
    X = _sparse_rows(6, 300, 0.1, 5)
    core = CoRE(n_components=512, type=kind, bits=16, seed=1, scale=None).fit(X)
    L, V, P, f = core.sample(X)
    F = core.expand(core.transform(X))
    assert F.shape == (6, 512 * 2**16) and F.dtype == np.float32
    vals = P if kind == 1 else V * np.sqrt(f)[:, None]
    want = np.einsum("aj,bj,abj->ab", vals, vals, L[:, None, :] == L[None, :, :]) / 512
    np.testing.assert_allclose((F @ F.T).toarray(), want, rtol=1e-5, atol=1e-6)
    onehot = CoRE(n_components=512, type=kind, bits=16, seed=1, output="onehot", scale=None).fit(X).transform(X)
    assert (onehot != F).nnz == 0
    # and it approximates the exact kernel (sd of one entry <= sqrt(3/512) ~ 0.077 for type 1)
    K = core_kernel(X, type=kind)
    assert np.abs((F @ F.T).toarray() - K).max() < 0.5


def test_zero_row_has_zero_features():
    X = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 2.0]])
    core = CoRE(n_components=8, type=2, scale=None).fit(X)
    out = core.transform(X)
    assert not out[0].any()
    assert core.sample(X)[0][0].min() == -1


# -- reproducibility ------------------------------------------------------------------------------
def _text_like(n=300, d=5000, seed=2):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.004, random_state=seed, data_rvs=lambda m: rng.poisson(2, m) + 1.0).tocsr()
    X.data[::7] *= -1
    return X


@pytest.mark.parametrize("kind", [1, 2])
def test_dense_csr_blocks_and_dtypes_agree_bitwise(kind):
    X = _text_like()
    core = CoRE(n_components=96, type=kind, bits=8, seed=9, scale=None).fit(X)
    ref = core.transform(X)
    np.testing.assert_array_equal(core.transform(X.toarray()).view(np.uint32), ref.view(np.uint32))
    parts = [core.transform(X[a : a + 37]) for a in range(0, X.shape[0], 37)]
    np.testing.assert_array_equal(np.vstack(parts).view(np.uint32), ref.view(np.uint32))
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(core.transform(X32).view(np.uint32), core.transform(X32.toarray()).view(np.uint32))
    np.testing.assert_array_equal(core.transform(X32).view(np.uint32), ref.view(np.uint32))  # values exact in f32


def test_same_bytes_in_a_fresh_process_and_from_spec():
    X = _text_like(n=50)
    core = CoRE(n_components=64, type=1, bits=12, seed=123, scale=None).fit(X)
    ref = core.transform(X)
    np.testing.assert_array_equal(from_spec(core.spec_json()).transform(X).view(np.uint32), ref.view(np.uint32))
    code = textwrap.dedent(f"""
        import hashlib, json, sys
        import numpy as np, scipy.sparse as sp
        from dask_kernels import from_spec
        m = json.loads(sys.stdin.read())
        X = sp.csr_matrix((np.array(m["data"]), np.array(m["indices"]), np.array(m["indptr"])), shape={X.shape})
        print(hashlib.sha256(from_spec(m["spec"]).transform(X).tobytes()).hexdigest())
    """)
    import json

    payload = json.dumps({"spec": core.spec(), "data": X.data.tolist(), "indices": X.indices.tolist(),
                          "indptr": X.indptr.tolist()})
    out = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == hashlib.sha256(ref.tobytes()).hexdigest()


def test_dimension_up_to_2_31_without_per_dimension_memory():
    x, y = PAIRS["partial overlap"]
    cols = np.nonzero((x != 0) | (y != 0))[0]
    small = sp.csr_matrix(np.vstack([x[cols], y[cols]]))
    offset = 2**31 - 1000
    X = sp.csr_matrix((small.data, small.indices.astype(np.int64) + offset, small.indptr), shape=(2, 2**31))
    L, V, P, f = CoRE(n_components=4000, seed=2, scale=None).fit(X).sample(X)
    assert L.min() >= offset
    rate = np.mean(L[0] == L[1])
    R = _resemblance(x, y)
    assert abs(rate - R) <= Z * np.sqrt(R * (1 - R) / 4000)


def test_spec_rejects_bad_parameters():
    spec = CoRE(n_components=4).fit(np.ones((1, 3))).spec()
    assert spec["params"]["type"] == 1 and spec["n_output_features"] == 8 and spec["output_dtype"] == "<f4"
    for key, bad in (("type", 3), ("bits", 17), ("n_components", 0)):
        with pytest.raises(ValueError, match=f"\\['params'\\]\\['{key}'\\]"):
            from_spec({**spec, "params": {**spec["params"], key: bad}})
    with pytest.raises(ValueError, match="type must be 1 or 2"):
        CoRE(type=True).fit(np.ones((1, 3)))
    core = from_spec(spec)
    with pytest.raises(ValueError, match="row 0, hash 1"):
        core.expand(np.array([[0, 300.5, 0, 0, 1, 1, 1, 1]], np.float32))


# -- pipeline -------------------------------------------------------------------------------------
def _topics(n=2000, d=400, seed=0):
    """Two classes of 'documents' drawing words mostly from their own half of the vocabulary."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.zeros((n, d))
    for r in range(n):
        own = rng.integers(0, d // 2, 8) + y[r] * (d // 2)
        noise = rng.integers(0, d, 4)
        np.add.at(X[r], np.concatenate([own, noise]), 1.0)
    return X, y


def test_featurize_into_a_store_and_fit_incremental(tmp_path):
    X, y = _topics()
    core = CoRE(n_components=64, type=1, bits=8, seed=0, scale=None).fit(X)
    path = str(tmp_path / "c.zarr")
    store = dask_kernels.featurize(da.from_array(X, chunks=(500, -1)), core, labels=y, store=path, progress=False)
    np.testing.assert_array_equal(np.asarray(dask_kernels.open_store(path).features[:]), core.transform(X))
    sgd = SGDClassifier(loss="log_loss", alpha=1e-5, learning_rate="constant", eta0=1 / 8, random_state=0)
    model = fit_incremental(sgd, store, epochs=3, progress=False)
    # chance 0.5; the topics are separable by the minwise locations (sd 0.016 on ~200 rows)
    assert model.history[-1]["accuracy"] > 0.85
    np.testing.assert_array_equal(model.predict(dask_kernels.open_store(path)).compute(), model.predict(X))
