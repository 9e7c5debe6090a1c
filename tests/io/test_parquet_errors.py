"""A bad value in a Parquet dataset is named by its file and its row in that file.

Before, a NaN in the third file of a folder was reported by its row in the whole dataset ("row
67"), which no file has: the user had to add up the other files' rows to find it. Featurizing
into a store now names the file and its row there (and the dataset's row), on a cluster too
(the error's row and column survive pickling from the worker).
"""

import os
import pickle

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dask_kernels import GCWS, featurize, read_parquet
from dask_kernels.blocks import InputValueError, validate_block
from dask_kernels.io._layers import row_source

from _cli import one_line_error

M = GCWS(n_components=16, seed=0).fit(np.zeros((1, 4)))


def _write(path, X, row_group_size, null=None):
    """X as Parquet columns c0.. with a null (read as NaN) at ``null`` = (row, column)."""
    cols = {}
    for j in range(X.shape[1]):
        mask = np.zeros(len(X), bool)
        if null is not None and null[1] == j:
            mask[null[0]] = True
        cols[f"c{j}"] = pa.array(X[:, j], mask=mask)
    pq.write_table(pa.table(cols), path, row_group_size=row_group_size)
    return path


@pytest.fixture
def dataset(tmp_path):
    """Three files of 50, 30 and 40 rows (row groups of 20); a null at row 17, column 3 of the
    second file: row 67 of the dataset."""
    d = tmp_path / "d"
    os.makedirs(d)
    rng = np.random.default_rng(5)
    for k, n in enumerate((50, 30, 40)):
        _write(str(d / f"part-{k}.parquet"), rng.random((n, 4)), 20, null=(17, 3) if k == 1 else None)
    return str(d)


def test_a_store_names_the_file_and_its_row(dataset, tmp_path):
    X = read_parquet(dataset, block_rows=40)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(InputValueError) as e:
            featurize(X, M, store=str(tmp_path / "s.zarr"), progress=False)
    msg = str(e.value)
    assert f"row 17 of {os.path.join(dataset, 'part-1.parquet')} (row 67 of the input), column 3" in msg, msg
    assert (e.value.row, e.value.column) == (67, 3)


def test_one_file_names_the_file_and_keeps_the_row(tmp_path):
    p = _write(str(tmp_path / "t.parquet"), np.ones((90, 4)), 25, null=(61, 2))
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(InputValueError, match=rf"in row 61 of {p}, column 2;"):
            featurize(read_parquet(p, block_rows=30), M, store=str(tmp_path / "s.zarr"), progress=False)


def test_row_source_places_rows_only_for_the_reader_array_itself(dataset):
    X = read_parquet(dataset, block_rows=40)  # partitions: 40 + 10 | 30 | 40 rows
    part = lambda k: os.path.join(dataset, f"part-{k}.parquet")  # noqa: E731
    assert [row_source(X, r) for r in (0, 45, 49, 50, 79, 80, 119)] == [
        (part(0), 0), (part(0), 45), (part(0), 49), (part(1), 0), (part(1), 29), (part(2), 0), (part(2), 39)]
    assert row_source(X, 120) is None
    assert row_source(X[10:], 5) is None  # a slice's rows are not the reader's: no file named
    assert row_source(np.zeros((3, 4)), 1) is None


def test_a_slice_keeps_its_own_row_numbers(dataset, tmp_path):
    X = read_parquet(dataset, block_rows=40)[10:]
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(InputValueError, match=r"in row 57, column 3;"):
            featurize(X, M, store=str(tmp_path / "s.zarr"), progress=False)


def test_the_error_keeps_its_row_and_column_through_pickling():
    with pytest.raises(InputValueError) as e:
        validate_block(np.array([[1.0, 2.0], [3.0, np.inf]]), row_offset=10)
    back = pickle.loads(pickle.dumps(e.value))
    assert (back.row, back.column, back.value) == (11, 1, np.inf) and str(back) == str(e.value)
    assert "in row 11, column 1" in str(e.value)
    assert "in row 2 of f.parquet, column 1" in str(back.at("row 2 of f.parquet"))
    with pytest.raises(InputValueError) as e:
        validate_block(np.array([[1.0, 5e30]]), max_abs=1e30)
    assert str(pickle.loads(pickle.dumps(e.value)).at("row 0 of f.parquet")).startswith(
        "Input value 5e+30 in row 0 of f.parquet, column 1 exceeds the magnitude bound 1e+30")


def test_the_command_line_names_the_file_and_its_row(dataset, tmp_path, capsys):
    """Through a LocalCluster worker: the error is raised there and pickled back."""
    line = one_line_error(capsys, ["featurize", dataset, str(tmp_path / "c.zarr"), "--method", "gcws",
                                   "--param", "n_components=16", "--workers", "1", "--no-progress"])
    assert f"row 17 of {os.path.join(dataset, 'part-1.parquet')} (row 67 of the input), column 3" in line, line


def test_a_column_name_twice_in_the_schema_is_named(tmp_path, capsys):
    # pyarrow finds such a column by no name: "not readable as Parquet rows (KeyError: 'Column a
    # does not exist in schema')"
    from _cli import one_line_error

    path = str(tmp_path / "twice.parquet")
    pq.write_table(pa.table([pa.array([1.0, 2.0]), pa.array([3.0, 4.0]), pa.array([0, 1])], names=["a", "a", "y"]),
                   path)
    says = "column 'a' appears 2 times in the file's schema; columns are read by name: give each column its own name"
    for columns in (None, ["a"]):
        with pytest.raises(ValueError, match=f"twice.parquet: {says}"):
            read_parquet(path, columns=columns, label="y")
    assert read_parquet(path, columns=["y"]).compute().tolist() == [[0.0], [1.0]]  # the others read as before
    line = one_line_error(capsys, ["featurize", path, str(tmp_path / "s.zarr"), "--label-column", "y", "--no-progress"])
    assert line == f"dask-kernels featurize: error: input {path}: {says}"
