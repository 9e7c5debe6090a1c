"""``dask-kernels run job.toml``: a whole batch job from one file, checked before a cluster
starts, with messages naming the job file's keys."""

import os
import textwrap

import numpy as np
import pytest

from dask_kernels import load_model, open_store
from dask_kernels.cli import main
from dask_kernels.cli.run import load_job, steps

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

JOB = """
[input]
path = "X.npy"
labels = "y.npy"

[map]
method = "gcws"
params = { n_components = 32, bits = 8 }

[store]
path = "out/features.zarr"
block_rows = 100
progress = false

[training]
output = "out/model.dk"
epochs = 2

[[outputs]]
input = "X.npy"
path = "out/pred.npy"
"""


@pytest.fixture
def job_dir(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((300, 5))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", (X[:, 0] > 0.5).astype(np.int64))
    (tmp_path / "out").mkdir()
    return tmp_path


def _write(d, text, name="job.toml"):
    (d / name).write_text(textwrap.dedent(text))
    return str(d / name)


def test_a_job_file_runs_featurize_train_predict_with_paths_relative_to_it(job_dir, tmp_path_factory, capsys,
                                                                          monkeypatch, local_cluster):
    job = _write(job_dir, JOB)
    elsewhere = tmp_path_factory.mktemp("cwd")  # cron runs jobs from anywhere
    monkeypatch.chdir(elsewhere)
    assert main(["run", job, "--scheduler", local_cluster]) == 0
    stdout = capsys.readouterr().out
    store = open_store(str(job_dir / "out" / "features.zarr"))
    assert store.complete and store.n_blocks == 3 and store.labels is not None
    model = load_model(job_dir / "out" / "model.dk")
    X = np.load(job_dir / "X.npy")
    assert np.array_equal(np.load(job_dir / "out" / "pred.npy"), model.predict(X))
    assert [ln.split(":")[0] for ln in stdout.splitlines() if ln.startswith("==")] == [
        "== [input]/[map]/[store]", "== [training]", "== [[outputs]] #1"]
    assert not os.listdir(elsewhere)


def test_dry_run_prints_the_steps_as_command_lines(job_dir, capsys):
    job = _write(job_dir, JOB)
    assert main(["run", job, "--dry-run", "--scheduler", "tcp://10.0.0.1:8786"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3
    assert out[0].endswith(f"featurize {job_dir}/X.npy {job_dir}/out/features.zarr --labels {job_dir}/y.npy "
                           "--method gcws --param n_components=32 --param bits=8 --block-rows 100 --no-progress "
                           "--scheduler tcp://10.0.0.1:8786")
    assert "train" in out[1] and "--epochs 2" in out[1] and out[1].endswith("--scheduler tcp://10.0.0.1:8786")
    assert not (job_dir / "out" / "features.zarr").exists()


@pytest.mark.parametrize("edit,expected", [
    (("block_rows = 100", "blck_rows = 100"),
     "[store] blck_rows: unknown key; known: append, block_rows, chunks, overwrite, path, progress"),
    (("block_rows = 100", "block_rows = 0"), "[store] block_rows: must be >= 1, got 0"),
    (("block_rows = 100", 'block_rows = "many"'), "[store] block_rows: expected an integer, got 'many'"),
    (("epochs = 2", "epochs = 2\nestimator = \"svm\""), "[training] estimator: invalid choice: 'svm'"),
    (("epochs = 2", "epochs = true"), "[training] epochs: expected an integer, got True"),
    (('method = "gcws"', 'method = "nope"'), "[map] method 'nope' is unknown"),
    (("bits = 8", "bits = 99"), "[map] params: The 'bits' parameter"),
    (('path = "out/features.zarr"\n', ""), "[store] path: missing"),
    (("[training]", "[trainng]"), "[trainng]: unknown section"),
    (('input = "X.npy"\npath = "out/pred.npy"', 'input = "X.npy"'), "[[outputs]] #1 path: missing"),
    (("progress = false", "progress = 0"), "[store] progress: expected true or false, got 0"),
    (("epochs = 2", 'epochs = 2\nloss = "squared"'), "[training] loss: invalid choice: 'squared'"),
    # the steps' outputs, checked before the first step, not when the night reaches them
    (('path = "out/pred.npy"', 'path = "out/pred.txt"'), "out/pred.txt: unknown output format"),
    (("epochs = 2", 'epochs = 2\nvalidation = 0\nmetric = "accuracy"'),
     "[training] metric accuracy: the schedule decides on held-out rows, and [training] validation 0 holds none"),
    (('path = "out/pred.npy"', 'path = "out/features.zarr"'), "out/features.zarr is also [store] path"),
    (('output = "out/model.dk"', 'output = "out/features.zarr/m.dk"'), "[training] output: "),
    (('path = "out/pred.npy"', 'path = "X.npy"'), "[[outputs]] #1 path: "),
    (('path = "out/pred.npy"\n', 'path = "out/pred.npy"\n[[outputs]]\ninput = "X.npy"\npath = "out/pred.npy"\n'
      'proba = true\n'), "[[outputs]] #2 path: "),
])
def test_job_file_errors_name_the_key_before_a_cluster_starts(job_dir, capsys, edit, expected):
    job = _write(job_dir, JOB.replace(*edit))
    assert main(["run", job]) == 1  # no cluster flags: a LocalCluster would start if the file passed
    out, err = capsys.readouterr()
    assert not out  # no step started
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert expected in lines[0], lines[0]
    assert not (job_dir / "out" / "features.zarr").exists()


@pytest.mark.parametrize("training, gives_proba", [
    ("", True), ('loss = "log_loss"', True), ('estimator = "sgd"', True), ('estimator = "sgd-hinge"', False),
    ('loss = "hinge"', False), ('estimator = "perceptron"', False)])
def test_probabilities_are_asked_only_of_a_training_that_gives_them(job_dir, capsys, training, gives_proba):
    job = _write(job_dir, JOB.replace("epochs = 2", "epochs = 2\n" + training).replace(
        'path = "out/pred.npy"', 'path = "out/pred.npy"\nproba = true'))
    assert main(["run", job, "--dry-run", "--scheduler", "tcp://10.0.0.1:8786"]) == (0 if gives_proba else 1)
    err = capsys.readouterr().err
    assert ("#1 proba: the model [training] trains gives no probabilities (a hinge loss or a perceptron); train "
            'with the default loss (drop loss = "hinge") or estimator = "sgd", or drop proba' in err) != gives_proba


def test_probabilities_are_not_asked_of_a_regressor(job_dir, capsys):
    # refused before any step (it failed after featurizing and training), with advice for a
    # regression target: not another classifier
    job = _write(job_dir, JOB.replace("epochs = 2", 'epochs = 2\nestimator = "sgd-regressor"').replace(
        'path = "out/pred.npy"', 'path = "out/pred.npy"\nproba = true'))
    assert main(["run", job, "--dry-run", "--scheduler", "tcp://10.0.0.1:8786"]) == 1
    out, err = capsys.readouterr()
    assert "== " not in out  # no step printed
    assert ("[[outputs]] #1 proba: the model [training] trains gives no probabilities (a regressor predicts values, "
            "not class probabilities); drop proba") in err, err
    assert "naive Bayes" not in err and "softmax" not in err


def test_invalid_toml_names_the_file(tmp_path, capsys):
    job = _write(tmp_path, "[input\npath = 1")
    assert main(["run", job]) == 1
    assert f"job {job}: not valid TOML" in capsys.readouterr().err


def test_a_job_file_not_utf8_or_not_a_file_names_the_job(tmp_path, capsys):
    """Before: "error: 'utf-8' codec can't decode byte 0xff in position 17" and "error: [Errno 21]
    Is a directory: 'jobs'", naming no job file."""
    job = tmp_path / "latin1.toml"
    job.write_bytes(b'[input]\npath = "x\xff.npy"\n')
    assert main(["run", str(job)]) == 1
    err = capsys.readouterr().err
    assert f"job {job}: not valid TOML: line 2 holds byte b'\\xff', not UTF-8 text" in err, err
    assert len(err.strip().splitlines()) == 1
    assert main(["run", str(tmp_path)]) == 1
    assert f"job {tmp_path}: not readable (Is a directory)" in capsys.readouterr().err


def test_the_deploy_example_job_file_is_valid():
    job = load_job(os.path.join(ROOT, "deploy", "job.toml"))
    names = [argv[0] for _, argv, _ in steps(job, ["--scheduler-file", "/run/dask/scheduler.json"])]
    assert names == ["featurize", "train", "predict"]


def test_errors_of_a_step_advise_the_job_file_keys(job_dir, capsys):
    # a job is fixed in its file: "pass --overwrite" was advice for the command line
    job = _write(job_dir, JOB)
    assert main(["run", job]) == 0
    capsys.readouterr()
    assert main(["run", job]) == 1  # the model is there: refused before the store is resumed
    out, err = capsys.readouterr()
    assert "== [" not in out
    assert "[training]: " in err and "already holds a saved model: set overwrite = true under [training] to " \
        "replace it" in err, err
    assert "--overwrite" not in err
    job = _write(job_dir, JOB.replace("block_rows = 100", "block_rows = 50").replace("epochs = 2",
                                                                                  "epochs = 2\noverwrite = true"))
    assert main(["run", job]) == 1
    err = capsys.readouterr().err
    assert "[input]/[map]/[store]: " in err and "holds features of a different job" in err, err
    assert "Set overwrite = true under [store] to replace it" in err and "--overwrite" not in err, err


def test_a_job_file_nested_too_deep_is_invalid_toml_not_a_traceback(tmp_path, capsys):
    job = _write(tmp_path, JOB.replace("params = { n_components = 32, bits = 8 }",
                                       "params = { center = " + "[" * 3000 + "]" * 3000 + " }"))
    assert main(["run", job, "--dry-run"]) == 1
    assert f"job {job}: not valid TOML (arrays or tables nested too deep" in capsys.readouterr().err


def test_a_spec_file_nested_too_deep_leaves_the_warm_plugin_out_not_a_traceback(tmp_path):
    import argparse

    from dask_kernels.cli._cluster import _command_method

    spec = tmp_path / "spec.json"
    spec.write_text('{"method": "gcws", "params": ' + "[" * 50_000 + "]" * 50_000 + "}")
    assert _command_method(argparse.Namespace(spec=str(spec), method=None)) is None  # featurize says what is wrong


@pytest.mark.parametrize("value, kind", [("1979-05-27", "date"), ("1979-05-27T07:32:00Z", "datetime"),
                                         ("[0.5, 07:32:00]", "time")])
def test_a_toml_date_or_time_as_a_map_parameter_is_refused_naming_the_key(tmp_path, capsys, value, kind):
    job = _write(tmp_path, JOB.replace("bits = 8 }", f"bits = 8, seed = {value} }}"))
    assert main(["run", job, "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert f"[map] params seed: a TOML {kind} (" in err and "Traceback" not in err, err


def test_outputs_of_someone_else_are_refused_before_the_first_step(job_dir, capsys):
    # a file of the user's at an output path (or a model without overwrite) ended the night after
    # featurizing and training, hours in
    (job_dir / "out" / "pred.npy").write_text("mine")
    job = _write(job_dir, JOB)
    assert main(["run", job]) == 1
    out, err = capsys.readouterr()
    assert "== [" not in out and "[[outputs]] #1: " in err and "refusing to replace it" in err, err
    assert (job_dir / "out" / "pred.npy").read_text() == "mine" and not (job_dir / "out" / "features.zarr").exists()
    for name, status in (("p.npy", 0), ("p.txt", 1)):  # in a folder the job makes: the format is checked too
        job = _write(job_dir, JOB.replace('path = "out/pred.npy"', f'path = "new/{name}"'))
        assert main(["run", job, "--dry-run"]) == status
        assert not (job_dir / "new").exists()
    assert "new/p.txt: unknown output format" in capsys.readouterr().err
