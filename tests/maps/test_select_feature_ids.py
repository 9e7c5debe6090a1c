"""feature_ids for RFF, NRFF and Fastfood: any subset of features from their ids alone.

Every parameter of feature j is a pure function of (seed, j): a map built from an id list
computes exactly the same parameter values (and, before the normalization, the same features)
as the same columns of the full map; default maps write the same spec and the same bytes as
before the parameter existed; long id lists live in the sidecar, verified on load.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from dask_kernels import NRFF, RFF, Fastfood, from_spec
from dask_kernels.maps._subset import SPEC_MAX_IDS
from dask_kernels.maps import load_map, save_map
from dask_kernels.sidecar import SidecarError, map_arrays

X = np.random.default_rng(0).normal(size=(25, 11))
X[X < -0.7] = 0.0  # some zeros, so the CSR form differs from the dense one

MAPS = {
    "rff": lambda **kw: RFF(gamma=0.4, seed=3, **kw),
    "rff-laplacian": lambda **kw: RFF(gamma=0.4, kernel="laplacian", seed=3, **kw),
    "nrff": lambda **kw: NRFF(gamma=2.0, seed=4, **kw),
    "fastfood": lambda **kw: Fastfood(gamma=0.4, seed=5, **kw),
    "fastfood-matern": lambda **kw: Fastfood(sigma=1.5, radial="matern", matern_t=2, seed=6, **kw),
}


@pytest.mark.parametrize("name", sorted(MAPS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ids_0_to_k_are_the_default_map_bitwise(name, dtype):
    k = 70
    plain = MAPS[name](n_components=k, dtype=dtype).fit(X)
    ids = MAPS[name](n_components=k, dtype=dtype, feature_ids=np.arange(k)).fit(X)
    for data in (X, sp.csr_matrix(X)):
        assert np.array_equal(plain.transform(data), ids.transform(data))


@pytest.mark.parametrize("name", sorted(MAPS))
def test_default_spec_is_unchanged(name):
    # a map without the new parameters writes the spec it wrote before them (fingerprints of
    # existing stores and models depend on it), and an old spec (no such keys) still loads
    fmap = MAPS[name](n_components=30).fit(X)
    spec = fmap.spec()
    assert "feature_ids" not in spec["params"] and "density" not in spec["params"]
    assert "sidecar" not in spec["state"]
    rebuilt = from_spec(json.loads(fmap.spec_json()))
    assert rebuilt.spec_json() == fmap.spec_json()
    assert np.array_equal(rebuilt.transform(X), fmap.transform(X))


def test_pinned_spec_params():
    # the exact params of a default RFF spec, as main wrote them before feature_ids and density
    # (the state is the cosine's business: not pinned here)
    spec = json.loads(RFF(n_components=8, gamma=0.5, seed=7).fit(X).spec_json())
    assert spec["params"] == {"dtype": "float32", "gamma": 0.5, "kernel": "rbf", "n_components": 8, "seed": 7}
    assert sorted(spec) == ["method", "n_features_in", "n_output_features", "output_dtype", "params", "rng_scheme",
                            "spec_version", "state"]
    assert "sidecar" not in spec["state"]


@pytest.mark.parametrize("name", ["rff", "rff-laplacian", "nrff"])
def test_subset_tables_are_the_full_columns_bitwise(name):
    full = MAPS[name](n_components=400, dtype="float64").fit(X)
    ids = [399, 0, 123, 7, 250]
    sub = MAPS[name](n_components=len(ids), dtype="float64", feature_ids=ids).fit(X)
    W, phase = full._tables()
    Ws, phases = sub._tables()
    assert np.array_equal(Ws, W[:, ids]) and np.array_equal(phases, phase[ids])


@pytest.mark.parametrize("name", ["rff", "rff-laplacian"])
def test_rff_subset_features_are_the_full_columns_rescaled(name):
    k, ids = 300, [299, 5, 150, 42]
    full = MAPS[name](n_components=k, dtype="float64").fit(X).transform(X)
    sub = MAPS[name](n_components=len(ids), dtype="float64", feature_ids=ids).fit(X).transform(X)
    # same cos(w_j . x + b_j); only the normalization sqrt(2 / k) follows the width
    np.testing.assert_allclose(sub, full[:, ids] * np.sqrt(k / len(ids)), rtol=0, atol=1e-12)


def test_nrff_subset_is_the_full_columns_renormalized():
    k, ids = 300, [299, 5, 150, 42, 77]
    full = MAPS["nrff"](n_components=k, dtype="float64").fit(X).transform(X)
    sub = MAPS["nrff"](n_components=len(ids), dtype="float64", feature_ids=ids).fit(X).transform(X)
    cols = full[:, ids]
    np.testing.assert_allclose(sub, cols / np.linalg.norm(cols, axis=1, keepdims=True), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["fastfood", "fastfood-matern"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fastfood_subset_projection_is_the_full_columns_bitwise(name, dtype):
    # padded width d = 16: ids from blocks 0, 3, 12 (not whole blocks, unordered)
    k, ids = 200, [199, 3, 50, 48, 0]
    full = MAPS[name](n_components=k, dtype=dtype).fit(X)
    sub = MAPS[name](n_components=len(ids), dtype=dtype, feature_ids=ids).fit(X)
    for data in (X, sp.csr_matrix(X)):
        assert np.array_equal(sub.projection_block(sub.validate_block(data)),
                              full.projection_block(full.validate_block(data))[:, ids])
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(sub.transform(X), full.transform(X)[:, ids] * np.sqrt(k / len(ids)), rtol=0,
                               atol=tol)


@pytest.mark.parametrize("name", sorted(MAPS))
def test_subset_maps_are_bitwise_the_same_on_every_thread_count(name):
    # the thread pool writes each row block into the result (_transform_into); a subset that is
    # not whole Fastfood blocks must still land its picked columns there
    rows = np.random.default_rng(1).normal(size=(700, 11))
    ids = [199, 3, 50, 48, 0]
    one = MAPS[name](n_components=len(ids), feature_ids=ids, n_jobs=1).fit(rows).transform(rows)
    two = MAPS[name](n_components=len(ids), feature_ids=ids, n_jobs=2).fit(rows).transform(rows)
    assert one.shape == (700, len(ids)) and np.array_equal(one, two)


def test_fastfood_whole_blocks_need_no_gather():
    d = 16
    ids = np.r_[5 * d : 6 * d, 9 * d : 10 * d]  # blocks 5 and 9
    ff = MAPS["fastfood"](n_components=ids.size, feature_ids=ids).fit(X)
    tables, gather = ff._subset_tables()
    assert gather is None and tables[0].shape == (2, d)


@pytest.mark.parametrize("name", sorted(MAPS))
def test_short_list_in_spec_long_list_in_sidecar(name, tmp_path):
    short = MAPS[name](n_components=3, feature_ids=[10, 2, 7]).fit(X)
    spec = short.spec()
    assert spec["params"]["feature_ids"] == [10, 2, 7] and map_arrays(short) is None
    assert np.array_equal(from_spec(short.spec_json()).transform(X), short.transform(X))

    ids = np.random.default_rng(1).permutation(5000)[: SPEC_MAX_IDS + 1]
    long = MAPS[name](n_components=ids.size, feature_ids=ids).fit(X)
    spec = long.spec()
    assert spec["params"]["feature_ids"] == "sidecar" and spec["state"]["sidecar"]["format"] == "dk-sidecar-1"
    assert len(long.spec_json()) < 2000  # the ids are not in the JSON
    rebuilt = from_spec(spec, arrays=map_arrays(long))
    assert rebuilt.spec_json() == long.spec_json()
    assert np.array_equal(rebuilt.transform(X), long.transform(X))
    path = save_map(long, tmp_path / "m.json")
    assert np.array_equal(load_map(path).transform(X), long.transform(X))
    with pytest.raises(SidecarError, match="sidecar"):
        from_spec(spec)  # the ids are needed
    tampered = dict(map_arrays(long))
    tampered["feature_ids"] = tampered["feature_ids"].copy()
    tampered["feature_ids"][0] += 1
    with pytest.raises(SidecarError, match="sha256"):
        from_spec(spec, arrays=tampered)


def test_fresh_process_reproduces_the_features(tmp_path):
    ids = np.arange(3 * SPEC_MAX_IDS, 0, -3)
    fmap = RFF(n_components=ids.size, gamma=0.3, seed=9, feature_ids=ids).fit(X)
    path = save_map(fmap, tmp_path / "m.json")
    np.save(tmp_path / "X.npy", X)
    code = ("import sys, numpy as np; from dask_kernels.maps import load_map; "
            "m = load_map(sys.argv[1]); np.save(sys.argv[2], m.transform(np.load(sys.argv[3])))")
    env = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(tmp_path / "nc"))}
    subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "Z.npy"), str(tmp_path / "X.npy")],
                   check=True, env=env)
    assert np.array_equal(np.load(tmp_path / "Z.npy"), fmap.transform(X))


@pytest.mark.parametrize(
    "ids, match",
    [
        ([1, 2, 2], r"feature_ids\[2\] = 2 repeats"),
        ([1, -4, 2], r"feature_ids\[1\] = -4 is not a feature id"),
        ([1.0, 2.0, 3.0], "must hold integers"),
        ([[1, 2, 3]], "1-D"),
        ([1, 2], "2 ids but n_components=3"),
        ([True, False, True], "must hold integers"),
        (np.array([1, 2**63, 3], dtype=np.uint64), r"feature_ids\[1\]"),
    ],
)
@pytest.mark.parametrize("cls", [RFF, NRFF, Fastfood])
def test_bad_ids_are_refused_naming_the_position(cls, ids, match):
    with pytest.raises(ValueError, match=match):
        cls(n_components=3, feature_ids=ids).fit(X)


def test_bad_ids_in_a_spec_are_refused():
    spec = RFF(n_components=3, feature_ids=[1, 2, 3]).fit(X).spec()
    spec["params"]["feature_ids"] = [1, 1, 3]
    with pytest.raises(ValueError, match=r"spec\['params'\].*repeats"):
        from_spec(spec)
    spec["params"]["feature_ids"] = "sidecar"  # a sidecar marker without a manifest
    with pytest.raises(ValueError, match=r"spec\['state'\]\['sidecar'\]"):
        from_spec(spec)
    with pytest.raises(ValueError, match="only appears in a spec"):
        RFF(n_components=3, feature_ids="sidecar").fit(X)
