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
    for k in ("lease", "width", "dtype", "arrays"):  # format 1 stores had none of them
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


@pytest.mark.parametrize("damage, message", [
    # consolidated metadata lists the arrays: a damaged name used to hide the labels
    ((r'"labels": \{', '"la`els": {'), r"unknown array 'la`els'; the store's metadata \(zarr.json\) is damaged"),
    # an array entry zarr cannot read used to give "no feature store at ..."
    ((r'"zarr_format": 3,(\s+)"node_type": "array"', r'"{arr_format": 3,\1"node_type": "array"'),
     r"cannot read the store's metadata \(zarr.json\)"),
])
def test_damaged_array_entry_in_zarr_json_is_refused_naming_the_store(tmp_path, damage, message):
    import re

    from dask_kernels.pipeline.location import StoreError

    p = str(tmp_path / "l.zarr")
    featurize(X, G, labels=np.arange(len(X)) % 2, store=p, block_rows=100, progress=False)
    meta_path = os.path.join(p, "zarr.json")
    text = open(meta_path).read()
    at = text.index('"consolidated_metadata"')  # the arrays' entries, not the attributes' record of them
    damaged = text[:at] + re.sub(damage[0], damage[1], text[at:], count=1)
    assert damaged != text
    open(meta_path, "w").write(damaged)
    with pytest.raises(StoreError, match=message) as e:
        open_store(p)
    assert p in str(e.value)


def _edit_array(path, name, edit, record=None):
    """Edit array ``name``'s metadata where zarr reads it: its zarr.json and the consolidated copy;
    ``record``: also edit the store's record of its arrays (``dask_kernels["arrays"]``)."""
    meta_path = os.path.join(path, name, "zarr.json")
    meta = json.load(open(meta_path))
    edit(meta)
    json.dump(meta, open(meta_path, "w"))
    top = os.path.join(path, "zarr.json")
    m = json.load(open(top))
    edit(m["consolidated_metadata"]["metadata"][name])
    if record is not None:
        record(m["attributes"]["dask_kernels"])
    json.dump(m, open(top, "w"))


def _retype(dtype):
    return lambda m: m.update(data_type=dtype)


def _no_crc(m):
    m["codecs"] = [c for c in m["codecs"] if c["name"] != "crc32c"]


def _gzip(m):
    m["codecs"] = [{"name": "gzip", "configuration": {"level": 1}} if c["name"] == "zstd" else c for c in m["codecs"]]


@pytest.mark.parametrize("name, edit, message", [
    ("labels", _retype("float64"),
     r"array 'labels' has dtype float64 in its zarr.json, the store was written with '<i8'"),
    ("done", _retype("int64"), r"array 'done' has dtype int64"),
    ("features", _no_crc, r"array 'features' has codecs \[bytes, zstd\] in its zarr.json, the store was written "
                          r"with \[bytes, zstd, crc32c\]"),
    ("features", _gzip, r"array 'features' has codecs \[bytes, gzip, crc32c\]"),
    ("labels", _gzip, r"array 'labels' has codecs \[bytes, gzip, crc32c\]"),
])
def test_an_array_retyped_or_recoded_in_its_zarr_json_is_refused_on_open(tmp_path, name, edit, message):
    p = str(tmp_path / "l.zarr")
    featurize(X, G, labels=np.arange(len(X)) % 2, store=p, block_rows=100, progress=False)
    _edit_array(p, name, edit)
    with pytest.raises(ValueError, match=message) as e:
        open_store(p)
    assert p in str(e.value) and "was edited" in str(e.value)


def _unrecorded(info):  # as stores written before dask_kernels["arrays"]
    info.pop("arrays")


def test_a_store_without_array_records_is_checked_against_what_featurize_writes(tmp_path):
    p = str(tmp_path / "c.zarr")
    featurize(X, G, labels=np.array(["ant", "bee", "cat"])[np.arange(len(X)) % 3], store=p, block_rows=100,
              progress=False)
    _edit_array(p, "labels", lambda m: None, record=_unrecorded)
    assert open_store(p).read_block(0)["labels"][0] == "ant"  # reads as before
    _edit_array(p, "labels", _retype("float32"))  # class-name codes are int32
    with pytest.raises(ValueError, match=rf"{p}: array 'labels' has dtype float32, featurize writes int32 there"):
        open_store(p)


def test_an_undecodable_chunk_of_a_store_without_array_records_names_the_array_and_block(tmp_path):
    p = str(tmp_path / "g.zarr")
    featurize(X, G, store=p, block_rows=100, progress=False)
    _edit_array(p, "features", _gzip, record=_unrecorded)
    with pytest.raises(ValueError, match=rf"{p}: array 'features', block 1 \(rows 100..199\): the chunk cannot be "
                                         r"decoded with the codecs its zarr.json names \(\[bytes, gzip, crc32c\]\)"):
        open_store(p).read_block(1)


def _chunk_shape(shape):
    return lambda m: m["chunk_grid"]["configuration"].update(chunk_shape=shape)


@pytest.mark.parametrize("name, edit, message", [
    # a ZeroDivisionError traceback from the chunk-file check at the first block read
    ("done", _chunk_shape([0, 10]), r"array 'done' has chunks \(0, 10\), expected \(1, 10\)"),
    ("done", _chunk_shape([1, 0]), r"array 'done' has chunks \(1, 0\), expected \(1, 10\)"),
    # an OverflowError traceback from zarr parsing the metadata
    ("features", lambda m: m.update(fill_value=-1), r"cannot read the store's metadata \(zarr.json\): OverflowError"),
    ("labels", lambda m: m.update(fill_value=1e308), r"cannot read the store's metadata \(zarr.json\): OverflowError"),
])
def test_an_array_zarr_json_with_impossible_chunks_or_fill_value_is_refused_on_open(tmp_path, capsys, name, edit,
                                                                                      message):
    from _cli import one_line_error

    p = str(tmp_path / "l.zarr")
    featurize(X, G, labels=np.arange(len(X)) % 2, store=p, block_rows=100, progress=False)
    _edit_array(p, name, edit)
    with pytest.raises(ValueError, match=message) as e:
        open_store(p)
    assert p in str(e.value)
    assert p in one_line_error(capsys, ["info", "--verify", p])


@pytest.mark.parametrize("edit", [lambda m: m.update(fill_value=-1), lambda m: m["shape"].__setitem__(0, 1e12)])
def test_an_array_zarr_json_zarr_cannot_parse_is_refused_without_consolidated_metadata(tmp_path, edit):
    """Read from the array's own zarr.json (no consolidated copy): OverflowError and TypeError
    tracebacks from zarr."""
    p = str(tmp_path / "l.zarr")
    featurize(X, G, labels=np.arange(len(X)) % 2, store=p, block_rows=100, progress=False)
    _edit(p, lambda info: None)  # drops the consolidated metadata
    meta_path = os.path.join(p, "features", "zarr.json")
    meta = json.load(open(meta_path))
    edit(meta)
    json.dump(meta, open(meta_path, "w"))
    with pytest.raises(ValueError, match=r"cannot read an array's metadata \(its zarr.json\)") as e:
        open_store(p)
    assert p in str(e.value)
