"""What a new user's files do to the command line: each is one line naming the file, no traceback.

Found by running the documented commands on files written elsewhere. Before: an empty ``.npy``
gave numpy's EOFError traceback, a truncated one "mmap length is greater than file size" (no
file named), CSV and Parquet inputs were parsed as svmlight and refused for their header or
Parquet's magic bytes as a "label", ``predict`` started a cluster before finding that a ``.npy``
had the wrong number of columns, ``run --dry-run`` printed paths with spaces unquoted (pasted
back, they split), and a model folder without ``arrays.npz`` gave a bare ``[Errno 2]``.
"""

import json
import os
import shlex

import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier

from dask_kernels import KernelModel, load_model
from dask_kernels.cli import main

from _cli import one_line_error


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("new user")  # a space in every path
    rng = np.random.default_rng(0)
    X = rng.random((60, 4))
    y = (X[:, 0] > 0.5).astype(np.int64)
    np.save(d / "X.npy", X)
    np.save(d / "y.npy", y)
    raw = (d / "X.npy").read_bytes()
    (d / "truncated.npy").write_bytes(raw[: len(raw) // 2])
    (d / "empty.npy").write_bytes(b"")
    for name, shape in (("huge.npy", (2**64, 1)), ("huge_labels.npy", (2**64,))):  # numpy: OverflowError
        h = ("{'descr': '<f8', 'fortran_order': False, 'shape': %r, }" % (shape,)).encode()
        h += b" " * (64 - (10 + len(h) + 1) % 64) + b"\n"
        (d / name).write_bytes(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + b"\0" * 800)
    np.savez(d / "arch.npz", X=X)
    os.rename(d / "arch.npz", d / "archive.npy")
    np.save(d / "one_d.npy", X[:, 0])
    np.save(d / "narrow.npy", X[:, :3])
    np.save(d / "words.npy", np.array(["yes", "no"])[y])
    np.save(d / "objects.npy", np.array(["yes", "no"], dtype=object)[y], allow_pickle=True)
    (d / "rows.csv").write_text("a,b,c,d,label\n" + "\n".join("0.1,0.2,0.3,0.4,1" for _ in range(5)))
    (d / "rows.parquet").write_bytes(b"PAR1\x15\x04" + b"\x00" * 64 + b"PAR1")
    KernelModel(None, SGDClassifier(random_state=0).fit(X, y)).save(str(d / "model.dk"))
    return d


@pytest.mark.parametrize("name,why", [
    ("empty.npy", "not a readable .npy file (empty file)"),
    ("truncated.npy", "not a readable .npy file (mmap length is greater than file size)"),
    ("archive.npy", "not a .npy file (an .npz archive?)"),
    ("one_d.npy", "expected a 2-d array of rows, found shape (60,)"),
    ("huge.npy", "not a readable .npy file (its header gives shape (18446744073709551616, 1), more elements than "
                 "any array can hold; the file is damaged)"),
])
def test_a_damaged_npy_input_is_one_line_naming_it(files, capsys, name, why):
    out = files / "out.npy"
    line = one_line_error(capsys, ["predict", str(files / "model.dk"), str(files / name), "-o", str(out)])
    assert line == f"dask-kernels predict: error: input {files / name}: {why}"
    line = one_line_error(capsys, ["train", str(files / name), "--labels", str(files / "y.npy"), "-o", str(files / "m.dk")])
    assert line == f"dask-kernels train: error: source {files / name}: {why}"
    assert not out.exists() and not (files / "m.dk").exists()


def test_wrong_width_is_found_before_a_cluster_starts(files, capsys, monkeypatch):
    from dask_kernels.cli import predict

    def no_cluster(args):
        raise AssertionError("a cluster was started before the input was checked")

    monkeypatch.setattr(predict, "client_for", no_cluster)
    line = one_line_error(capsys, ["predict", str(files / "model.dk"), str(files / "narrow.npy"), "-o", str(files / "p.npy")])
    assert f"input {files / 'narrow.npy'}: 3 columns, but the model was trained on 4 " in line


@pytest.mark.parametrize("labels,why", [
    ("empty.npy", "not a readable .npy file (empty file)"),
    ("truncated.npy", "not a readable .npy file (mmap length is greater than file size)"),
    ("objects.npy", "holds Python objects (dtype object), which only pickle can load; refused (loading a pickle "
                    "runs code from the file). Save numbers, or class names as fixed-width strings: "
                    "numpy.save(path, y.astype(str))"),
    ("huge_labels.npy", "not a readable .npy file (its header gives shape (18446744073709551616,), more elements "
                        "than any array can hold; the file is damaged)"),
])
def test_damaged_or_pickled_labels_are_one_line_naming_them(files, capsys, labels, why):
    line = one_line_error(capsys, ["train", str(files / "X.npy"), "--labels", str(files / labels), "-o", str(files / "m.dk")])
    assert line == f"dask-kernels train: error: --labels {files / labels}: {why}"


def test_csv_and_parquet_inputs_are_read_or_refused_by_name(files, capsys):
    # CSV and Parquet are read now (tests/test_cli_tables.py); a damaged Parquet file is one line
    name = files / "rows.parquet"
    for argv, flag in ((["predict", str(files / "model.dk"), str(name), "-o", str(files / "p.npy")], "input"),
                       (["train", str(name), "--label-column", "label", "-o", str(files / "m.dk")], "source")):
        line = one_line_error(capsys, argv)
        assert f"{flag} {name}: not a readable Parquet file" in line, line
    out = files / "p.npy"
    assert main(["predict", str(files / "model.dk"), str(files / "rows.csv"), "--label-column", "label",
                 "-o", str(out)]) == 0
    assert np.load(out).shape == (5,)
    out.unlink()


def test_dry_run_quotes_paths_with_spaces(files, capsys):
    job = files / "my job.toml"
    job.write_text('[input]\npath = "X.npy"\nlabels = "y.npy"\n[map]\nmethod = "rff"\n'
                   '[store]\npath = "out store.zarr"\n[training]\noutput = "my model.dk"\n')
    assert main(["run", str(job), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    featurize = shlex.split(lines[0].split(": ", 1)[1])
    assert featurize[:4] == ["dask-kernels", "featurize", str(files / "X.npy"), str(files / "out store.zarr")]
    train = shlex.split(lines[1].split(": ", 1)[1])
    assert train[:5] == ["dask-kernels", "train", str(files / "out store.zarr"), "-o", str(files / "my model.dk")]


def test_a_model_folder_without_its_arrays_is_called_incomplete(files, tmp_path, capsys):
    folder = tmp_path / "copied.dk"
    folder.mkdir()
    (folder / "model.json").write_text((files / "model.dk" / "model.json").read_text())
    json.loads((folder / "model.json").read_text())  # the metadata alone is intact
    with pytest.raises(ValueError, match="incomplete saved model: arrays.npz is missing"):
        load_model(str(folder))
    line = one_line_error(capsys, ["predict", str(folder), str(files / "X.npy"), "-o", str(tmp_path / "p.npy")])
    assert line == f"dask-kernels predict: error: {folder}: incomplete saved model: arrays.npz is missing " \
                   "(copy the whole folder)"


def test_a_regression_target_is_not_trained_as_classes(files, tmp_path, capsys):
    rng = np.random.default_rng(1)
    np.save(tmp_path / "target.npy", rng.normal(150.0, 70.0, 60))  # diabetes-like: a float per row
    line = one_line_error(capsys, ["train", str(files / "X.npy"), "--labels", str(tmp_path / "target.npy"),
                           "-o", str(tmp_path / "m.dk")])
    assert "the labels are continuous (60 distinct values" in line and "--estimator sgd-regressor" in line, line
    assert not (tmp_path / "m.dk").exists()
    assert main(["train", str(files / "X.npy"), "--labels", str(tmp_path / "target.npy"), "-o",
                 str(tmp_path / "m.dk"), "--estimator", "sgd-regressor", "--epochs", "1", "--validation-fraction", "0.1"]) == 0
    assert "r2" in capsys.readouterr().out


def test_a_model_output_in_a_missing_folder_is_refused_before_training(files, tmp_path, capsys):
    out = tmp_path / "models" / "m.dk"
    line = one_line_error(capsys, ["train", str(files / "X.npy"), "--labels", str(files / "y.npy"), "-o", str(out)])
    assert line == f"dask-kernels train: error: {out}: folder {tmp_path / 'models'} does not exist"
    # a job file creates its outputs' folders instead (tests/cli/test_batch_nights.py)


@pytest.mark.parametrize("command,hint", [
    ("featurize", "; the store keeps its finished blocks: re-run the same command to resume"),
    ("info", ""),
])
def test_ctrl_c_is_one_line_and_status_130(files, capsys, monkeypatch, command, hint):
    """Ctrl-C during featurize printed the client's wait as a KeyboardInterrupt traceback."""
    import importlib

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib.import_module(f"dask_kernels.cli.{command}"), "run", interrupted)
    argv = ["featurize", str(files / "X.npy"), str(files / "f.zarr")] if command == "featurize" else \
        ["info", str(files / "f.zarr")]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert err == f"dask-kernels {command}: interrupted{hint}\n"
    with pytest.raises(KeyboardInterrupt):  # --debug shows where it was
        main(["--debug"] + argv)


def test_select_takes_block_rows_like_featurize_and_train(files, capsys):
    """select was the last command with --chunks only (featurize and train say --block-rows)."""
    argv = ["select", str(files / "X.npy"), str(files / "sel.txt"), "--labels", str(files / "y.npy")]
    line = one_line_error(capsys, argv + ["--block-rows", "10"])
    assert line.endswith("expected a .json file name (the spec)")
    with pytest.warns(FutureWarning, match="--chunks is deprecated"):
        assert main(argv + ["--chunks", "10"]) == 1
    assert capsys.readouterr().err.endswith("expected a .json file name (the spec)\n")
    line = one_line_error(capsys, argv + ["--chunks", "10", "--block-rows", "10"])
    assert line.endswith("--chunks is the deprecated name of --block-rows: give --block-rows only")


def test_a_zero_based_svmlight_file_read_one_based_names_the_flag(tmp_path, capsys):
    """scikit-learn's dump_svmlight_file writes 0-based indices by default; read as LIBSVM's
    1-based, the error says how to read it (it named only the index before)."""
    from sklearn.datasets import dump_svmlight_file, load_wine

    X, y = load_wine(return_X_y=True)
    dump_svmlight_file(X, y, str(tmp_path / "wine.svm"))
    assert main(["featurize", str(tmp_path / "wine.svm"), str(tmp_path / "w.zarr"), "--workers", "1",
                 "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "--zero-based" in err and "Traceback" not in err
    assert not (tmp_path / "w.zarr").exists()


def test_nan_in_the_input_names_the_file_as_well_as_row_and_column(tmp_path, capsys):
    X = np.random.default_rng(0).random((50, 4))
    X[7, 2] = np.nan
    np.save(tmp_path / "rows.npy", X)
    assert main(["featurize", str(tmp_path / "rows.npy"), str(tmp_path / "r.zarr"), "--workers", "1",
                 "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert f"input {tmp_path / 'rows.npy'}: " in err and "row 7, column 2" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("damage", ["empty", "truncated"])
def test_read_npy_in_python_names_a_damaged_file(tmp_path, damage):
    """The CLI checks .npy files itself; Python users of ``read_npy`` get the file named too
    (numpy's own errors, EOFError or 'mmap length is greater than file size', name none)."""
    from dask_kernels.io import read_npy

    path = tmp_path / "rows.npy"
    np.save(path, np.ones((100, 8)))
    data = path.read_bytes()
    path.write_bytes(b"" if damage == "empty" else data[: len(data) // 2])
    with pytest.raises(ValueError, match="rows.npy: not a readable .npy file"):
        read_npy(str(path))


def test_a_nan_in_the_input_is_one_line_without_the_workers_log(files):
    # the workers of the command's LocalCluster logged the failed task's traceback ("Compute
    # Failed", then cancelled tasks) above the command's own one-line error
    import subprocess
    import sys

    X = np.load(files / "X.npy")
    X[40, 2] = np.nan
    np.save(files / "nan.npy", X)
    argv = [sys.executable, "-m", "dask_kernels.cli", "featurize", str(files / "nan.npy"), str(files / "nan.zarr"),
            "--workers", "2", "--block-rows", "20", "--no-progress"]
    env = {k: v for k, v in os.environ.items() if k != "DASK_KERNELS_DEBUG"}
    run = subprocess.run(argv, capture_output=True, text=True, timeout=240, env=env)
    assert run.returncode == 1
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert lines == [f"dask-kernels featurize: error: input {files / 'nan.npy'}: Input contains NaN or infinity "
                     "(nan) in row 40, column 2; clean or impute the data first."], run.stderr
