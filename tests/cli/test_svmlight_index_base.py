"""A model trained on svmlight input keeps the index base it read it with (``train --zero-based``):
``predict`` and ``score`` read svmlight input with it. Before, they read one-based unless told
again, and a zero-based model scored a zero-based test file on columns shifted by one, silently
(digits: accuracy 0.398 against 0.912)."""

import json
import os

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from _cli import one_line_error
from dask_kernels import RFF, featurize, fit_incremental, load_model
from dask_kernels.cli import main
from dask_kernels.io import read_svmlight
from dask_kernels.learn.softmax import SoftmaxSGD


@pytest.fixture
def files(tmp_path):
    # column 0 is always 0 (never written, like a digit image's corner), the class is column 1:
    # read one-based, column 1 becomes column 0 and the model sees noise
    rng = np.random.default_rng(0)
    X = rng.random((1200, 6))
    X[:, 0] = 0.0
    y = (X[:, 1] > 0.5).astype(np.int64)
    for name, rows, zero_based in (("tr0", slice(0, 900), True), ("te0", slice(900, None), True),
                                   ("tr1", slice(0, 900), False), ("te1", slice(900, None), False)):
        dump_svmlight_file(X[rows], y[rows], str(tmp_path / f"{name}.svm"), zero_based=zero_based)
    return tmp_path


def _train(files, source, model, *flags):
    assert main(["train", str(files / source), "-o", str(files / model), "--method", "rff", "--n-components", "64",
                 "--epochs", "3", "--no-progress", *flags]) == 0


def _score(capsys, *argv):
    capsys.readouterr()
    assert main(["score", *map(str, argv)]) == 0
    return float(capsys.readouterr().out.split()[-1])


def test_predict_and_score_read_svmlight_with_the_trained_base(files, capsys):
    _train(files, "tr0.svm", "m0.dk", "--zero-based", "--n-features", "6")
    plain = _score(capsys, files / "m0.dk", files / "te0.svm")
    assert plain == _score(capsys, files / "m0.dk", files / "te0.svm", "--zero-based")
    assert plain > 0.8  # the class is column 1; read from 1 it was near chance
    assert load_model(str(files / "m0.dk")).svmlight_zero_based_ is True
    with open(files / "m0.dk" / "model.json") as f:
        meta = json.load(f)
    # a version that reads every svmlight file one-based must refuse this model, not misread it
    assert meta["svmlight_zero_based"] is True and meta["format"] == "dask-kernels-model-2"
    assert main(["predict", str(files / "m0.dk"), str(files / "te0.svm"), "-o", str(files / "p.npy")]) == 0
    model, (X, y) = load_model(str(files / "m0.dk")), read_svmlight(str(files / "te0.svm"), zero_based=True,
                                                                    n_features=6).compute()[:2]
    assert np.array_equal(np.load(files / "p.npy"), model.predict(X))


def test_zero_based_against_a_one_based_model_is_refused(files, capsys):
    _train(files, "tr1.svm", "m1.dk")
    assert _score(capsys, files / "m1.dk", files / "te1.svm") > 0.8
    for cmd in (["score"], ["predict", "-o", str(files / "p.npy")]):
        line = one_line_error(capsys, [cmd[0], str(files / "m1.dk"), str(files / "te1.svm"), "--zero-based",
                                       *cmd[1:]])
        assert "--zero-based" in line and "1-based" in line and "drop --zero-based" in line, line
    assert not os.path.exists(files / "p.npy")
    assert load_model(str(files / "m1.dk")).svmlight_zero_based_ is False
    with open(files / "m1.dk" / "model.json") as f:  # read one-based: what every version does
        assert json.load(f)["format"] == "dask-kernels-model-1"


def test_info_shows_the_base(files, capsys):
    _train(files, "tr0.svm", "m0.dk", "--zero-based")
    capsys.readouterr()
    assert main(["info", str(files / "m0.dk")]) == 0
    assert "svmlight input: indices from 0 (--zero-based)" in capsys.readouterr().out
    assert main(["info", str(files / "m0.dk"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["svmlight_zero_based"] is True


def test_models_saved_without_the_base_load_and_read_as_before(files, capsys):
    # a model saved before the base was kept: no key, and --zero-based is what says it, as before
    _train(files, "tr0.svm", "m0.dk", "--zero-based", "--n-features", "6")
    meta_path = files / "m0.dk" / "model.json"
    with open(meta_path) as f:
        meta = json.load(f)
    del meta["svmlight_zero_based"]
    meta["format"] = "dask-kernels-model-1"
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    assert not hasattr(load_model(str(files / "m0.dk")), "svmlight_zero_based_")
    assert _score(capsys, files / "m0.dk", files / "te0.svm", "--zero-based") > 0.8
    meta["svmlight_zero_based"] = "yes"
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    with pytest.raises(ValueError, match=r"model\.json: svmlight_zero_based must be true, false or null"):
        load_model(str(files / "m0.dk"))


def test_the_base_comes_through_a_store_and_not_from_other_input(files):
    parts = read_svmlight(str(files / "tr0.svm"), zero_based=True, n_features=6)
    store = featurize(parts, RFF(n_components=16, seed=0), store=str(files / "s.zarr"), progress=False)
    model = fit_incremental(SoftmaxSGD(eta0=0.1), store, epochs=1, progress=False)
    assert model.svmlight_zero_based_ is True  # a job file trains on the store featurize wrote
    X, y = parts.compute()[:2]
    other = fit_incremental(SoftmaxSGD(eta0=0.1), X.toarray(), y, feature_map=RFF(n_components=16, seed=0),
                            epochs=1, progress=False)
    assert not hasattr(other, "svmlight_zero_based_")
