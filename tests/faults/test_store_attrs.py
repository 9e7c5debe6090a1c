"""Store attributes read from disk are validated before use: damaged or edited
attributes give a message naming the store and the key, never a bare KeyError or JSON error;
store format versions are checked."""

import json
import os
import warnings

import numpy as np
import pytest
import zarr

from dask_kernels import GCWS, featurize, open_store

RNG = np.random.default_rng(8)
X = np.abs(RNG.standard_normal((300, 6)))
G = GCWS(n_components=8, seed=4).fit(X[:1])
REF = G.transform(X)


@pytest.fixture
def store(tmp_path):
    p = str(tmp_path / "s.zarr")
    featurize(X, G, store=p, block_rows=100, progress=False)
    return p


def _edit(path, edit):
    meta_path = os.path.join(path, "zarr.json")
    meta = json.load(open(meta_path))
    edit(meta["attributes"]["dask_kernels"])
    meta.pop("consolidated_metadata", None)
    json.dump(meta, open(meta_path, "w"))


EDITS = {
    "n_rows-missing": (lambda i: i.pop("n_rows"), r"dask_kernels\['n_rows'\] is missing"),
    "block_rows-zero": (lambda i: i.update(block_rows=0), r"dask_kernels\['block_rows'\] = '0' is not an integer >= 1"),
    "block_rows-text": (lambda i: i.update(block_rows="100"), r"dask_kernels\['block_rows'\]"),
    "n_blocks-wrong": (lambda i: i.update(n_blocks=99), r"dask_kernels\['n_blocks'\] = '99'"),
    "spec-not-object": (lambda i: i.update(spec="{not json"), r"dask_kernels\['spec'\]"),
    "sha-missing": (lambda i: i.pop("fingerprint_sha256"), r"dask_kernels\['fingerprint_sha256'\] is missing"),
    "dtype-nonsense": (lambda i: i.update(dtype="not-a-dtype"), r"dask_kernels\['dtype'\]"),
    "dtype-other": (lambda i: i.update(dtype="<f8"), r"dask_kernels\['dtype'\] says float64"),
    "format-unknown": (lambda i: i.update(format=99), r"store format 99 .*dask_kernels\['format'\].* not one this"),
    "format-missing": (lambda i: i.pop("format"), r"store format None"),
    "lease-missing": (lambda i: i.pop("lease"), r"dask_kernels\['lease'\] is missing"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_bad_attribute_is_named_on_open_and_on_resume(store, name):
    edit, message = EDITS[name]
    _edit(store, edit)
    with pytest.raises(ValueError, match=message) as e:
        open_store(store)
    assert store in str(e.value)
    with pytest.raises(ValueError, match=message):
        featurize(X, G, store=store, block_rows=100, progress=False)


def test_unreadable_zarr_json_names_the_store(store):
    with open(os.path.join(store, "zarr.json"), "w") as f:
        f.write('{"zarr_format": 3, "node_type": "group", "attributes": {"dask_')
    with pytest.raises(ValueError, match=rf"{store}: .*zarr\.json"):
        open_store(store)
    with pytest.raises(ValueError, match=rf"{store} .*zarr\.json"):
        featurize(X, G, store=store, block_rows=100, progress=False)


def test_array_shape_disagreeing_with_attributes_is_named(store):
    meta_path = os.path.join(store, "features", "zarr.json")
    meta = json.load(open(meta_path))
    meta["shape"] = [250, 8]
    json.dump(meta, open(meta_path, "w"))
    top = os.path.join(store, "zarr.json")
    m = json.load(open(top))
    m.pop("consolidated_metadata", None)
    json.dump(m, open(top, "w"))
    with pytest.raises(ValueError, match=rf"{store}: array 'features' has shape \(250, 8\)"):
        open_store(store)


def _as_format_1(path):
    """Turn a store into the format 1 layout (done: one byte per block; no lease)."""
    g = zarr.open_group(path, mode="r+", use_consolidated=False)
    n = g.attrs["dask_kernels"]["n_blocks"]
    del g["done"]
    g.create_array("done", shape=(n,), chunks=(1,), dtype="uint8", fill_value=0, compressors=None)[:] = 1
    info = dict(g.attrs["dask_kernels"], format=1)
    for k in ("lease", "width", "dtype"):
        info.pop(k, None)
    g.attrs["dask_kernels"] = info
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "consolidated metadata is not part of the v3 spec yet"
        zarr.consolidate_metadata(g.store)


def test_format_1_store_opens_read_only_and_is_not_resumed(store):
    _as_format_1(store)
    s = open_store(store)
    assert s.format == 1 and s.complete and np.array_equal(s.features.compute(), REF)
    with pytest.raises(ValueError, match=r"format 1 feature store.*overwrite=True"):
        featurize(X, G, store=store, block_rows=100, progress=False)
    s = featurize(X, G, store=store, block_rows=100, overwrite=True, progress=False)
    assert s.format == 2 and np.array_equal(s.features.compute(), REF)
