"""The command line's GCWS gets the map's default scaling: learned on all rows, kept in the spec,
and on real data (scikit-learn's bundled wine measurements, in units from 0.1 to 1000) it is what
makes the default model accurate."""

import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split

from dask_kernels import load_model, open_store
from dask_kernels.cli import main


def _wine(tmp_path):
    X, y = load_wine(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    np.save(tmp_path / "X.npy", Xtr)
    np.save(tmp_path / "y.npy", ytr)
    return Xtr, Xte, yte


def test_featurize_default_scales_on_all_rows(tmp_path):
    Xtr, _, _ = _wine(tmp_path)
    assert main(["featurize", str(tmp_path / "X.npy"), str(tmp_path / "s.zarr"), "--block-rows", "40"]) == 0
    state = open_store(str(tmp_path / "s.zarr")).feature_map.spec()["state"]["scale"]
    assert state["rule"] == "minmax"
    np.testing.assert_array_equal(state["min"], Xtr.min(axis=0))  # all rows, not the first block
    np.testing.assert_array_equal(state["max"], Xtr.max(axis=0))


def test_train_defaults_beat_no_scaling_on_wine(tmp_path):
    _, Xte, yte = _wine(tmp_path)
    scores = {}
    for name, extra in (("default", []), ("none", ["--param", "scale=null"])):
        out = tmp_path / f"{name}.dk"
        assert main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--method", "gcws",
                     "-o", str(out), *extra]) == 0
        scores[name] = float(np.mean(load_model(str(out)).predict(Xte) == yte))
    # 54 test rows: 1.0 against 0.926 at train's defaults (k = 2048, eta0 = 4 / k; at k = 256,
    # eta0 = 1 / k the raw values lost more than 10 points); scaling is worth at least 3 rows
    assert scores["default"] >= 0.95, scores
    assert scores["default"] - scores["none"] >= 3 / 54, scores
