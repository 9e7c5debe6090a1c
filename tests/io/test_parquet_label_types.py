"""A Parquet label column is read in its own type, and a null label is refused naming its row.

Before, the label column went through float64 (Arrow's ``to_tensor(null_to_nan=True)``) and was
cast back: int64 labels 2**53 and 2**53 + 1 became one class, uint64 2**64 - 1 became 0, a null
in an integer column was stored as -2**63 (exit 0), and a bool column raised pyarrow's
``ArrowTypeError`` in a worker.
"""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _cli import one_line_error
from dask_kernels import open_store, read_parquet
from dask_kernels.cli import main

N = 30


def _write(path, y, row_group_size=10):
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"a": rng.random(N), "b": rng.random(N), "y": y}), path, row_group_size=row_group_size)
    return str(path)


@pytest.mark.parametrize("values, arrow_type", [
    ([0, 2**53, 2**53 + 1], pa.int64()),
    ([0, 2**64 - 1, 2**63 + 1], pa.uint64()),
    ([False, True, True], pa.bool_()),
])
def test_integer_and_bool_labels_are_read_exactly(tmp_path, values, arrow_type):
    y = pa.array([values[i % 3] for i in range(N)], arrow_type)
    path = _write(tmp_path / "t.parquet", y)
    got = read_parquet(path, label="y", block_rows=10)[1].compute()
    assert got.dtype == arrow_type.to_pandas_dtype() and got.tolist() == y.to_pylist()
    assert main(["featurize", path, str(tmp_path / "s.zarr"), "--label-column", "y", "--method", "gcws",
                 "--param", "n_components=8", "--no-progress"]) == 0
    assert open_store(str(tmp_path / "s.zarr")).labels.compute().tolist() == y.to_pylist()


@pytest.mark.parametrize("arrow_type", [pa.int64(), pa.float64(), pa.bool_(), pa.string()])
def test_a_null_label_is_refused_naming_the_file_and_its_row(tmp_path, capsys, arrow_type):
    values = {pa.int64(): 1, pa.float64(): 1.0, pa.bool_(): True, pa.string(): "x"}[arrow_type]
    path = _write(tmp_path / "t.parquet", pa.array([None if i == 17 else values for i in range(N)], arrow_type))
    with pytest.raises(ValueError, match=r"t\.parquet: row 17 \(row group 1\): label column 'y' is null"):
        read_parquet(path, label="y", block_rows=10)[1].compute()
    message = one_line_error(capsys, ["featurize", path, str(tmp_path / "s.zarr"), "--label-column", "y",
                                      "--method", "gcws", "--param", "n_components=8", "--no-progress"])
    assert "t.parquet: row 17 (row group 1): label column 'y' is null" in message


def test_a_too_long_class_name_is_refused_before_its_rows_are_decoded(tmp_path, capsys):
    """40 rows repeating one 50 MiB class name (3 KB as zstd Parquet) made featurize allocate
    2 GB decoding them before the names' length was checked; read dictionary-encoded, each
    distinct name is held once and its length checked first, naming the file and the row.
    (Smaller here: 1 MiB names, refused before with a message naming no file.)"""
    big = "x" * (1 << 20)
    y = pa.array(["a"] * 5 + [big] * 25, pa.large_string())
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"a": np.arange(30.0), "y": y}), path, compression="zstd", row_group_size=10)
    pattern = (r"t\.parquet: row 5 \(row group 0\): label column 'y' holds a class name of 1,048,576 characters, "
               r"more than MAX_CLASS_CHARS = 256")
    with pytest.raises(ValueError, match=pattern):
        read_parquet(path, label="y")[1].compute()
    message = one_line_error(capsys, ["featurize", path, str(tmp_path / "s.zarr"), "--label-column", "y",
                                      "--method", "gcws", "--param", "n_components=8", "--no-progress"])
    assert "t.parquet: row 5 (row group 0): label column 'y' holds a class name of 1,048,576 characters" in message
    # names of at most MAX_CLASS_CHARS characters are read as before, a dictionary column too
    ok = pa.array(["b" * 256, "a"] * 15, pa.large_string())
    pq.write_table(pa.table({"a": np.arange(30.0), "y": ok}), path, row_group_size=10)
    assert read_parquet(path, label="y")[1].compute().tolist() == ok.to_pylist()
    pq.write_table(pa.table({"a": np.arange(30.0), "y": ok.dictionary_encode()}), path, row_group_size=10)
    assert read_parquet(path, label="y")[1].compute().tolist() == ok.to_pylist()
