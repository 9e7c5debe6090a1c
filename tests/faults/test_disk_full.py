"""A write that finds no room (a full disk, a quota, a file size limit) stops a command with one
line naming what it was writing, and leaves no partial output. The limit is real: each command
runs in a child process under ``RLIMIT_FSIZE`` (Python ignores SIGXFSZ, so writes fail with
EFBIG, or NumPy's short write)."""

import os
import resource
import subprocess
import sys

import numpy as np
import pytest

from dask_kernels.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMIT = 64 * 1024  # bytes: every output below is larger


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("full")
    rng = np.random.default_rng(0)
    X = rng.random((20000, 6))
    np.save(d / "X.npy", X)
    np.save(d / "y.npy", (X[:, 0] > 0.5).astype(np.int64))
    # the same commands once without a limit: Numba's cache is written now, not under the limit
    assert main(["featurize", str(d / "X.npy"), str(d / "f.zarr"), "--labels", str(d / "y.npy"),
                 "--param", "n_components=64", "--no-progress"]) == 0
    assert main(["train", str(d / "f.zarr"), "-o", str(d / "m.dk"), "--epochs", "1", "--no-progress"]) == 0
    assert main(["predict", str(d / "m.dk"), str(d / "X.npy"), "-o", str(d / "p.npy")]) == 0
    return d


def _limited(argv, cwd):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))

    return subprocess.run([sys.executable, "-m", "dask_kernels.cli", *argv], cwd=cwd, preexec_fn=limit,
                          env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True, text=True, timeout=300)


def _one_line(r):
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 1 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def test_npy_predictions_short_write_names_the_output(trained):
    out = trained / "new.npy"
    line = _one_line(_limited(["predict", str(trained / "m.dk"), str(trained / "X.npy"), "-o", str(out)], trained))
    assert f"-o {out}: the predictions were not written in full" in line and "disk full" in line, line
    assert not out.exists() and not [n for n in os.listdir(trained) if n.startswith(".new.npy")]


@pytest.mark.parametrize("command", ["featurize", "train", "predict-csv", "run"])
def test_no_room_names_what_was_written(trained, command):
    if command == "featurize":
        out = trained / "g.zarr"
        argv = ["featurize", str(trained / "X.npy"), str(out), "--param", "n_components=64", "--no-progress"]
    elif command == "train":
        out = trained / "m2.dk"
        argv = ["train", str(trained / "f.zarr"), "-o", str(out), "--epochs", "1", "--no-progress"]
    elif command == "run":  # a job's step: the same line after the step's name
        out = trained / "h.zarr"
        (trained / "job.toml").write_text('[input]\npath = "X.npy"\n[map]\nmethod = "gcws"\n'
                                          'params = { n_components = 64 }\n[store]\npath = "h.zarr"\n')
        argv = ["run", str(trained / "job.toml")]
    else:
        out = trained / "new.csv"
        argv = ["predict", str(trained / "m.dk"), str(trained / "X.npy"), "-o", str(out)]
    line = _one_line(_limited(argv, trained))
    assert f"writing {out}: [Errno 27]" in line and "no room left" in line, line
    if command == "run":
        assert line.startswith("dask-kernels run: error: [input]/[map]/[store]: writing"), line
    if command not in ("featurize", "run"):  # a store keeps its finished blocks; a model or an output: nothing
        assert not out.exists()
