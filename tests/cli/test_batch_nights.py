"""A job file that runs every night: its own prediction outputs are replaced by its next run,
nothing of anyone else's is; ``predict --overwrite`` replaces only what ``predict`` wrote; ``--dry-run``
creates nothing.

Before: the second night of a job with ``[[outputs]]`` exited 1 ("already exists; refusing to
replace it"), and ``run --dry-run`` failed when an output folder did not exist yet.
"""

import os
import textwrap

import numpy as np
import pyarrow.parquet as pq
import pytest
from sklearn.datasets import dump_svmlight_file

from _cli import one_line_error
from dask_kernels import load_model, open_store
from dask_kernels.cli import main

#: the shape of deploy/job.toml: a fixed input path refreshed daily, appended to the store, the
#: model retrained and replaced, predictions of the day written to one fixed path
NIGHTLY = """
[input]
path = "data/today.svm"
n_features = 6
zero_based = true

[map]
method = "gcws"
params = { n_components = 32, bits = 4 }

[store]
path = "features/train.zarr"
block_rows = 100
append = true
progress = false

[training]
output = "models/model.dk"
overwrite = true
epochs = 2
progress = false

[[outputs]]
input = "data/today.svm"
zero_based = true
path = "predictions/today.parquet"
"""


def _day(folder, night):
    rng = np.random.default_rng(night)
    X = rng.random((150 + 10 * night, 6))
    dump_svmlight_file(X, (X[:, 0] > 0.5).astype(int), str(folder / "data" / "today.svm"), zero_based=True)
    return X.shape[0]


def _job(folder, text=NIGHTLY, name="job.toml"):
    (folder / name).write_text(textwrap.dedent(text))
    return str(folder / name)


def test_the_nightly_job_runs_three_nights_replacing_its_own_outputs(tmp_path, local_cluster, capsys):
    (tmp_path / "data").mkdir()  # the output folders do not exist yet: the job creates them
    job = _job(tmp_path)
    total = 0
    for night in (1, 2, 3):
        rows = _day(tmp_path, night)
        total += rows
        assert main(["run", job, "--scheduler", local_cluster]) == 0, capsys.readouterr().err
        predictions = pq.read_table(tmp_path / "predictions" / "today.parquet")
        assert predictions.num_rows == rows  # tonight's rows, not an earlier night's
        assert open_store(str(tmp_path / "features" / "train.zarr")).n_rows == total
        assert load_model(str(tmp_path / "models" / "model.dk")).estimator.classes_.tolist() == [0, 1]
    assert sorted(os.listdir(tmp_path / "predictions")) == ["today.parquet"]  # no temporary left behind


def test_a_job_never_replaces_an_output_it_did_not_write(tmp_path, local_cluster, capsys):
    (tmp_path / "data").mkdir()
    _day(tmp_path, 1)
    mine = tmp_path / "predictions" / "today.parquet"
    mine.mkdir(parents=True)
    (mine / "part.0.parquet").write_bytes(b"a user's file")
    job = _job(tmp_path)
    message = one_line_error(capsys, ["run", job, "--scheduler", local_cluster])
    assert "predictions/today.parquet" in message and "not written by dask-kernels predict" in message
    assert (mine / "part.0.parquet").read_bytes() == b"a user's file"


def test_another_job_files_outputs_are_refused(tmp_path, local_cluster, capsys):
    (tmp_path / "data").mkdir()
    _day(tmp_path, 1)
    assert main(["run", _job(tmp_path, name="first.toml"), "--scheduler", local_cluster]) == 0
    before = pq.read_table(tmp_path / "predictions" / "today.parquet")
    message = one_line_error(capsys, ["run", _job(tmp_path, name="second.toml"), "--scheduler", local_cluster])
    assert "first.toml" in message and "second.toml" in message
    assert pq.read_table(tmp_path / "predictions" / "today.parquet").equals(before)


def test_dry_run_on_a_fresh_machine_creates_nothing(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    _day(tmp_path, 1)
    job = _job(tmp_path)
    assert main(["run", job, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"would create folder {tmp_path / 'models'}" in out
    assert sorted(os.listdir(tmp_path)) == ["data", "job.toml"]


@pytest.fixture
def model_and_rows(tmp_path, local_cluster):
    rng = np.random.default_rng(0)
    X = rng.random((200, 4))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", (X[:, 0] > 0.5).astype(np.int64))
    assert main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--method", "gcws",
                 "--param", "n_components=16", "--epochs", "1", "-o", str(tmp_path / "m.dk"),
                 "--scheduler", local_cluster]) == 0
    return str(tmp_path / "m.dk"), str(tmp_path / "X.npy")


@pytest.mark.parametrize("suffix", [".npy", ".zarr", ".parquet"])
def test_predict_overwrite_replaces_only_its_own_output(tmp_path, model_and_rows, local_cluster, capsys, suffix):
    model, rows = model_and_rows
    out = str(tmp_path / f"pred{suffix}")
    argv = ["predict", model, rows, "-o", out, "--scheduler", local_cluster]
    assert main(argv) == 0
    assert "--overwrite" in one_line_error(capsys, argv)  # without it: refused, and told what to do
    assert main(argv + ["--overwrite"]) == 0
    # someone else's bytes at the same path: refused even with --overwrite, and left as they are
    if suffix == ".npy":
        np.save(out, np.arange(3))
    else:
        with open(os.path.join(out, "notes.txt"), "w") as f:
            f.write("mine")
    before = {n: os.path.getsize(os.path.join(tmp_path, n)) for n in os.listdir(tmp_path)}
    message = one_line_error(capsys, argv + ["--overwrite"])
    assert out in message and "refusing to replace it" in message
    assert {n: os.path.getsize(os.path.join(tmp_path, n)) for n in os.listdir(tmp_path)} == before


def test_predict_overwrite_refuses_a_folder_predict_did_not_write(tmp_path, model_and_rows, local_cluster, capsys):
    model, rows = model_and_rows
    out = tmp_path / "pred.zarr"
    out.mkdir()
    (out / "zarr.json").write_text("{}")
    message = one_line_error(capsys, ["predict", model, rows, "-o", str(out), "--overwrite",
                                      "--scheduler", local_cluster])
    assert "not written by dask-kernels predict" in message
    assert (out / "zarr.json").read_text() == "{}"


@pytest.mark.parametrize("suffix", [".npy", ".csv"])
def test_a_run_killed_after_renaming_its_file_into_place_is_replaced_by_the_next(tmp_path, model_and_rows, capsys,
                                                                                 monkeypatch, suffix):
    # a .npy or .csv output's marker (its digest) is written beside it: a run killed between the
    # rename and that write left the new file beside the old digest, and every later night refused
    # it ("its bytes changed")
    import dask_kernels.cli.predict as predict

    model, rows = model_and_rows
    out = str(tmp_path / f"pred{suffix}")
    night = tmp_path / "night.npy"
    np.save(night, np.load(rows)[:100])
    argv = ["predict", model, str(night), "-o", out, "--overwrite"]
    assert main(argv) == 0
    real = predict.write_marker

    def killed_after_the_rename(tmp, kind, writer, final, *args, **kwargs):
        if tmp == final:
            raise KeyboardInterrupt
        return real(tmp, kind, writer, final, *args, **kwargs)

    monkeypatch.setattr(predict, "write_marker", killed_after_the_rename)
    np.save(night, np.load(rows)[100:])  # the next night's rows: other predictions
    assert main(argv) == 130
    monkeypatch.setattr(predict, "write_marker", real)
    capsys.readouterr()
    assert main(argv) == 0
    expected = load_model(model).predict(np.load(night))
    got = np.load(out) if suffix == ".npy" else np.loadtxt(out, delimiter=",", skiprows=1)[:, 1]
    assert np.array_equal(got, expected)
    with open(out, "ab") as f:  # bytes of someone else's since: still refused
        f.write(b"\n")
    assert "its bytes changed" in one_line_error(capsys, argv)


def test_a_nightly_job_with_a_checkpoint_trains_each_night_on_the_grown_store(tmp_path, capsys):
    # night 2 ended at the training step: the checkpoint night 1 left was refused as one "for a
    # different source", every night after, until it was deleted by hand
    (tmp_path / "data").mkdir()
    job = _job(tmp_path, NIGHTLY.replace("progress = false\n\n[[outputs]]",
                                         'progress = false\ncheckpoint = "models/run.ckpt"\n\n[[outputs]]'))
    for night in (1, 2):
        _day(tmp_path, night)
        assert main(["run", job]) == 0, capsys.readouterr().err
    assert "is of another training (an earlier night's rows or parameters); starting over" in capsys.readouterr().out
    # the model is the one a training from scratch on the grown store gives
    assert main(["train", str(tmp_path / "features" / "train.zarr"), "-o", str(tmp_path / "ref.dk"), "--epochs", "2",
                 "--no-progress"]) == 0
    got, ref = load_model(str(tmp_path / "models" / "model.dk")), load_model(str(tmp_path / "ref.dk"))
    assert np.array_equal(got.estimator.coef_, ref.estimator.coef_) and got.history[-1]["rows"] == 330
    assert main(["run", job]) == 0  # the same night again: resumed from its (finished) checkpoint, same model
    assert "starting over" not in capsys.readouterr().out
    assert np.array_equal(load_model(str(tmp_path / "models" / "model.dk")).estimator.coef_, ref.estimator.coef_)
