"""CoRE's ``scale``: columns divided by their largest training |x| (the nonzero pattern kept),
learned from all rows, the same spec for any chunking; specs without ``scale`` keep their bytes."""

import hashlib
import json

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from dask_kernels import CoRE, featurize, from_spec, open_store
from dask_kernels.io import from_sparse

RNG = np.random.default_rng(4)
#: columns in very different units, one all zero, a quarter of the entries zero
X = RNG.normal(size=(200, 5)) * [1.0, 300.0, 0.01, 5.0, 1.0] * (RNG.random((200, 5)) > 0.25)
X[:, 4] = 0.0

OLD_X = (np.arange(60, dtype=np.float64).reshape(12, 5) % 7 - 3) * np.array([1.0, -0.5, 30.0, 0.25, -2.0])
#: specs and output hashes of CoRE(n_components=16, type=t, seed=3).fit(OLD_X) before ``scale`` existed
OLD = [
    (1, '{"method":"core","n_features_in":5,"n_output_features":32,"output_dtype":"<f4","params":{"bits":8,'
        '"n_components":16,"output":"codes","seed":3,"type":1},"rng_scheme":"dk-rng-1","spec_version":1,"state":{}}',
     "ca76a2722806d6d0af9fedc495e2dae6ab03a5bb5cc0aa05974cf96cac101eba"),
    (2, '{"method":"core","n_features_in":5,"n_output_features":32,"output_dtype":"<f4","params":{"bits":8,'
        '"n_components":16,"output":"codes","seed":3,"type":2},"rng_scheme":"dk-rng-1","spec_version":1,"state":{}}',
     "3913992044b061ec22780f970c826f96513ba7964d54bf5177379df00a916a9e"),
]


@pytest.mark.parametrize("kind, spec, sha", OLD)
def test_old_spec_gives_its_old_bytes(kind, spec, sha):
    fmap = from_spec(spec)
    assert fmap.scale is None
    assert hashlib.sha256(fmap.transform(OLD_X).tobytes()).hexdigest() == sha
    assert fmap.spec_json() == spec
    assert CoRE(n_components=16, type=kind, seed=3, scale=None).fit(OLD_X).spec_json() == spec


def test_default_divides_each_column_by_its_largest_abs_value():
    core = CoRE(n_components=32, seed=1).fit(X)
    m = np.abs(X).max(axis=0)
    assert core.spec()["state"]["scale"] == {"rule": "maxabs", "max_abs": m.tolist()}
    scaled = X / np.where(m > 0, m, 1.0)  # the zero column keeps factor 1
    plain = CoRE(n_components=32, seed=1, scale=None).fit(scaled)
    np.testing.assert_array_equal(core.transform(X), plain.transform(scaled))
    np.testing.assert_array_equal(core.sample(X)[0], plain.sample(scaled)[0])
    # the scaling is applied: the unscaled map's values differ, its locations (the pattern) do not
    unscaled = CoRE(n_components=32, seed=1, scale=None).fit(X)
    assert not np.array_equal(core.transform(X), unscaled.transform(X))
    np.testing.assert_array_equal(core.sample(X)[0], unscaled.sample(X)[0])


@pytest.mark.parametrize("rows", [1, 9, 199])
def test_spec_is_the_same_for_any_chunking_dense_and_sparse(rows):
    whole = CoRE(n_components=16, seed=2).fit(X)
    assert CoRE(n_components=16, seed=2).fit(da.from_array(X, chunks=(rows, -1))).spec_json() == whole.spec_json()
    S = sp.csr_matrix(X)
    assert CoRE(n_components=16, seed=2).fit(from_sparse(S, block_rows=rows)).spec_json() == whole.spec_json()
    assert CoRE(n_components=16, seed=2).fit(S).transform(S).tobytes() == whole.transform(X).tobytes()


def test_featurize_fits_the_scale_on_all_rows(tmp_path):
    Y = X.copy()
    Y[:50, 1] = 0.0  # the first block alone would say another maximum... and
    Y[120, 1] = 1e4  # the largest value is in a later block
    store = featurize(da.from_array(Y, chunks=(50, -1)), CoRE(n_components=8, seed=4), store=str(tmp_path / "c.zarr"),
                      progress=False)
    assert open_store(store.path).feature_map.spec_json() == CoRE(n_components=8, seed=4).fit(Y).spec_json()


def test_wide_sparse_input_auto_scales_nothing_an_explicit_rule_is_refused():
    wide = sp.csr_matrix((np.array([3.0, -2.0]), np.array([0, 2**20]), np.array([0, 1, 2])), shape=(2, 2**20 + 1))
    core = CoRE(n_components=8, seed=1).fit(wide)
    assert core.spec()["state"] == {"scale": None}
    np.testing.assert_array_equal(core.transform(wide), CoRE(n_components=8, seed=1, scale=None).fit(wide).transform(wide))
    with pytest.raises(ValueError, match="scale='maxabs': more than the bound of 1,048,576"):
        CoRE(n_components=8, scale="maxabs").fit(wide)


def test_spec_scale_state_is_checked():
    spec = CoRE(n_components=8).fit(X).spec()
    cases = [({}, "expected the keys \\['scale'\\]"),
             ({"scale": {"rule": "minmax", "min": [0.0] * 5, "max": [1.0] * 5}}, "'maxabs' only"),
             ({"scale": {"rule": "maxabs", "max_abs": [1.0] * 4}}, "has shape \\(4,\\)"),
             ({"scale": {"rule": "maxabs", "max_abs": [1.0, -1.0, 1.0, 1.0, 1.0]}}, "entry 1 is negative")]
    for state, match in cases:
        with pytest.raises(ValueError, match=match):
            from_spec({**json.loads(json.dumps(spec)), "state": state})
    unscaled = CoRE(n_components=8, scale=None).fit(X).spec()
    with pytest.raises(ValueError, match="expected the keys \\[\\]"):
        from_spec({**unscaled, "state": spec["state"]})


def test_wide_partitioned_input_fits_without_reading_it(tmp_path):
    # svmlight partitions of more than 2**20 columns: scale="auto" scales nothing, and fit handed
    # the partitions to the in-memory fit (TypeError: float() argument must be ... not 'SparsePartitions')
    from dask_kernels.io import read_svmlight

    lines = ["0 1:1"] * 100 + ["1 1:1 1048577:1"]
    (tmp_path / "w.svm").write_text("\n".join(lines) + "\n")
    parts = read_svmlight(str(tmp_path / "w.svm"))
    core = CoRE(n_components=16).fit(parts)
    assert core.n_features_in_ == 2**20 + 1 and core.scale_ is None
    rows = sp.csr_matrix(([1.0, 1.0], ([0, 0], [0, 2**20])), shape=(1, 2**20 + 1))
    assert core.spec() == CoRE(n_components=16).fit(rows).spec()
