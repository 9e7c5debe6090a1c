"""Small local inputs are processed in the command's own process (threads), without starting a
LocalCluster; ``--workers`` or a scheduler still gets a cluster. Before, every featurize, predict
and score started a 2-process LocalCluster, seconds of start-up for a few thousand rows."""

import argparse

import distributed
import numpy as np
import pytest

from dask_kernels.cli import _cluster, main


@pytest.fixture
def no_local_cluster(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a LocalCluster was started")

    monkeypatch.setattr(distributed, "LocalCluster", refuse)


@pytest.fixture
def rows(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((2000, 8))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", (X[:, 0] > 0.5).astype(np.int64))
    return tmp_path


def test_featurize_train_predict_score_run_in_process(rows, no_local_cluster, capsys):
    X, y = str(rows / "X.npy"), str(rows / "y.npy")
    assert main(["featurize", X, str(rows / "s.zarr"), "--labels", y, "--method", "gcws",
                 "--param", "n_components=16", "--no-progress"]) == 0
    assert main(["train", str(rows / "s.zarr"), "-o", str(rows / "m.dk"), "--epochs", "1"]) == 0
    assert main(["predict", str(rows / "m.dk"), X, "-o", str(rows / "p.npy")]) == 0
    assert main(["score", str(rows / "m.dk"), X, "--labels", y]) == 0
    assert np.load(rows / "p.npy").shape == (2000,)
    assert "accuracy" in capsys.readouterr().out


def test_workers_or_a_large_input_start_a_cluster(rows, monkeypatch):
    args = argparse.Namespace(scheduler=None, scheduler_file=None, workers=None, input=str(rows / "X.npy"))
    assert _cluster.runs_in_process(args)
    assert not _cluster.runs_in_process(argparse.Namespace(**{**vars(args), "workers": 2}))
    assert not _cluster.runs_in_process(argparse.Namespace(**{**vars(args), "scheduler": "tcp://127.0.0.1:1"}))
    assert not _cluster.runs_in_process(argparse.Namespace(**{**vars(args), "input": "s3://bucket/x.npy"}))
    monkeypatch.setattr(_cluster, "IN_PROCESS_BYTES", (rows / "X.npy").stat().st_size - 1)
    assert not _cluster.runs_in_process(args)


def test_parquet_predictions_carry_their_input_row_numbers(rows, tmp_path):
    from sklearn.datasets import dump_svmlight_file
    import pandas as pd

    X = np.load(rows / "X.npy")
    dump_svmlight_file(X, np.load(rows / "y.npy"), str(rows / "X.svm"), zero_based=False)
    assert main(["train", str(rows / "X.npy"), "--labels", str(rows / "y.npy"), "--method", "gcws",
                 "--param", "n_components=16", "--epochs", "1", "-o", str(rows / "m.dk")]) == 0
    out = str(rows / "p.parquet")
    # several partitions (a small --blocksize): the row numbers still run over the whole input
    assert main(["predict", str(rows / "m.dk"), str(rows / "X.svm"), "--blocksize", "20000", "-o", out]) == 0
    frame = pd.read_parquet(out)
    assert list(frame.columns) == ["row", "prediction"]
    assert frame["row"].tolist() == list(range(X.shape[0]))
    assert main(["predict", str(rows / "m.dk"), str(rows / "X.npy"), "-o", str(rows / "p.npy")]) == 0
    assert (np.load(rows / "p.npy") == frame["prediction"].to_numpy()).all()


def test_the_command_line_logs_to_the_stderr_of_each_call(rows, capsys):
    import logging

    for _ in range(2):  # each call's own stderr, though the handler was made by the first
        assert main(["info", str(rows / "X.npy")]) == 1
        capsys.readouterr()
        logging.getLogger("dask_kernels.cli").info("hello")
        assert capsys.readouterr().err == "dask-kernels info: hello\n"


#: Runs commands in one fresh interpreter; after each, prints the heavy modules it has imported.
_IMPORTED_AFTER = r"""
import json, sys
from dask_kernels.cli import main
WATCH = ("distributed", "dask_kernels.learn.incremental", "sklearn", "scipy.stats", "pandas", "dask_kernels.maps.rff",
         "dask_kernels.maps.fastfood", "click")
for argv in json.loads(sys.argv[1]):
    status = main(argv)
    print(json.dumps([argv[0], status, [m for m in WATCH if m in sys.modules]]), flush=True)
"""


def _imported_after(folder, commands):
    import json
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _IMPORTED_AFTER, json.dumps(commands)], cwd=folder,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("[")]


@pytest.mark.slow
def test_small_commands_import_neither_distributed_nor_what_they_do_not_use(tmp_path):
    """On 10,000 rows each command runs in its own process without importing distributed (so no
    cluster can start: importing it alone took 0.5-1 s of a 2 s command); predict, score and
    info do not import the training loop either. No command of a GCWS map and the default
    SoftmaxSGD imports scikit-learn at all: any of its modules imports ``sklearn.base``, and with
    it SciPy's statistics and pandas, about 1.1 CPU-seconds, half of each command before the
    maps, SoftmaxSGD and KernelModel implemented its estimator API themselves
    (:mod:`dask_kernels._estimator`). Nor do they import the other maps' modules (Fourier maps
    here): a GCWS spec imports GCWS's alone. Nor click: only ``dask kernels`` (dask's own CLI)
    needs it."""
    rng = np.random.default_rng(0)
    X = rng.random((10_000, 64), dtype=np.float32)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", (X[:, 0] + X[:, 1] > 1).astype(np.int64))
    made = _imported_after(tmp_path, [
        ["featurize", "X.npy", "s.zarr", "--labels", "y.npy", "--method", "gcws", "--param", "n_components=64",
         "--no-progress"],
        ["train", "s.zarr", "-o", "m.dk", "--epochs", "1"],
    ])
    assert [(name, status, [m for m in imported if m != "dask_kernels.learn.incremental"])
            for name, status, imported in made] == [("featurize", 0, []), ("train", 0, [])]
    used = _imported_after(tmp_path, [["predict", "m.dk", "X.npy", "-o", "p.npy"],
                                      ["score", "m.dk", "X.npy", "--labels", "y.npy"],
                                      ["info", "m.dk"], ["info", "s.zarr"]])
    assert used == [["predict", 0, []], ["score", 0, []], ["info", 0, []], ["info", 0, []]]


def test_dask_kernels_runs_under_dask_s_own_cli():
    # the dask_cli entry point is built on first access (click is not imported by dask-kernels)
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "dask", "kernels", "--version"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("dask-kernels ")


def test_info_of_a_model_imports_no_dask_array(tmp_path, monkeypatch):
    """Loading a saved model reads its spec and arrays: neither the input readers' dask arrays nor
    the pipeline's featurize (dask.array costs 0.2-0.5 s of a command) are imported for it."""
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    X = np.random.default_rng(0).random((500, 8), dtype=np.float32)
    np.save("X.npy", X)
    np.save("y.npy", (X[:, 0] > 0.5).astype(np.int64))
    assert main(["featurize", "X.npy", "s.zarr", "--labels", "y.npy", "--method", "gcws", "--param",
                 "n_components=16", "--no-progress"]) == 0
    assert main(["train", "s.zarr", "-o", "m.dk", "--epochs", "1"]) == 0
    code = "import sys\nfrom dask_kernels.cli import main\nassert main(['info', 'm.dk']) == 0\nprint('dask.array' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-1] == "False"
