"""A saved model records the library versions that wrote it; loading it under others says so, and a
model holding an estimator class the installed scikit-learn no longer has is a clear error."""

import json
import os
import warnings

import numpy as np
import pytest
import sklearn.linear_model
from sklearn.linear_model import SGDClassifier

from dask_kernels import KernelModel, load_model
from dask_kernels._versions import RECORDED, SavedVersionWarning, versions

X = np.random.default_rng(0).random((40, 3))
y = (X[:, 0] > 0.5).astype(int)


def _saved(tmp_path, estimator=None):
    path = KernelModel(None, estimator or SGDClassifier(random_state=0).fit(X, y)).save(str(tmp_path / "m.dk"))
    with open(os.path.join(path, "model.json")) as f:
        return path, json.load(f)


def _rewrite(path, meta):
    with open(os.path.join(path, "model.json"), "w") as f:
        json.dump(meta, f)


def test_a_saved_model_records_the_versions_and_loads_silently_under_them(tmp_path):
    path, meta = _saved(tmp_path)
    assert meta["versions"] == versions() and set(meta["versions"]) == set(RECORDED)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SavedVersionWarning)
        model = load_model(path)
    assert (model.predict(X) == model.estimator.predict(X)).all()


def test_loading_under_other_versions_names_them(tmp_path):
    path, meta = _saved(tmp_path)
    meta["versions"]["scikit-learn"] = "1.6.0.dev0"
    _rewrite(path, meta)
    with pytest.warns(SavedVersionWarning) as seen:
        load_model(path)
    [message] = [str(w.message) for w in seen]
    assert "scikit-learn 1.6.0.dev0 (installed: " in message and "model.json" in message
    assert "numpy" not in message  # only what differs


def test_a_model_saved_before_versions_were_recorded_loads(tmp_path):
    path, meta = _saved(tmp_path)
    del meta["versions"]
    _rewrite(path, meta)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SavedVersionWarning)
        load_model(path)


@pytest.mark.parametrize("bad", [["1.0"], {"numpy": 2}, {"numpy": "x" * 100}])
def test_a_malformed_versions_entry_is_refused(tmp_path, bad):
    path, meta = _saved(tmp_path)
    meta["versions"] = bad
    _rewrite(path, meta)
    with pytest.raises(ValueError, match=r"model\.json: versions must be an object"):
        load_model(path)


def test_an_estimator_class_gone_from_scikit_learn_is_a_clear_error(tmp_path, monkeypatch):
    path, meta = _saved(tmp_path)
    meta["estimator"]["class"] = "PassiveAggressiveClassifier"  # removed in scikit-learn 1.10
    meta["estimator"]["params"] = {}
    _rewrite(path, meta)
    monkeypatch.delattr(sklearn.linear_model, "PassiveAggressiveClassifier", raising=False)
    here = versions()["scikit-learn"]
    with pytest.raises(ValueError, match=rf"model\.json: estimator\.class PassiveAggressiveClassifier is not in "
                                         rf"scikit-learn {here} installed here \(the model was saved with "
                                         rf"scikit-learn {here}\)"):
        load_model(path)
