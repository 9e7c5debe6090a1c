"""GCWS's ``scale``: per-feature scaling learned in fit, kept in the spec, the same for any chunking.

The statistics are column minima and maxima (exact), so a dask array in any chunking gives the
same spec bytes and the same codes; a spec without ``scale`` (written before it existed) gives
exactly the codes it gave then; sparse input is scaled without centering.
"""

import hashlib

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier

from _spec import tampered

from dask_kernels import GCWS, featurize, fit_incremental, from_spec, open_store
from dask_kernels.blocks import InputValueError
from dask_kernels.io import from_sparse
from dask_kernels.maps._scaling import apply_scale, shift_factor

RNG = np.random.default_rng(11)
#: columns in very different units and offsets, one constant
X = RNG.normal(size=(300, 6)) * [1.0, 40.0, 0.01, 3.0, 1.0, 500.0] + [0.0, 100.0, -5.0, 0.0, 7.0, 0.0]
X[:, 4] = 7.0

#: X of the golden test and the spec and code hash GCWS(n_components=16, seed=3).fit(X) gave
#: before ``scale`` existed (the spec has no "scale"): it must keep giving these bytes.
OLD_X = (np.arange(60, dtype=np.float64).reshape(12, 5) % 7 - 3) * np.array([1.0, -0.5, 30.0, 0.25, -2.0])
OLD_SPEC = ('{"method":"gcws","n_features_in":5,"n_output_features":16,"output_dtype":"|u1","params":{"bits":8,'
            '"center":null,"n_components":16,"output":"codes","seed":3,"table":"auto"},"rng_scheme":"dk-rng-1",'
            '"spec_version":1,"state":{"center":null}}')
OLD_SHA256 = "ac986eeeb3c7de48226e65c0065c1a9793594e1858734208e0a848fd460d56bc"


def test_old_spec_gives_its_old_bytes():
    fmap = from_spec(OLD_SPEC)
    assert fmap.scale is None
    assert hashlib.sha256(fmap.transform(OLD_X).tobytes()).hexdigest() == OLD_SHA256
    assert fmap.spec_json() == OLD_SPEC  # and writes the same spec back
    assert GCWS(n_components=16, seed=3, scale=None).fit(OLD_X).spec_json() == OLD_SPEC


def test_default_scales_dense_columns_onto_minus_one_one():
    gcws = GCWS(n_components=32, seed=2).fit(X)
    state = gcws.spec()["state"]["scale"]
    assert state["rule"] == "minmax"
    np.testing.assert_array_equal(state["min"], X.min(axis=0))
    np.testing.assert_array_equal(state["max"], X.max(axis=0))
    shift, factor = shift_factor("minmax", (X.min(axis=0), X.max(axis=0)))
    Z = apply_scale(X, shift, factor)
    live = [0, 1, 2, 3, 5]
    np.testing.assert_allclose(Z[:, live].min(axis=0), -1.0, rtol=1e-12)
    np.testing.assert_allclose(Z[:, live].max(axis=0), 1.0, rtol=1e-12)
    # the codes are those of the unscaled map on the scaled rows
    np.testing.assert_array_equal(gcws.transform(X), GCWS(n_components=32, seed=2, scale=None).fit(Z).transform(Z))
    # and differ from the unscaled map's: the scaling is applied
    assert not np.array_equal(gcws.transform(X), GCWS(n_components=32, seed=2, scale=None).fit(X).transform(X))


def test_zero_range_column_is_mapped_to_zero_not_refused():
    gcws = GCWS(n_components=16, seed=1).fit(X)
    shift, factor = gcws._shift_factor()
    assert factor[4] == 1.0 and shift[4] == 7.0
    Z = apply_scale(X, shift, factor)
    assert np.all(Z[:, 4] == 0.0)
    # a new row with another value there is shifted, finite, and changes the codes
    row = X[:1].copy()
    row[0, 4] = 9.0
    assert apply_scale(row, shift, factor)[0, 4] == 2.0
    assert not np.array_equal(gcws.transform(row), gcws.transform(X[:1]))
    # all columns constant: the identity (shift by the value)
    const = GCWS(n_components=4).fit(np.zeros((3, 2)))
    np.testing.assert_array_equal(const._shift_factor()[1], [1.0, 1.0])


@pytest.mark.parametrize("chunks", [1, 7, 64, 299])
def test_dask_fit_is_one_spec_for_any_chunking(chunks):
    whole = GCWS(n_components=24, seed=5).fit(X)
    parted = GCWS(n_components=24, seed=5).fit(da.from_array(X, chunks=(chunks, -1)))
    assert parted.spec_json() == whole.spec_json()
    assert parted.transform(X).tobytes() == whole.transform(X).tobytes()


def test_featurize_fits_the_scale_on_all_rows_and_reproduces_from_the_spec(tmp_path):
    stores = [featurize(da.from_array(X, chunks=(rows, -1)), GCWS(n_components=16, seed=4),
                        store=str(tmp_path / f"s{rows}.zarr"), progress=False) for rows in (50, 120)]
    specs = [open_store(s.path).feature_map.spec_json() for s in stores]
    assert specs[0] == specs[1] == GCWS(n_components=16, seed=4).fit(X).spec_json()
    codes = [np.asarray(open_store(s.path).features.compute()) for s in stores]
    assert codes[0].tobytes() == codes[1].tobytes() == from_spec(specs[0]).transform(X).tobytes()


def test_sparse_input_is_scaled_without_centering():
    S = sp.random(200, 40, density=0.1, random_state=3, format="csr") * 50.0 - sp.random(
        200, 40, density=0.05, random_state=4, format="csr")
    S = sp.vstack([S, sp.csr_matrix((1, 40))]).tocsr()  # an all-zero row
    gcws = GCWS(n_components=32, seed=7).fit(S)
    state = gcws.spec()["state"]["scale"]
    assert state["rule"] == "maxabs"
    np.testing.assert_array_equal(state["max_abs"], abs(S).max(axis=0).toarray().ravel())
    Z = apply_scale(S, *gcws._shift_factor())
    assert sp.issparse(Z)
    np.testing.assert_array_equal(Z.indices, S.indices)  # zeros stay zeros
    np.testing.assert_array_equal(Z.indptr, S.indptr)
    codes = gcws.transform(S)
    assert np.all(codes[-1] == 255)  # the all-zero row keeps the reserved code
    # the same codes as the dense rows scaled alike (the scaling itself, not a densified variant)
    dense = S.toarray() / np.where(state["max_abs"], state["max_abs"], 1.0)
    np.testing.assert_array_equal(codes, GCWS(n_components=32, seed=7, scale=None).fit(dense).transform(dense))
    # partitioned sparse input: the same spec for any partitioning
    for rows in (9, 100):
        parted = GCWS(n_components=32, seed=7).fit(from_sparse(S, block_rows=rows))
        assert parted.spec_json() == gcws.spec_json()


def test_mostly_zero_dense_input_is_scaled_without_centering():
    img = np.zeros((50, 20))
    img[:, 5:8] = RNG.integers(0, 256, size=(50, 3))
    state = GCWS(n_components=8).fit(img).spec()["state"]["scale"]
    assert state["rule"] == "maxabs"
    np.testing.assert_array_equal(state["max_abs"], img.max(axis=0))


def test_spec_scale_state_is_checked():
    spec = GCWS(n_components=8).fit(X).spec()
    low, high = spec["state"]["scale"]["min"], spec["state"]["scale"]["max"]
    cases = [(("state", "scale", "min"), low[:-1], r"spec\['state'\]\['scale'\]\['min'\]: has shape"),
             (("state", "scale", "min", 0), high[0] + 1, r"min > max at entry 0"),
             (("state", "scale"), KeyError, r"missing 'scale'")]
    for path, value, match in cases:
        with pytest.raises(ValueError, match=match):
            from_spec(tampered(spec, path, value))


def test_center_and_an_explicit_scale_are_refused_auto_defers_to_the_center():
    with pytest.raises(ValueError, match="give one"):
        GCWS(center="mean", scale="minmax").fit(X)
    fitted = GCWS(n_components=8, center="mean").fit(X)
    assert fitted.spec()["state"]["scale"] is None
    np.testing.assert_array_equal(fitted.transform(X),
                                  GCWS(n_components=8, center="mean", scale=None).fit(X).transform(X))


def test_fit_incremental_defaults_scale_on_all_rows():
    y = (X[:, 1] > 100).astype(int)
    model = fit_incremental(SGDClassifier(random_state=0), X, y, feature_map=GCWS(n_components=8, seed=1),
                            block_rows=40, epochs=1, progress=False)
    assert model.feature_map.spec_json() == GCWS(n_components=8, seed=1).fit(X).spec_json()


def test_wide_sparse_input_auto_scales_nothing_an_explicit_rule_is_refused():
    wide = sp.csr_matrix((np.array([3.0, -2.0]), np.array([0, 2**20]), np.array([0, 1, 2])), shape=(2, 2**20 + 1))
    gcws = GCWS(n_components=8, seed=1).fit(wide)
    assert gcws.spec()["state"]["scale"] is None
    unscaled = GCWS(n_components=8, seed=1, scale=None).fit(wide)
    np.testing.assert_array_equal(gcws.transform(wide), unscaled.transform(wide))
    with pytest.raises(ValueError, match="scale='maxabs': more than the bound of 1,048,576"):
        GCWS(n_components=8, scale="maxabs").fit(wide)


@pytest.mark.parametrize("scale", ["auto", "auto_standard"])
def test_wide_dense_input_auto_scales_nothing_as_wide_sparse_input(scale):
    # it was scaled: two vectors of 2**20 + 1 statistics in the spec (40 MB of JSON), and
    # "auto_standard" took 14 s to fit these two rows
    wide = np.zeros((2, 2**20 + 1))
    wide[:, :3] = [[3.0, -2.0, 1.0], [1.0, 5.0, 2.0]]
    gcws = GCWS(n_components=8, seed=1, scale=scale).fit(wide)
    assert gcws.spec()["state"]["scale"] is None and len(gcws.spec_json()) < 10_000
    unscaled = GCWS(n_components=8, seed=1, scale=None).fit(wide)
    np.testing.assert_array_equal(gcws.transform(wide), unscaled.transform(wide))
    with pytest.raises(ValueError, match="scale='standard': more than the bound of 1,048,576"):
        GCWS(n_components=8, scale="standard").fit(wide)


def test_memory_mapped_input_is_read_in_blocks_to_the_same_spec(tmp_path):
    np.save(tmp_path / "X.npy", X.astype(np.float32))
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    assert GCWS(n_components=8).fit(mm).spec_json() == GCWS(n_components=8).fit(np.asarray(mm)).spec_json()


def test_a_bad_block_is_left_to_the_transform_which_names_its_row():
    bad = X.copy()
    bad[130, 2] = np.nan
    gcws = GCWS(n_components=8).fit(da.from_array(bad, chunks=(100, -1)))  # the other blocks' statistics
    np.testing.assert_array_equal(gcws.spec()["state"]["scale"]["max"], np.delete(X, np.s_[100:200], 0).max(axis=0))
    with pytest.raises(ValueError, match="row 130, column 2"):
        gcws.transform(bad)
    # no block passes (one block): the fit raises the input check's own error, naming the row
    with pytest.raises(InputValueError, match="row 130, column 2"):
        GCWS(n_components=8).fit(da.from_array(bad, chunks=(300, -1)))
