"""Files written before the persistence code was unified (``main_files/make_main_files.py`` wrote
them with that release) still load: a saved model whose feature map has a sidecar, and a
checkpoint of an interrupted run, which resumes to bitwise the model of an uninterrupted run."""

import os
import shutil

import numpy as np

from dask_kernels import load_model
from dask_kernels.maps.nystroem import Nystroem

from main_files.make_main_files import data, run

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "main_files")


def test_a_saved_model_with_a_sidecar_loads(tmp_path):
    path = tmp_path / "model.dk"
    shutil.copytree(os.path.join(HERE, "main_model.dk"), path)
    model = load_model(path)
    X, y = data()
    fresh = Nystroem(n_components=8, kernel="rbf", gamma=0.5).fit(X)
    F = fresh.transform(X)
    assert np.array_equal(model.feature_map.transform(X), F)  # the sidecar's landmarks, bitwise
    assert model.history == [{"epoch": 1}]
    assert np.array_equal(model.predict(X), model.estimator.predict(F))
    assert model.estimator.coef_.shape == (3, F.shape[1])


def test_a_checkpoint_resumes_to_the_uninterrupted_model(tmp_path):
    ckpt = tmp_path / "run.ckpt"
    shutil.copy(os.path.join(HERE, "main_run.ckpt"), ckpt)
    resumed = run(checkpoint=str(ckpt))
    whole = run()
    assert [r["epoch"] for r in resumed.history] == [1, 2, 3]
    assert resumed.estimator.coef_.tobytes() == whole.estimator.coef_.tobytes()
    assert resumed.estimator.intercept_.tobytes() == whole.estimator.intercept_.tobytes()
    assert [r.get("accuracy") for r in resumed.history] == [r.get("accuracy") for r in whole.history]
