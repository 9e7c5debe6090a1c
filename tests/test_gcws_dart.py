"""GCWS(sampler="dart"): DartMinHash samples collide with probability GMM (exactly), codes are
invariant to blocks, input format and process, and the spec records the sampler."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from _gcws_pairs import K_THEORY, PAIRS, assert_rate_is, pair, pair_near_2_to_the_31, rows_with_zeros
from dask_kernels import GCWS, from_spec
from dask_kernels.maps._dart import DART_SCHEME, FIT_NORM, LAM_MAX


#: transform of ``rows_with_zeros(scaled=True)[:2]``, k = 8, seed 3, scheme 2.
PINNED = [[175, 30, 153, 196, 145, 35, 219, 197], [47, 17, 104, 218, 27, 160, 119, 206]]


def _dart(**kw):
    return GCWS(sampler="dart", **kw)


@pytest.mark.parametrize("name", list(PAIRS))
def test_collision_rate_equals_gmm(name):
    X, g = pair(name)
    gcws = _dart(n_components=K_THEORY, seed=5).fit(X)
    s, dart = gcws.sample(X)
    same = (dart[0] == dart[1]) & (s[0] == s[1])
    np.testing.assert_array_equal(same, dart[0] == dart[1])  # a dart belongs to one element
    assert_rate_is(same.mean(), g, name)


@pytest.mark.parametrize("bits", [1, 2, 4])
def test_b_bit_codes_collide_with_the_exact_probability(bits):
    # different darts have independent code bits: P[codes equal] = GMM + (1 - GMM) / 2**b
    X, g = pair("negative entries")
    gcws = _dart(n_components=K_THEORY, bits=bits, seed=9).fit(X)
    codes = gcws.transform(X)
    _, dart = gcws.sample(X)
    np.testing.assert_array_equal(codes, dart & (2**bits - 1))
    assert_rate_is(np.mean(codes[0] == codes[1]), g + (1 - g) / 2**bits)


def test_collision_rate_at_dimension_2_to_the_31():
    X, g = pair_near_2_to_the_31()
    gcws = _dart(n_components=K_THEORY, seed=6).fit(X)
    s, dart = gcws.sample(X)
    assert s.max() >= 2 * (2**31 - 5000) and s.max() < 2**32
    assert_rate_is(np.mean(dart[0] == dart[1]), g)
    # the same rows at the low indices give other darts (the element is part of the hash) but
    # the same collision law
    low_X, _ = pair("sparse")
    low = _dart(n_components=K_THEORY, seed=6).fit(low_X).sample(low_X)[1]
    assert np.mean(low[0] == dart[0]) < 0.01
    assert_rate_is(np.mean(low[0] == low[1]), g)


@pytest.fixture(scope="module")
def data():
    return rows_with_zeros(scaled=True)


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
    X[2] = [1e-300, 0.0, 0.0]  # norm below 2**-800 times the largest fit row's
    gcws = _dart(n_components=8).fit(X)
    with pytest.raises(ValueError, match="row 2"):
        gcws.transform(X)
    with pytest.raises(ValueError, match="row 2"):
        gcws.transform(sp.csr_matrix(X))
    big = np.ones((2, 3))
    big[1] *= 3 * LAM_MAX  # a row costs t * its norm: above LAM_MAX in fitted units, refused
    with pytest.raises(ValueError, match="row 1"):
        _dart(n_components=8).fit(np.ones((3, 3))).transform(big)
    ok = big.copy()
    ok[1] = LAM_MAX / 4  # norm 3 * LAM_MAX / 4 * FIT_NORM / 3 in fitted units: accepted
    assert _dart(n_components=8).fit(np.ones((3, 3))).transform(ok).shape == (2, 8)


@pytest.mark.parametrize("factor", [2.0**-30, 1 / 3, 1.0, 40.0])
def test_scale_changes_cost_not_the_collision_law(factor):
    # the fitted scale is a change of units of the dart process: any scale gives GMM
    X, g = pair("different scales")
    gcws = _dart(n_components=K_THEORY, seed=7).fit(X)
    gcws.dart_scale_ *= factor
    _, dart = gcws.sample(X)
    assert_rate_is(np.mean(dart[0] == dart[1]), g)


def test_scale_is_fitted_kept_in_the_spec_and_checked(data):
    gcws = _dart(n_components=16).fit(data * 2.0**20)
    spec = gcws.spec()
    l1 = np.abs(data * 2.0**20).sum(axis=1)
    assert spec["state"]["dart_scale"] == FIT_NORM / l1.max()
    assert spec["state"]["dart_scheme"] == DART_SCHEME == 2
    assert "dart_scale" not in GCWS(n_components=16).fit(data).spec()["state"]
    for bad in (0.0, -1.0, "3", float("inf"), True, None, 2.0**1001):
        with pytest.raises(ValueError, match=r"spec\['state'\]\['dart_scale'\]"):
            from_spec(dict(spec, state=dict(spec["state"], dart_scale=bad)))
    with pytest.raises(ValueError, match=r"\['dart_scheme'\]"):
        from_spec(dict(spec, state=dict(spec["state"], dart_scheme=3)))


def test_scheme_1_specs_are_refused_with_a_clear_message(data):
    # scheme 1 (a 2-D grid of cells; state key rank_scale_log2) made other codes: refuse, say why
    spec = _dart(n_components=16).fit(data).spec()
    state = {"center": None, "rank_scale_log2": 3}
    with pytest.raises(ValueError, match=r"DartMinHash scheme 1 .* refit GCWS\(sampler='dart'\)"):
        from_spec(dict(spec, state=state))


def test_codes_are_pinned(data):
    # known answer for scheme 2: a change here changes every dart store
    codes = _dart(n_components=8, seed=3).fit(data).transform(data[:2])
    assert codes.tolist() == PINNED
