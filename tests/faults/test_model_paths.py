"""Never delete what we did not write: model paths (KernelModel.save).

A model path must be absent, an empty directory, or a saved model (a directory holding only
our model.json, with its format marker, and arrays.npz); replacing a saved model needs
overwrite=True; a failed save leaves nothing behind and the previous model intact.
"""

import os

import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier

from dask_kernels import GCWS, KernelModel, load_model


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    X = rng.random((200, 4))
    y = (X[:, 0] > 0.5).astype(int)
    gcws = GCWS(n_components=16, seed=0).fit(X)
    est = SGDClassifier(random_state=0).fit(gcws.expand(gcws.transform(X)), y)
    return KernelModel(gcws, est), X


def _save(m, path, overwrite):
    # the default call is what main's save(path) did too: it must not delete user data
    return m.save(path, overwrite=True) if overwrite else m.save(path)


def _snapshot(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(folder) for f in files}


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_folder_of_user_files_survives(tmp_path, model, overwrite):
    target = tmp_path / "results"
    (target / "sub").mkdir(parents=True)
    (target / "notes.txt").write_text("my thesis")
    (target / "sub" / "data.csv").write_text("1,2,3")
    before = _snapshot(tmp_path)
    with pytest.raises(FileExistsError, match="not a saved dask_kernels model"):
        _save(model[0], target, overwrite)
    assert _snapshot(tmp_path) == before  # nothing renamed, deleted or left behind
    assert sorted(os.listdir(tmp_path)) == ["results"]


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_user_file_survives(tmp_path, model, overwrite):
    target = tmp_path / "model.dk"
    target.write_text("not a model")
    with pytest.raises(FileExistsError, match="is not a saved model"):
        _save(model[0], target, overwrite)
    assert target.read_text() == "not a model" and os.listdir(tmp_path) == ["model.dk"]


def test_a_model_folder_with_other_files_is_not_replaced(tmp_path, model):
    path = model[0].save(tmp_path / "m.dk")
    (tmp_path / "m.dk" / "README").write_text("mine")
    with pytest.raises(FileExistsError, match="other files"):
        model[0].save(path, overwrite=True)
    assert (tmp_path / "m.dk" / "README").read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == ["m.dk"]


def test_a_directory_named_model_json_is_not_a_model(tmp_path, model):
    target = tmp_path / "m.dk"
    (target / "model.json").mkdir(parents=True)
    (target / "model.json" / "keep").write_text("x")
    with pytest.raises(FileExistsError):
        model[0].save(target, overwrite=True)
    assert (target / "model.json" / "keep").read_text() == "x"


def test_a_symlink_is_refused(tmp_path, model):
    real = model[0].save(tmp_path / "real.dk")
    os.symlink(real, tmp_path / "link.dk")
    with pytest.raises(FileExistsError, match="symbolic link"):
        model[0].save(tmp_path / "link.dk", overwrite=True)
    assert os.path.islink(tmp_path / "link.dk") and load_model(real).predict(model[1][:3]).shape == (3,)


def test_replacing_a_saved_model_needs_overwrite(tmp_path, model):
    m, X = model
    path = m.save(tmp_path / "m.dk")
    assert m.save(tmp_path / "empty", overwrite=False)  # absent
    (tmp_path / "empty2").mkdir()
    m.save(tmp_path / "empty2")  # an empty directory holds nothing to lose
    with pytest.raises(FileExistsError, match="already holds a saved model: pass overwrite=True"):
        m.save(path)
    other = KernelModel(m.feature_map, SGDClassifier(random_state=1, alpha=0.1).fit(
        m.features(X), (X[:, 1] > 0.5).astype(int)))
    other.save(path, overwrite=True)
    np.testing.assert_array_equal(load_model(path).estimator.coef_, other.estimator.coef_)
    assert sorted(os.listdir(tmp_path)) == ["empty", "empty2", "m.dk"]  # no temp or old dirs
    assert sorted(os.listdir(path)) == ["arrays.npz", "model.json"]


@pytest.mark.parametrize("fail_in", ["savez", "json"])
def test_failed_save_leaves_nothing_and_keeps_the_old_model(tmp_path, model, monkeypatch, fail_in):
    m, X = model
    path = m.save(tmp_path / "m.dk")
    before = _snapshot(tmp_path)

    def boom(*a, **k):
        raise OSError("disk full (injected)")

    if fail_in == "savez":
        monkeypatch.setattr(np.lib.format, "write_array", boom)
    else:
        import json

        monkeypatch.setattr(json, "dump", boom)
    with pytest.raises(OSError, match="injected"):
        m.save(tmp_path / "new.dk")
    assert _snapshot(tmp_path) == before and sorted(os.listdir(tmp_path)) == ["m.dk"]
    with pytest.raises(OSError, match="injected"):
        m.save(path, overwrite=True)
    monkeypatch.undo()
    assert _snapshot(tmp_path) == before and sorted(os.listdir(tmp_path)) == ["m.dk"]
    np.testing.assert_array_equal(load_model(path).predict(X), m.predict(X))


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_a_saved_model_has_the_modes_of_any_new_file(tmp_path, model, umask):
    # a model saved by a nightly job is read by another user or group (a server): its folder and
    # every file follow the umask, as model.json and any file written beside it do
    old = os.umask(umask)
    try:
        path = model[0].save(str(tmp_path / "m.dk"))
        model[0].save(path, overwrite=True)  # replacing: the same modes
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o777 & ~umask
    for name in os.listdir(path):
        assert os.stat(os.path.join(path, name)).st_mode & 0o777 == 0o666 & ~umask, name
    assert sorted(os.listdir(tmp_path)) == ["m.dk"]  # no temporary left beside it
