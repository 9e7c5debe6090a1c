"""Class names as labels where they enter: ``.npy`` of strings, Parquet and CSV string label
columns, and the bounds on what a label input can make us allocate.

Before, a Parquet label column of letters was refused with advice about feature columns, a
``.npy`` of strings was refused as "not numeric", and an object ``.npy`` got numpy's message
about ``allow_pickle``.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from dask_kernels import labels as labels_mod
from dask_kernels.cli._args import UsageError
from dask_kernels.cli._inputs import load_labels
from dask_kernels.io import read_csv, read_parquet
from dask_kernels.io.dense import load_npy

NAMES = np.array(["setosa", "versicolor", "virginica"])


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    d = tmp_path_factory.mktemp("class names")
    rng = np.random.default_rng(0)
    X = rng.random((50, 3))
    y = NAMES[rng.integers(0, 3, 50)]
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "species": y})
    pytest.importorskip("pyarrow")
    frame.to_parquet(d / "t.parquet", row_group_size=20)
    frame.to_csv(d / "t.csv", index=False)
    return d, X, y


def test_a_parquet_string_label_column_gives_the_class_names(table):
    d, X, y = table
    Xd, yd = read_parquet(str(d / "t.parquet"), label="species", block_rows=20)
    assert yd.dtype == object and yd.chunks == Xd.chunks[:1]
    assert yd.compute().tolist() == y.tolist()
    np.testing.assert_array_equal(Xd.compute(), X)


def test_a_csv_string_label_column_gives_the_class_names(table):
    d, X, y = table
    Xd, yd = read_csv(str(d / "t.csv"), label="species")
    assert yd.compute().tolist() == y.tolist()
    np.testing.assert_array_equal(Xd.compute(), X)


def test_a_text_label_column_is_read_without_dask_warning_about_its_dtype(table):
    """pandas' string dtype converted by dask itself warned on every featurize from a CSV."""
    d, X, y = table
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Xd, yd = read_csv(str(d / "t.csv"), label="species")
        assert yd.compute().tolist() == y.tolist()


def test_an_unnamed_text_column_is_refused_saying_how_to_name_the_labels(table):
    d, _, _ = table
    with pytest.raises(ValueError, match=r"'species' \((large_)?string\) is not numeric; a column of labels .* label=NAME"):
        read_parquet(str(d / "t.parquet"))


def test_an_npy_of_class_names_is_read_as_labels(tmp_path):
    np.save(tmp_path / "y.npy", NAMES[[0, 2, 1, 2]])
    y = load_labels(str(tmp_path / "y.npy"), 4)
    assert y.dtype.kind == "U" and y.tolist() == ["setosa", "virginica", "versicolor", "virginica"]


def test_an_object_npy_is_refused_naming_pickle(tmp_path):
    path = tmp_path / "y.npy"
    np.save(path, NAMES.astype(object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"y\.npy: holds Python objects \(dtype object\), which only pickle can load; "
                                         r"refused .* y\.astype\(str\)"):
        load_npy(str(path), 1)
    with pytest.raises(UsageError, match=r"--labels .*y\.npy: holds Python objects"):
        load_labels(str(path), 3)


def test_a_class_name_longer_than_the_bound_is_refused_naming_row_and_bound(tmp_path):
    y = np.array(["a", "b", "x" * (labels_mod.MAX_CLASS_CHARS + 1)])
    np.save(tmp_path / "y.npy", y)
    with pytest.raises(UsageError, match=rf"row 2 holds a class name of {labels_mod.MAX_CLASS_CHARS + 1} characters, "
                                         rf"more than MAX_CLASS_CHARS = {labels_mod.MAX_CLASS_CHARS}"):
        load_labels(str(tmp_path / "y.npy"), 3)
    with pytest.raises(ValueError, match="MAX_CLASS_CHARS"):  # objects too (pandas, Parquet)
        labels_mod.encode(y.astype(object))


def test_more_classes_than_the_bound_are_refused_naming_it(monkeypatch):
    import dask.array as da

    monkeypatch.setattr(labels_mod, "MAX_CLASSES", 3)
    y = np.array(["a", "b", "c", "d", "a"])
    with pytest.raises(ValueError, match="more than MAX_CLASSES = 3 distinct class names"):
        labels_mod.encode(y)
    with pytest.raises(ValueError, match="more than MAX_CLASSES = 3 distinct class names"):  # over several blocks
        labels_mod.encode(da.from_array(y, chunks=2))


def test_codes_index_the_sorted_names_and_objects_must_all_be_strings():
    import dask.array as da

    y = np.array(["dog", "cat", "emu", "cat"], dtype=object)
    codes, classes = labels_mod.encode(da.from_array(y, chunks=3))
    assert classes.tolist() == ["cat", "dog", "emu"] and classes.dtype.kind == "U"
    assert codes.dtype == np.int32 and codes.compute().tolist() == [1, 0, 2, 0]
    np.testing.assert_array_equal(labels_mod.decode(codes.compute(), classes), y.astype(str))
    with pytest.raises(ValueError, match=r"row 4 holds None \(NoneType\), not a class name"):
        labels_mod.encode(da.from_array(np.array(["a", "b", "c", "d", None, "a"], dtype=object), chunks=3))


def test_a_dictionary_encoded_label_column_gives_its_values(tmp_path):
    """pandas' ``category`` written to Parquet (and R's factors) is a dictionary column: it was
    refused as "labels are numbers or class names (strings)"."""
    import dask.dataframe as dd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dask_kernels import open_store
    from dask_kernels.cli import main
    from dask_kernels.io import InputChoiceError, from_dataframe

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.random(40), "b": rng.random(40), "type": NAMES[rng.integers(0, 3, 40)]})
    frame.astype({"type": "category"}).to_parquet(tmp_path / "cat.parquet", index=False)
    X, y = read_parquet(str(tmp_path / "cat.parquet"), label="type")
    assert y.compute().tolist() == frame["type"].tolist() and X.shape == (40, 2)
    assert main(["featurize", str(tmp_path / "cat.parquet"), str(tmp_path / "s.zarr"), "--label-column", "type",
                 "--param", "n_components=8", "--no-progress"]) == 0
    store = open_store(str(tmp_path / "s.zarr"))
    assert store.classes.tolist() == sorted(set(frame["type"]))
    assert store.labels.compute().tolist() == frame["type"].tolist()
    # integer class ids, and files whose dictionaries have other index widths (int8 here, int32 there)
    ids = pa.array(rng.integers(0, 3, 40)).dictionary_encode()
    pq.write_table(pa.table({"a": frame["a"], "id": ids}), tmp_path / "ids.parquet")
    assert read_parquet(str(tmp_path / "ids.parquet"), label="id")[1].compute().tolist() == ids.to_pylist()
    (tmp_path / "two").mkdir()
    frame[:20].astype({"type": "category"}).to_parquet(tmp_path / "two" / "part.0.parquet", index=False)
    pq.write_table(pa.table({"a": frame["a"][20:], "b": frame["b"][20:],
                             "type": pa.array(frame["type"][20:]).dictionary_encode()}),
                   tmp_path / "two" / "part.1.parquet")
    assert read_parquet(str(tmp_path / "two"), label="type")[1].compute().tolist() == frame["type"].tolist()
    # a pandas/dask categorical label Series or column
    ddf = dd.from_pandas(frame.astype({"type": "category"}), npartitions=2)
    assert from_dataframe(ddf, label="type")[1].compute().tolist() == frame["type"].tolist()
    # a dictionary *feature* column is not numbers: named, not read
    frame.astype({"type": "category"}).to_parquet(tmp_path / "feat.parquet", index=False)
    with pytest.raises(InputChoiceError, match="'type' .*not numeric"):
        read_parquet(str(tmp_path / "feat.parquet"))
