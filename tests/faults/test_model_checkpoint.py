"""Checkpoint paths and values: never overwrite what is not a checkpoint, validate on resume.

A checkpoint's loop values (epoch, position, eta0, history, ...) used to be trusted: a position
beyond the number of blocks silently skipped training, a negative eta0 reached the estimator,
and a user's file at the checkpoint path was overwritten (resume=False) or failed with an
error naming no file.
"""

import io
import json
import os
import zipfile

import numpy as np
import pytest
from _checkpoint_runs import Stop, checkpointed_fit

from dask_kernels import GCWS


def _data():
    rng = np.random.default_rng(1)
    X = rng.random((600, 4))
    return X, (X[:, 0] * X[:, 1] > 0.25).astype(int)


@pytest.fixture(scope="module")
def setup():
    X, y = _data()
    return X, y, GCWS(n_components=16, seed=0).fit(X)


def _fit(setup, ck, **kw):
    X, y, gcws = setup
    return checkpointed_fit(X, y, gcws, ck, **kw)


def _mid_run_checkpoint(setup, ck):
    def cb(info):
        if info["epoch"] == 1 and info["position"] == 3:
            raise Stop
    with pytest.raises(Stop):
        _fit(setup, ck, callback=cb)


def _edit_meta(ck, edit):
    with zipfile.ZipFile(ck) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(str(np.load(io.BytesIO(members["__meta__.npy"]))))
    edit(meta)
    buf = io.BytesIO()
    np.save(buf, np.array(json.dumps(meta)))
    members["__meta__.npy"] = buf.getvalue()
    with zipfile.ZipFile(ck, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)


LOOP_CASES = {
    "position-beyond-blocks": (lambda m: m["loop"].update(position=99), "loop.position"),
    "position-negative": (lambda m: m["loop"].update(position=-1), "loop.position"),
    "epoch-beyond-epochs": (lambda m: m["loop"].update(epoch=7), "loop.epoch"),
    "epoch-float": (lambda m: m["loop"].update(epoch=1.5), "loop.epoch"),
    "eta0-negative": (lambda m: (m["loop"].update(eta0=-1.0), m["params"].update(eta0=-1.0)), "eta0"),
    "eta0-mismatch": (lambda m: m["loop"].update(eta0=5.0), "eta0"),
    "history-length": (lambda m: m["loop"].update(history=[]), "loop.history"),
    "best-nan": (lambda m: m["loop"].update(best="NaN"), "loop.best"),
    "done-not-bool": (lambda m: m["loop"].update(done="yes"), "loop.done"),
    "loop-missing": (lambda m: m.pop("loop"), "'loop'"),
    "stale-missing": (lambda m: m["loop"].pop("stale"), "loop.stale"),
    "state-missing": (lambda m: m.pop("estimator_state"), "'estimator_state'"),
    "alias-dangling": (lambda m: m["estimator_state"]["aliases"].update(x_={"of": "nope", "shape": [1],
                                                                             "same": False}), "aliases"),
    "n-features": (lambda m: m["estimator_state"]["scalars"].update(n_features_in_=5), "n_features_in_"),
}


@pytest.mark.parametrize("case", sorted(LOOP_CASES))
def test_tampered_checkpoint_values_are_refused_naming_the_key(setup, tmp_path, case):
    ck = str(tmp_path / "run.ckpt")
    _mid_run_checkpoint(setup, ck)
    edit, key = LOOP_CASES[case]
    _edit_meta(ck, edit)
    with pytest.raises(ValueError) as info:
        _fit(setup, ck)
    msg = str(info.value)
    assert ck in msg and key in msg, msg


def test_a_user_file_at_the_checkpoint_path_is_never_overwritten(setup, tmp_path):
    ck = tmp_path / "notes.txt"
    ck.write_text("my notes")
    for resume in (True, False):
        with pytest.raises(ValueError, match="not a dask_kernels checkpoint") as info:
            _fit(setup, ck, resume=resume)
        assert str(ck) in str(info.value)
        assert ck.read_text() == "my notes"
    # an npz of someone else's arrays is not ours either
    np.savez(tmp_path / "data.npz", a=np.arange(3))
    with pytest.raises(ValueError, match="not a dask_kernels checkpoint"):
        _fit(setup, tmp_path / "data.npz", resume=False)
    assert np.load(tmp_path / "data.npz")["a"].tolist() == [0, 1, 2]
    assert sorted(os.listdir(tmp_path)) == ["data.npz", "notes.txt"]


def test_a_directory_at_the_checkpoint_path_is_refused(setup, tmp_path):
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "f").write_text("x")
    with pytest.raises(ValueError, match="is not a file"):
        _fit(setup, tmp_path / "ck", resume=False)
    assert (tmp_path / "ck" / "f").read_text() == "x"


def test_failed_checkpoint_write_leaves_no_temporary_file(setup, tmp_path, monkeypatch):
    ck = str(tmp_path / "run.ckpt")
    _mid_run_checkpoint(setup, ck)
    before = open(ck, "rb").read()

    def boom(*a, **k):
        raise OSError("disk full (injected)")

    monkeypatch.setattr(np.lib.format, "write_array", boom)
    with pytest.raises(OSError, match="injected"):
        _fit(setup, ck)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["run.ckpt"] and open(ck, "rb").read() == before
    _fit(setup, ck)  # the old checkpoint still resumes


def test_resume_from_a_valid_checkpoint_still_matches(setup, tmp_path):
    ref = _fit(setup, None)
    ck = str(tmp_path / "run.ckpt")
    _mid_run_checkpoint(setup, ck)
    res = _fit(setup, ck)
    assert np.array_equal(ref.estimator.coef_, res.estimator.coef_)
