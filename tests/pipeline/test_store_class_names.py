"""Feature stores of class-name labels: int32 codes into the sorted names kept in the job
fingerprint (store format 5), read back as the names; appends, resumes and edits.

Before, string labels went into the store as a Zarr fixed-width UTF-32 array (a data type
without a Zarr v3 specification, unbounded in width), a dask Series of strings as whatever
its dtype was, and an appended segment could mix numbers and names.
"""

import json

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import zarr

from dask_kernels import GCWS, featurize, open_store
from dask_kernels.pipeline.location import StoreError


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(3)
    X = rng.random((120, 6))
    y = np.array(["cat", "dog"])[(X[:, 0] > 0.5).astype(int)]
    return X, y, GCWS(n_components=16, seed=1).fit(X)


def test_names_are_stored_as_codes_and_read_back(rows, tmp_path):
    X, y, fmap = rows
    store = featurize(X, fmap, labels=y, store=str(tmp_path / "s.zarr"), block_rows=50, progress=False)
    assert store.format == 5
    assert store.group["labels"].dtype == np.int32
    assert store.group["labels"][:].tolist() == (y == "dog").astype(int).tolist()
    assert store.info["fingerprint"]["classes"] == ["cat", "dog"]
    assert store.classes.tolist() == ["cat", "dog"]
    assert store.labels.dtype == np.dtype("<U3")
    assert store.labels.compute().tolist() == y.tolist()
    assert store.read_block(1)["labels"].tolist() == y[50:100].tolist()
    again = featurize(X, fmap, labels=y, store=str(tmp_path / "s.zarr"), block_rows=50, progress=False)
    assert again.run_stats == {"computed": 0, "skipped": 3}  # the same job: the same codes


def test_a_dask_series_of_names_in_a_sharded_store(rows, tmp_path):
    import dask.dataframe as dd

    X, y, fmap = rows
    series = dd.from_pandas(pd.Series(y.astype(object)), npartitions=4)
    store = featurize(X, fmap, labels=series, store=str(tmp_path / "s.zarr"), block_rows=10, shards=4,
                      progress=False)
    assert store.format == 5 and store.info["shard_blocks"] == 4
    assert store.labels.compute().tolist() == y.tolist()


def test_an_appended_segment_may_add_a_class(rows, tmp_path):
    X, y, fmap = rows
    path = str(tmp_path / "s.zarr")
    featurize(X[:60], fmap, labels=y[:60], store=path, mode="append", progress=False)
    new = np.array(["emu", "ant", "cat"])[np.arange(60) % 3]
    store = featurize(X[60:], fmap, labels=da.from_array(new.astype(object), chunks=25), store=path,
                      mode="append", progress=False)
    assert store.format == 5 and len(store.segments) == 1
    assert store.segments[0].info["fingerprint"]["classes"] == ["ant", "cat", "emu"]
    assert store.classes.tolist() == ["ant", "cat", "dog", "emu"]
    assert store.labels.compute().tolist() == y[:60].tolist() + new.tolist()
    a, b = list(store.blocks())[-1]  # a segment's block, read directly: names too
    assert open_store(path).read_block(store.n_blocks - 1)["labels"].tolist() == new[a - 60:b - 60].tolist()
    with pytest.raises(ValueError, match="the store's labels are class names, the appended rows' are numbers"):
        featurize(X[60:] + 1, fmap, labels=np.arange(60), store=path, mode="append", progress=False)


def test_names_cannot_be_appended_to_numeric_labels(rows, tmp_path):
    X, y, fmap = rows
    path = str(tmp_path / "s.zarr")
    featurize(X[:60], fmap, labels=np.zeros(60), store=path, progress=False)
    with pytest.raises(ValueError, match="the store's labels are numbers, the appended rows' are class names"):
        featurize(X[60:], fmap, labels=y[60:], store=path, mode="append", progress=False)


def test_numeric_labels_keep_their_store_format_and_dtype(rows, tmp_path):
    X, _, fmap = rows
    store = featurize(X, fmap, labels=np.arange(120) % 3, store=str(tmp_path / "s.zarr"), progress=False)
    assert store.format == 2 and store.classes is None and "classes" not in store.info["fingerprint"]
    assert store.labels.dtype == np.int64 and store.labels.compute().tolist() == (np.arange(120) % 3).tolist()


def _edit(path, change):
    meta = json.loads((path / "zarr.json").read_text())
    change(meta["attributes"]["dask_kernels"])
    (path / "zarr.json").write_text(json.dumps(meta))


def test_edited_class_names_or_format_are_refused(rows, tmp_path):
    X, y, fmap = rows
    path = tmp_path / "s.zarr"
    featurize(X, fmap, labels=y, store=str(path), progress=False)
    _edit(path, lambda info: info["fingerprint"].__setitem__("classes", ["dog", "cat"]))
    with pytest.raises(StoreError, match="fingerprint"):  # swapped names would swap every label
        open_store(str(path))
    _edit(path, lambda info: info["fingerprint"].__setitem__("classes", ["cat", "dog"]))
    open_store(str(path))
    _edit(path, lambda info: info.__setitem__("format", 2))  # read by a version that knows no names
    with pytest.raises(StoreError, match="store format 2 has no class names"):
        open_store(str(path))


def test_a_code_outside_the_class_list_is_an_error_naming_the_block(rows, tmp_path):
    X, y, fmap = rows
    path = str(tmp_path / "s.zarr")
    featurize(X, fmap, labels=y, store=path, progress=False)
    zarr.open_array(f"{path}/labels", mode="r+")[0] = 7
    with pytest.raises(ValueError, match="array 'labels', block 0"):
        open_store(path, verify=False).labels.compute()
