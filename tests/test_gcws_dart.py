"""GCWS(sampler="dart"): DartMinHash samples collide with probability GMM (exactly), codes are
invariant to blocks, input format and process, and the spec records the sampler."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from test_gcws import K_THEORY, PAIRS, _binomial_bound

from dask_kernels import GCWS, from_spec, gmm_kernel


def _dart(**kw):
    return GCWS(sampler="dart", **kw)


@pytest.mark.parametrize("name", list(PAIRS))
def test_collision_rate_equals_gmm(name):
    x, y = PAIRS[name]
    X = np.vstack([x, y])
    g = gmm_kernel(X)[0, 1]
    gcws = _dart(n_components=K_THEORY, seed=5).fit(X)
    s, dart = gcws.sample(X)
    same = (dart[0] == dart[1]) & (s[0] == s[1])
    np.testing.assert_array_equal(same, dart[0] == dart[1])  # a dart belongs to one element
    assert abs(same.mean() - g) < _binomial_bound(g, K_THEORY), (name, g, same.mean())


@pytest.mark.parametrize("bits", [1, 2, 4])
def test_b_bit_codes_collide_with_the_exact_probability(bits):
    # different darts have independent code bits: P[codes equal] = GMM + (1 - GMM) / 2**b
    x, y = PAIRS["negative entries"]
    X = np.vstack([x, y])
    g = gmm_kernel(X)[0, 1]
    gcws = _dart(n_components=K_THEORY, bits=bits, seed=9).fit(X)
    codes = gcws.transform(X)
    _, dart = gcws.sample(X)
    np.testing.assert_array_equal(codes, dart & (2**bits - 1))
    expected = g + (1 - g) / 2**bits
    assert abs(np.mean(codes[0] == codes[1]) - expected) < _binomial_bound(expected, K_THEORY)


def test_collision_rate_at_dimension_2_to_the_31():
    x, y = PAIRS["sparse"]
    cols = np.nonzero((x != 0) | (y != 0))[0]
    offset = 2**31 - 5000
    X = sp.csr_matrix(np.vstack([x[cols], y[cols]]))
    X = sp.csr_matrix((X.data, X.indices.astype(np.int64) + offset, X.indptr), shape=(2, 2**31))
    g = gmm_kernel(np.vstack([x, y]))[0, 1]
    gcws = _dart(n_components=K_THEORY, seed=6).fit(X)
    s, dart = gcws.sample(X)
    assert s.max() >= 2 * offset and s.max() < 2**32
    rate = np.mean(dart[0] == dart[1])
    assert abs(rate - g) < _binomial_bound(g, K_THEORY)
    # the same rows at the low indices give other darts (the element is part of the hash) but
    # the same collision law
    low = _dart(n_components=K_THEORY, seed=6).fit(np.vstack([x, y])).sample(np.vstack([x, y]))[1]
    assert np.mean(low[0] == dart[0]) < 0.01
    assert abs(np.mean(low[0] == low[1]) - g) < _binomial_bound(g, K_THEORY)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(37, 50)) * 10.0 ** rng.uniform(-3, 3, size=(37, 1))
    X[rng.uniform(size=X.shape) < 0.6] = 0.0
    X[5] = 0.0  # an all-zero row
    return X


def test_codes_do_not_depend_on_blocks_format_or_dtype(data):
    gcws = _dart(n_components=64, seed=1).fit(data)
    full = gcws.transform(data)
    pieces = np.vstack([gcws.transform(data[a:b]) for a, b in [(0, 1), (1, 9), (9, 30), (30, 37)]])
    np.testing.assert_array_equal(full, pieces)
    np.testing.assert_array_equal(full[::-1], gcws.transform(data[::-1]))
    np.testing.assert_array_equal(full, gcws.transform(sp.csr_matrix(data)))
    np.testing.assert_array_equal(full, gcws.transform(sp.csc_matrix(data)))
    as32 = data.astype(np.float32)
    np.testing.assert_array_equal(gcws.transform(as32), gcws.transform(as32.astype(np.float64)))
    s1, d1 = gcws.sample(data)
    s2, d2 = gcws.sample(sp.csr_matrix(data))
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(d1, d2)


def test_center_dense_and_sparse_agree(data):
    mu = np.linspace(-1, 1, data.shape[1])
    a = _dart(n_components=32, seed=3, center=mu).fit(data).transform(data)
    b = _dart(n_components=32, seed=3).fit(data - mu).transform(data - mu)
    c = _dart(n_components=32, seed=3, center=mu).fit(data).transform(sp.csr_matrix(data))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_codes_in_another_process(data, tmp_path):
    np.save(tmp_path / "X.npy", data)
    code = textwrap.dedent(
        f"""
        import numpy as np
        from dask_kernels import GCWS
        X = np.load({str(tmp_path / 'X.npy')!r})
        codes = GCWS(n_components=64, seed=1, sampler="dart").fit(X).transform(X[10:20])
        np.save({str(tmp_path / 'codes.npy')!r}, codes)
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    expected = _dart(n_components=64, seed=1).fit(data).transform(data[10:20])
    np.testing.assert_array_equal(np.load(tmp_path / "codes.npy"), expected)


def test_all_zero_row_and_negative_half(data):
    gcws = _dart(n_components=16, bits=8, seed=0).fit(data)
    s, dart = gcws.sample(data[5:6])
    assert np.all(s == -1) and np.all(dart == -1)
    assert np.all(gcws.transform(data[5:6]) == 255)
    s, _ = _dart(n_components=8).fit(np.array([[-3.0, 0.0]])).sample(np.array([[-3.0, 0.0]]))
    assert np.all(s == 1)


def test_spec_records_the_sampler_and_icws_specs_are_unchanged(data):
    dart = _dart(n_components=32, bits=6, seed=12, center="mean").fit(data)
    spec = json.loads(dart.spec_json())
    assert spec["params"]["sampler"] == "dart"
    np.testing.assert_array_equal(from_spec(spec).transform(data), dart.transform(data))
    icws = GCWS(n_components=32, bits=6, seed=12, center="mean").fit(data)
    assert "sampler" not in icws.spec()["params"]  # the same spec as before samplers existed
    assert from_spec(icws.spec()).sampler == "icws"
    assert np.mean(icws.transform(data) == dart.transform(data)) < 0.2  # different samples


def test_out_of_range_norm_names_the_row():
    X = np.ones((4, 3))
    X[2] = [1e-300, 0.0, 0.0]  # l1 below 2**-800 (grid units): the rank window would overflow
    gcws = _dart(n_components=8).fit(X)
    with pytest.raises(ValueError, match="row 2"):
        gcws.transform(X)
    with pytest.raises(ValueError, match="row 2"):
        gcws.transform(sp.csr_matrix(X))


@pytest.mark.parametrize("e", [-30, 0, 30])
def test_grid_scale_changes_cost_not_the_collision_law(e):
    # the fitted grid scale 2**e is a change of units of the dart process: any e gives GMM
    x, y = PAIRS["different scales"]
    X = np.vstack([x, y])
    g = gmm_kernel(X)[0, 1]
    gcws = _dart(n_components=K_THEORY, seed=7).fit(X)
    gcws.rank_scale_log2_ = e
    _, dart = gcws.sample(X)
    assert abs(np.mean(dart[0] == dart[1]) - g) < _binomial_bound(g, K_THEORY)


def test_grid_scale_is_fitted_kept_in_the_spec_and_checked(data):
    gcws = _dart(n_components=16).fit(data * 2.0**20)
    spec = gcws.spec()
    l1 = np.abs(data * 2.0**20).sum(axis=1)
    assert spec["state"]["rank_scale_log2"] == round(np.log2(np.median(l1[l1 > 0])))
    assert "rank_scale_log2" not in GCWS(n_components=16).fit(data).spec()["state"]
    for bad in (1.5, "3", 10**6, True):
        with pytest.raises(ValueError, match=r"spec\['state'\]\['rank_scale_log2'\]"):
            from_spec(dict(spec, state=dict(spec["state"], rank_scale_log2=bad)))
