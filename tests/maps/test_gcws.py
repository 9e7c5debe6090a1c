"""GCWS: collision theory (002, Theorem 1), invariances, edge cases, scikit-learn conformance."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from _gcws_pairs import K_THEORY, PAIRS, assert_rate_is, binomial_bound, pair, pair_near_2_to_the_31, rows_with_zeros
from dask_kernels import GCWS, expand_codes, from_spec, gmm_kernel

@pytest.mark.parametrize("name", list(PAIRS))
def test_collision_rate_equals_gmm(name):
    X, g = pair(name)
    i_star, t_star = GCWS(scale=None, n_components=K_THEORY, seed=5).fit(X).sample(X)
    assert_rate_is(np.mean((i_star[0] == i_star[1]) & (t_star[0] == t_star[1])), g, name)
    if name == "GMM near 0":
        assert g < 0.05
    if name == "GMM near 1":
        assert g > 0.98


def test_collision_rate_sparse_input_high_dimension():
    # the same pair placed at indices near 2**31 through CSR: hash path, no per-dimension table
    X, g = pair_near_2_to_the_31()
    gcws = GCWS(scale=None, n_components=K_THEORY, seed=6).fit(X)
    assert not gcws._uses_table()
    i_star, t_star = gcws.sample(X)
    assert i_star.max() >= 2 * (2**31 - 5000)
    assert_rate_is(np.mean((i_star[0] == i_star[1]) & (t_star[0] == t_star[1])), g)


def test_zero_bit_collision_close_to_gmm_in_high_dimension():
    # 0-bit GCWS (i* only) is an approximation: exact up to the chance that i* agrees while t*
    # differs, which vanishes as the dimension grows (002, section 4). On D = 1000 dense data
    # the gap must be within the binomial bound plus 0.01.
    rng = np.random.default_rng(3)
    x = rng.exponential(size=1000)
    y = x * rng.uniform(0.3, 1.7, size=1000)
    X = np.vstack([x, y])
    g = gmm_kernel(X)[0, 1]
    i_star, _ = GCWS(scale=None, n_components=K_THEORY, seed=8).fit(X).sample(X)
    rate = np.mean(i_star[0] == i_star[1])
    assert abs(rate - g) < binomial_bound(g) + 0.01


def test_b_bit_code_collisions():
    # b-bit codes of i* collide when i* does, or by chance otherwise: P ~= P0 + (1 - P0) / 2**b
    X, _ = pair("negative entries")
    for bits in (1, 2, 4):
        gcws = GCWS(scale=None, n_components=K_THEORY, bits=bits, seed=9).fit(X)
        i_star, _ = gcws.sample(X)
        codes = gcws.transform(X)
        np.testing.assert_array_equal(codes, i_star & (2**bits - 1))
        p0 = np.mean(i_star[0] == i_star[1])
        expected = p0 + (1 - p0) / 2**bits
        rate = np.mean(codes[0] == codes[1])
        # loose on purpose: distinct i* values are not uniformly spread over codes in D = 30
        assert abs(rate - expected) < binomial_bound(expected) + 0.02


@pytest.fixture(scope="module")
def data():
    return rows_with_zeros()


def test_codes_do_not_depend_on_the_block(data):
    gcws = GCWS(scale=None, n_components=64, seed=1).fit(data)
    full = gcws.transform(data)
    pieces = np.vstack([gcws.transform(data[a:b]) for a, b in [(0, 1), (1, 9), (9, 30), (30, 37)]])
    np.testing.assert_array_equal(full, pieces)
    np.testing.assert_array_equal(full[::-1], gcws.transform(data[::-1]))


def test_dense_csr_table_hash_agree(data):
    table = GCWS(scale=None, n_components=64, seed=1, table=True).fit(data)
    hashed = GCWS(scale=None, n_components=64, seed=1, table=False).fit(data)
    i1, t1 = table.sample(data)
    for fmap, X in [(table, sp.csr_matrix(data)), (hashed, data), (hashed, sp.csr_matrix(data)), (table, sp.csc_matrix(data))]:
        i2, t2 = fmap.sample(X)
        np.testing.assert_array_equal(i1, i2)
        np.testing.assert_array_equal(t1, t2)


@pytest.mark.parametrize("bits", [1, 8, 12])
@pytest.mark.parametrize("table", [True, False])
def test_codes_are_the_low_bits_of_i_star(data, bits, table):
    # transform writes codes straight from the kernel; they must equal i* & (2**b - 1) of
    # sample(), with an all-zero row's i* = -1 giving the reserved code 2**b - 1.
    X = data.copy()
    X[3] = 0.0
    gcws = GCWS(scale=None, n_components=64, bits=bits, seed=4, table=table).fit(X)
    i_star, _ = gcws.sample(X)
    assert np.all(i_star[3] == -1)
    for rows in (X, sp.csr_matrix(X)):
        codes = gcws.transform(rows)
        assert codes.dtype == (np.uint8 if bits <= 8 else np.uint16)
        np.testing.assert_array_equal(codes, i_star & (2**bits - 1))


def test_unsorted_duplicate_csr_equals_dense():
    dense = np.array([[0.0, 2.0, 0.0, -1.5], [1.0, 0.0, 0.0, 0.0]])
    # row 0 written with unsorted and duplicate column indices that sum to the dense values
    X = sp.csr_matrix((np.array([-1.5, 1.0, 1.0, 1.0]), np.array([3, 1, 1, 0]), np.array([0, 3, 4])), shape=(2, 4))
    gcws = GCWS(scale=None, n_components=32, seed=3).fit(dense)
    np.testing.assert_array_equal(gcws.transform(X), gcws.transform(dense))


def test_codes_in_another_process(data, tmp_path):
    np.save(tmp_path / "X.npy", data)
    code = textwrap.dedent(
        f"""
        import numpy as np
        from dask_kernels import GCWS
        X = np.load({str(tmp_path / 'X.npy')!r})
        np.save({str(tmp_path / 'codes.npy')!r}, GCWS(scale=None, n_components=64, seed=1).fit(X).transform(X[10:20]))
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "codes.npy"), GCWS(scale=None, n_components=64, seed=1).fit(data).transform(data[10:20]))


def test_fewer_hashes_are_a_prefix(data):
    a = GCWS(scale=None, n_components=16, seed=4).fit(data).transform(data)
    b = GCWS(scale=None, n_components=64, seed=4).fit(data).transform(data)
    np.testing.assert_array_equal(a, b[:, :16])


def test_all_zero_row(data):
    gcws = GCWS(scale=None, n_components=16, bits=8, seed=0).fit(data)
    i_star, t_star = gcws.sample(data[5:6])
    assert np.all(i_star == -1) and np.all(t_star == 0)
    assert np.all(gcws.transform(data[5:6]) == 255)


def test_negative_values_use_the_negative_half():
    X = np.array([[-3.0, 0.0]])
    i_star, _ = GCWS(scale=None, n_components=8).fit(X).sample(X)
    assert np.all(i_star == 1)  # 2 * 0 + 1: the negative part of feature 0
    X = np.array([[0.0, 3.0]])
    i_star, _ = GCWS(scale=None, n_components=8).fit(X).sample(X)
    assert np.all(i_star == 2)


def test_nan_and_inf_name_the_row(data):
    gcws = GCWS(scale=None, n_components=8).fit(data)
    bad = data.copy()
    bad[17, 3] = np.inf
    with pytest.raises(ValueError, match="row 17"):
        gcws.transform(bad)
    with pytest.raises(ValueError, match="row 17"):
        gcws.transform(sp.csr_matrix(bad))


def test_one_hot_output(data):
    gcws = GCWS(scale=None, n_components=10, bits=3, seed=2, output="onehot").fit(data)
    Z = gcws.transform(data)
    assert sp.issparse(Z) and Z.shape == (len(data), 10 * 8)
    np.testing.assert_array_equal(np.asarray(Z.sum(axis=1)).ravel(), 10)
    codes = GCWS(scale=None, n_components=10, bits=3, seed=2).fit(data).transform(data)
    np.testing.assert_array_equal((Z @ Z.T).toarray(), (codes[:, None, :] == codes[None, :, :]).sum(-1))
    np.testing.assert_array_equal(expand_codes(codes, 3).toarray(), Z.toarray())
    assert len(gcws.get_feature_names_out()) == 80


def test_code_dtypes_and_bad_parameters(data):
    assert GCWS(scale=None, n_components=4, bits=8).fit(data).transform(data).dtype == np.uint8
    codes = GCWS(scale=None, n_components=4, bits=16).fit(data).transform(data)
    assert codes.dtype == np.uint16 and codes.max() < 2**16
    for bad in [dict(bits=0), dict(bits=17), dict(n_components=0), dict(seed=-1), dict(output="dense")]:
        with pytest.raises(ValueError):
            GCWS(**bad).fit(data)
    with pytest.raises(ValueError, match="bits=2"):
        expand_codes(np.array([[7]]), bits=2)


def test_center(data):
    mu = np.linspace(-1, 1, data.shape[1])
    a = GCWS(n_components=32, seed=3, center=mu).fit(data).transform(data)
    b = GCWS(scale=None, n_components=32, seed=3).fit(data - mu).transform(data - mu)
    np.testing.assert_array_equal(a, b)
    c = GCWS(n_components=32, seed=3, center=mu).fit(data).transform(sp.csr_matrix(data))
    np.testing.assert_array_equal(a, c)
    m = GCWS(n_components=32, center="mean").fit(data)
    np.testing.assert_allclose(m.center_, data.mean(axis=0))


def test_spec_round_trip(data):
    gcws = GCWS(n_components=32, bits=6, seed=12, center="mean").fit(data)
    spec = json.loads(json.dumps(gcws.spec()))
    rebuilt = from_spec(spec)
    np.testing.assert_array_equal(rebuilt.transform(data), gcws.transform(data))
    assert spec["rng_scheme"] == "dk-rng-1" and spec["method"] == "gcws"
    bad = dict(spec, rng_scheme="dk-rng-0")
    with pytest.raises(ValueError, match="random-number scheme"):
        from_spec(bad)


def test_wide_sparse_input_needs_no_table():
    X = sp.csr_matrix((np.array([1.0, 2.0]), np.array([0, 2**31 - 1], dtype=np.int64), np.array([0, 1, 2])), shape=(2, 2**31))
    gcws = GCWS(scale=None, n_components=16).fit(X)
    i_star, _ = gcws.sample(X)
    assert np.all(i_star[1] == 2 * (2**31 - 1))
    assert not gcws._uses_table()
