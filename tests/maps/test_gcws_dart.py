"""GCWS(sampler="dart"): DartMinHash samples collide with probability GMM (exactly), codes are
invariant to blocks, input format and process, and the spec records the sampler."""

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from _gcws_pairs import K_THEORY, PAIRS, assert_rate_is, pair, pair_near_2_to_the_31, rows_with_zeros
from dask_kernels import GCWS, from_spec
from dask_kernels.maps._dart import DART_SCHEME, FIT_NORM, LAM_MAX, STREAM_DART, _tabled_hits, dart_dense
from dask_kernels.maps._dart import dart_table, layer_rates, no_table
from dask_kernels.rng import stream_key


#: transform of ``rows_with_zeros(scaled=True)[:2]``, k = 8, seed 3, scheme 2.
PINNED = [[175, 30, 153, 196, 145, 35, 219, 197], [47, 17, 104, 218, 27, 160, 119, 206]]


def _dart(**kw):
    return GCWS(scale=None, sampler="dart", **kw)


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
        codes = GCWS(scale=None, n_components=64, seed=1, sampler="dart").fit(X).transform(X[10:20])
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
    assert "dart_scale" not in GCWS(scale=None, n_components=16).fit(data).spec()["state"]
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


@pytest.mark.parametrize("table", ["auto", True, False])
def test_codes_are_pinned(data, table):
    # known answer for scheme 2: a change here changes every dart store
    gcws = _dart(n_components=8, seed=3, table=table).fit(data)
    assert gcws._uses_table() == (table is not False)
    assert gcws.transform(data[:2]).tolist() == PINNED


def _table_rows():
    """Rows that take every route through the dart table: MNIST-like (each element's darts
    inside the table), a single element (all its darts hit: the walk hashes on past the table
    and renormalizes U), a few large elements among small ones, negative entries, a row far
    below the fit's norm (many layers past the table's two)."""
    rng = np.random.default_rng(11)
    X = rng.uniform(0, 1, size=(12, 300))
    X[X < 0.8] = 0.0
    X[1] = 0.0
    X[1, 17] = 2.0
    X[2, :5] *= 40.0
    X[3] = rng.normal(size=300)
    X[4] *= 1e-6
    return X


@pytest.mark.parametrize("k", [7, 256])
def test_table_gives_the_walks_samples(k):
    # the table is a cache of the walk: the same darts, so the same samples, for dense and CSR
    X = _table_rows()
    tab = _dart(n_components=k, seed=4, table=True).fit(X)
    walk = _dart(n_components=k, seed=4, table=False).fit(X)
    assert tab._uses_table() and not walk._uses_table()
    for a, b in zip(tab.sample(X), walk.sample(X)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(tab.transform(sp.csr_matrix(X)), walk.transform(X))
    assert _dart(n_components=k).fit(X)._uses_table()  # "auto": a small table
    assert not _dart(n_components=k).fit(sp.csr_matrix((1, 2**30)))._uses_table()


def test_layer_1_through_the_bucket_index_gives_the_walks_samples():
    # MNIST-like rows around the fit's norm: some leave a few buckets empty after layer 0, and
    # layer 1 then reads only those buckets' darts from the table's bucket index
    k = 256
    X = np.random.default_rng(5).uniform(0, 1, size=(60, 784))
    X[X < 0.81] = 0.0
    tab = _dart(n_components=k, seed=8, table=True).fit(X)
    walk = _dart(n_components=k, seed=8, table=False).fit(X)
    for a, b in zip(tab.sample(X), walk.sample(X)):
        np.testing.assert_array_equal(a, b)
    # the route was taken: rows with 1 to 8 empty buckets after layer 0 (from the table)
    nlu, keys = tab.kernel_plan().parameter_table()[:2]
    rate = layer_rates(k)[0]
    empties = []
    for x in X:
        s = 2 * np.nonzero(x)[0]
        hit = nlu[0, s] < (x[s // 2] * tab.dart_scale_ * rate)[:, None]
        buckets = ((keys[0, s][hit] & np.uint64(2**41 - 1)) * np.uint64(k)) >> np.uint64(41)
        empties.append(k - np.unique(buckets).size)
    assert sum(1 <= e <= 8 for e in empties) >= 3, empties


def test_a_table_deeper_than_u_stays_normal_stops_where_the_walk_renormalizes():
    # depth 512: a single element's U falls below 2**-256 within it; the table must stop at that
    # chunk's end and the walk go on renormalized, as without a table
    k, skey = 64, np.uint64(stream_key(np.uint64(2), STREAM_DART))
    deep = dart_table(skey, 8, k, depth=512)
    u, count = deep[2], deep[3]
    for layer in range(2):
        for s in range(8):
            ends = u[layer, s, 7:count[layer, s]:8]  # U at each chunk's end, up to the table's
            assert ends[-1] < 2.0**-256 and np.all(ends[:-1] >= 2.0**-256), (layer, s)
    X = np.zeros((3, 4))
    X[0, 1], X[1, 2], X[2] = 3.0, -1.0, [1.0, 2.0, 0.0, 5.0]
    out = []
    for table in (deep, no_table()):
        codes = np.empty((3, k), np.uint16)
        none = np.empty((0, k), np.int64)
        bad = dart_dense(X, np.zeros(4), skey, 1.0, k, layer_rates(k), table, np.uint64(2**16 - 1), True, codes, none,
                         none)
        assert bad == -1
        out.append(codes)
    np.testing.assert_array_equal(out[0], out[1])


def test_tabled_hits_are_the_walks_exactly_at_near_ties():
    # -ln U in float32 decides unless a dart is within the margin: then U > exp(-a) in float64,
    # the walk's own test; thresholds exactly at, and one ulp around, every tabled dart
    nlu, _, u, count = dart_table(np.uint64(stream_key(np.uint64(9), STREAM_DART)), 6, 256)[:4]
    for layer in range(2):
        for s in range(6):
            n = count[layer, s]
            for a0 in [0.0, 1e-300, 0.3, 1e6, 1e300] + list(-np.log(u[layer, s, :n])):
                for a in (np.nextafter(a0, -1.0), a0, np.nextafter(a0, np.inf)):
                    a = max(float(a), 0.0)
                    expected = int(np.sum(u[layer, s, :n] > math.exp(-a)))
                    assert _tabled_hits(a, nlu[layer, s], u[layer, s]) == expected, (layer, s, a)
