"""The command line validates its arguments before a cluster starts and reports user errors as
one line naming its own flags, without a traceback, with a non-zero exit status.

Before: ``--workers 0`` hung forever, ``--scheduler ""`` silently started a local cluster, a
refused scheduler took 30 s, a bad ``--param`` value gave a JSONDecodeError traceback, and
``train -o`` renamed and deleted an existing directory or file after training.
"""

import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from dask_kernels import load_model
from dask_kernels.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    X = rng.random((300, 5))
    np.save(d / "X.npy", X)
    np.save(d / "y.npy", (X[:, 0] > 0.5).astype(np.int64))
    return d


def _one_line(err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _cli(args, timeout=120):
    """Run the CLI in a subprocess (a hang is a failure, not a stuck test session)."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dask_kernels.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=timeout)
    return proc, time.perf_counter() - t


@pytest.mark.parametrize("flag,value", [("--workers", "0"), ("--chunks", "0"), ("--blocksize", "0"),
                                        ("--threads-per-worker", "0"), ("--scheduler", "")])
def test_featurize_refuses_bad_arguments_before_starting_a_cluster(files, tmp_path, flag, value):
    out = tmp_path / "out.zarr"
    proc, _ = _cli(["featurize", str(files / "X.npy"), str(out), flag, value])  # a hang fails after 120 s
    assert proc.returncode == 2
    line = _one_line(proc.stderr)
    assert flag in line, line
    assert not out.exists()


@pytest.mark.parametrize("value", ["not an address", "tcp://host:99999", "ftp://host:21", "host"])
def test_malformed_scheduler_addresses_are_refused(files, tmp_path, capsys, value):
    with pytest.raises(SystemExit) as info:
        main(["featurize", str(files / "X.npy"), str(tmp_path / "o.zarr"), "--scheduler", value])
    assert info.value.code == 2
    assert "--scheduler" in _one_line(capsys.readouterr().err)


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_refused_scheduler_fails_within_seconds(files, tmp_path, capsys):
    import distributed  # noqa: F401  (imported before timing: the connection is measured)

    address = f"tcp://127.0.0.1:{_closed_port()}"
    t = time.perf_counter()
    rc = main(["featurize", str(files / "X.npy"), str(tmp_path / "o.zarr"), "--scheduler", address])
    seconds = time.perf_counter() - t
    assert rc == 1 and seconds < 10, seconds
    line = _one_line(capsys.readouterr().err)
    assert "--scheduler" in line and address in line and "cannot connect" in line, line


def test_bad_param_values_are_one_line(files, tmp_path, capsys):
    base = ["train", str(files / "X.npy"), "--labels", str(files / "y.npy"), "-o", str(tmp_path / "m.dk")]
    for extra, words in [(["--method", "gcws", "--param", "bits=["], ["--param", "bits"]),
                         (["--method", "rff", "--param", "gamma=abc"], ["--param", "gamma"]),
                         (["--method", "gcws", "--param", "nope=1"], ["--param nope"]),
                         (["--method", "gcws", "--param", "bits"], ["--param", "NAME=VALUE"]),
                         (["--method", "nosuch"], ["--method", "nosuch"])]:
        assert main(base + extra) == 1, extra
        line = _one_line(capsys.readouterr().err)
        assert all(w in line for w in words), (extra, line)
    assert not (tmp_path / "m.dk").exists()


def test_missing_inputs_are_one_line(files, tmp_path, capsys):
    cases = [["train", str(tmp_path / "nothere.npy"), "--labels", str(files / "y.npy"), "-o", str(tmp_path / "m")],
             ["train", str(files / "X.npy"), "-o", str(tmp_path / "m")],  # .npy rows need --labels
             ["train", str(files / "X.npy"), "--labels", str(tmp_path / "no.npy"), "-o", str(tmp_path / "m")],
             ["featurize", str(files / "X.npy"), str(tmp_path / "o.zarr"), "--spec", str(tmp_path / "no.json")]]
    for argv in cases:
        assert main(argv) == 1, argv
        line = _one_line(capsys.readouterr().err)
        assert "error:" in line and ("no such file" in line or "--labels" in line), line
    (tmp_path / "bad.json").write_text("{oops")
    assert main(cases[-1][:-1] + [str(tmp_path / "bad.json")]) == 1
    assert "--spec" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_train_output_that_is_not_a_model_survives(files, tmp_path, capsys, kind):
    out = tmp_path / "results"
    if kind == "folder":
        out.mkdir()
        (out / "thesis.tex").write_text("years of work")
    else:
        out.write_text("years of work")
    for extra in ([], ["--overwrite"]):
        rc = main(["train", str(files / "X.npy"), "--labels", str(files / "y.npy"), "--epochs", "1",
                   "-o", str(out)] + extra)
        assert rc == 1
        line = _one_line(capsys.readouterr().err)
        assert str(out) in line and "refusing" in line, line
        assert (out / "thesis.tex" if kind == "folder" else out).read_text() == "years of work"
    assert sorted(os.listdir(tmp_path)) == ["results"]  # nothing renamed or left behind


def test_train_names_its_own_flags(files, tmp_path, capsys):
    argv = ["train", str(files / "X.npy"), "--labels", str(files / "y.npy"), "--epochs", "1",
            "--block-rows", "100", "-o", str(tmp_path / "m.dk")]
    assert main(argv) == 0
    first = load_model(tmp_path / "m.dk").estimator.coef_.copy()
    capsys.readouterr()
    assert main(argv + ["--seed", "3"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "--overwrite" in line and "overwrite=True" not in line, line
    np.testing.assert_array_equal(load_model(tmp_path / "m.dk").estimator.coef_, first)
    assert main(argv + ["--seed", "3", "--overwrite"]) == 0
    # a checkpoint of another run: the message points at --no-resume, not resume=False
    ck = str(tmp_path / "run.ckpt")
    assert main(argv + ["--overwrite", "--checkpoint", ck]) == 0
    capsys.readouterr()
    assert main(argv + ["--overwrite", "--checkpoint", ck, "--seed", "5"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "--no-resume" in line and "resume=False" not in line, line
    assert main(argv + ["--overwrite", "--checkpoint", ck, "--seed", "5", "--no-resume"]) == 0
    capsys.readouterr()  # (its progress on stderr)
    # a user file given as --checkpoint is refused, not overwritten
    (tmp_path / "notes.txt").write_text("mine")
    assert main(argv + ["--overwrite", "--checkpoint", str(tmp_path / "notes.txt"), "--no-resume"]) == 1
    assert "notes.txt" in _one_line(capsys.readouterr().err)
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("flag,value", [("--epochs", "0"), ("--block-rows", "0"), ("--checkpoint-every", "0"),
                                        ("--validation", "1.5"), ("--eta0", "-1"), ("--alpha", "nan"),
                                        ("--n-components", "0")])
def test_train_refuses_bad_numbers(files, tmp_path, capsys, flag, value):
    with pytest.raises(SystemExit) as info:
        main(["train", str(files / "X.npy"), "--labels", str(files / "y.npy"), "-o", str(tmp_path / "m"),
              flag, value])
    assert info.value.code == 2
    assert flag in _one_line(capsys.readouterr().err)


def test_debug_shows_the_traceback(files, tmp_path):
    with pytest.raises(Exception, match="bits"):
        main(["--debug", "train", str(files / "X.npy"), "--labels", str(files / "y.npy"),
              "--method", "gcws", "--param", "bits=99", "-o", str(tmp_path / "m")])


def test_a_nan_in_the_input_names_the_file_row_and_column_in_every_command(files, tmp_path, capsys):
    # train on raw rows passed the NaN to the learner's default eta0 ("eta0 ... Got nan") and then
    # to scikit-learn; train with a map, score and predict named the row but not the file
    X = np.load(files / "X.npy")
    X[123, 2] = np.nan
    bad = tmp_path / "bad.npy"
    np.save(bad, X)
    y, model = str(files / "y.npy"), str(tmp_path / "m.dk")
    assert main(["train", str(files / "X.npy"), "--labels", y, "--epochs", "1", "-o", model]) == 0
    capsys.readouterr()
    for argv in (["train", str(bad), "--labels", y, "--epochs", "1", "-o", str(tmp_path / "raw.dk")],
                 ["train", str(bad), "--labels", y, "--method", "rff", "--epochs", "1", "-o", str(tmp_path / "r.dk")],
                 ["score", model, str(bad), "--labels", y],
                 ["predict", model, str(bad), "-o", str(tmp_path / "p.npy")]):
        assert main(argv) == 1, argv
        line = _one_line(capsys.readouterr().err)
        assert f"input {bad}: " in line and "(nan) in row 123, column 2" in line, line
    assert not (tmp_path / "p.npy").exists() and not (tmp_path / "raw.dk").exists()
