"""The README's batch job, run as a nightly job for three nights.

The README's "As a batch job" section runs its job with ``dask-kernels run job.toml`` and names
the job file it means (``deploy/job.toml``): "run every night it appends (or replaces) its store
and replaces the model and predictions it wrote before, never a file of anyone else's". This
test takes the command line and the job file from the README and the repository as shipped (the
job's ``/data/`` paths moved under a temporary folder), changes the input every night (rows
changed and added, one more class each night), and checks that each night exits 0, that the
model and predictions are that night's, that the job's outputs are replaced by its own next run
and nothing is left beside them, and that a user's file at an output path is refused and kept.
"""

import os
import re
import shlex

import numpy as np
import pytest
import zarr

from dask_kernels import load_model, open_store
from dask_kernels.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(ROOT, "README.md")) as _f:
    README = _f.read()
#: the README's section on batch jobs (up to the next heading)
SECTION = re.search(r"^### As a batch job\n(.*?)^#", README, re.S | re.M).group(1)


def _run_line():
    """The README's ``dask-kernels run JOB`` command (comment dropped) and the job file it links."""
    lines = [ln.split("#", 1)[0].strip() for ln in re.search(r"```bash\n(.*?)```", SECTION, re.S).group(1).splitlines()]
    (run,) = [shlex.split(ln) for ln in lines if ln.startswith("dask-kernels run ")]
    linked = re.search(r"\[`[^`]*\.toml`\]\(([^)]+\.toml)\)", SECTION).group(1)
    return run, os.path.join(ROOT, linked)


def _night(data, night):
    """Tonight's input: rows changed and added (seeded by the night), labels 0..night, and new rows."""
    rng = np.random.default_rng(night)
    X = rng.random((300 + 100 * night, 8))
    y = np.minimum((X[:, 0] * (night + 1)).astype(np.int64), night)  # classes 0..night
    new = rng.random((50 + 10 * night, 8))
    np.save(data / "train.npy", X)
    np.save(data / "train_labels.npy", y)
    np.save(data / "new.npy", new)
    return X, y, new


@pytest.fixture
def readme_job(tmp_path, monkeypatch):
    """The README's run command, with its job file copied into ``tmp_path`` (``/data/`` there)."""
    argv, job_path = _run_line()
    with open(job_path) as f:
        text = f.read()
    assert re.findall(r'"(/[^"]*)"', text) and all(p.startswith("/data/") for p in re.findall(r'"(/[^"]*)"', text))
    (tmp_path / argv[-1]).write_text(text.replace('"/data/', f'"{tmp_path}/data/'))
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)  # the README's command names the job file relative to the shell's folder
    return argv[1:], tmp_path / "data"


def _refused(capsys, argv):
    """The error line of a run that must fail (the job file shows featurize's progress first)."""
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err.splitlines()[-1]


def _outputs(data):
    return data / "models" / "train.dk", data / "predictions" / "new.zarr", data / "features" / "train.zarr"


@pytest.mark.slow
def test_the_readme_job_runs_three_nights(readme_job, capsys):
    argv, data = readme_job
    model_path, predictions, store = _outputs(data)
    rows = 0
    for night in (1, 2, 3):
        X, y, new = _night(data, night)
        rows += X.shape[0]
        assert main(argv) == 0, capsys.readouterr().err
        model = load_model(str(model_path))
        assert model.estimator.classes_.tolist() == list(range(night + 1))  # trained on tonight's labels
        got = zarr.open_array(str(predictions), mode="r")[:]
        assert got.shape == (new.shape[0],)  # tonight's new rows
        assert (got == model.predict(new)).all()  # by tonight's model
        assert open_store(str(store)).n_rows == rows  # each night's rows appended
        assert sorted(os.listdir(predictions.parent)) == ["new.zarr"]  # the old one replaced, no temporaries
        assert sorted(os.listdir(model_path.parent)) == ["train.dk"]


@pytest.mark.slow
def test_the_readme_job_never_replaces_a_users_file(readme_job, capsys):
    argv, data = readme_job
    model_path, predictions, _ = _outputs(data)
    _night(data, 1)
    assert main(argv) == 0, capsys.readouterr().err
    _night(data, 2)
    # a user's own folder where the job writes its predictions: refused, kept as it is
    os.rename(predictions, data / "ours.zarr")
    predictions.mkdir()
    (predictions / "notes.txt").write_text("mine")
    message = _refused(capsys, argv)
    assert str(predictions) in message and "not written by dask-kernels predict" in message
    assert os.listdir(predictions) == ["notes.txt"] and (predictions / "notes.txt").read_text() == "mine"
    # and a user's file where the job saves its model
    (predictions / "notes.txt").unlink()
    predictions.rmdir()
    os.rename(data / "ours.zarr", predictions)
    os.rename(model_path, data / "ours.dk")
    model_path.write_text("my model notes")
    message = _refused(capsys, argv)
    assert str(model_path) in message
    assert model_path.read_text() == "my model notes"
