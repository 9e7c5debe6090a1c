"""Writes the files of ``tests/learn/test_main_files.py``: a saved model (with a feature map's
sidecar) and a checkpoint of an interrupted run, as the release before the persistence
rewrite wrote them. Kept to show how they were made; run with ``python make_main_files.py``
from this folder (it overwrites main_model.dk and main_run.ckpt)."""

import os
import shutil

import numpy as np


def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 6))
    y = (X[:, 0] * X[:, 1] > 0).astype(int) + (X[:, 2] > 1).astype(int)
    return X, y


def run(**kw):
    from sklearn.linear_model import SGDClassifier

    from dask_kernels import fit_incremental

    X, y = data()
    est = SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.05, random_state=0)
    return fit_incremental(est, X, y, epochs=3, block_rows=100, validation_fraction=0.2, checkpoint_every=2,
                           progress=False, **kw)


class Stop(Exception):
    pass


def main():
    import dask_kernels.maps.base  # noqa: F401
    from sklearn.linear_model import SGDClassifier

    from dask_kernels import KernelModel, Nystroem

    here = os.path.dirname(os.path.abspath(__file__))
    X, y = data()
    fmap = Nystroem(n_components=8, kernel="rbf", gamma=0.5).fit(X)
    model = KernelModel(fmap, SGDClassifier(random_state=0).fit(fmap.transform(X), y), [{"epoch": 1}])
    shutil.rmtree(os.path.join(here, "main_model.dk"), ignore_errors=True)
    model.save(os.path.join(here, "main_model.dk"))

    def stop(info):
        if info["epoch"] == 1 and info["position"] == 2:
            raise Stop

    ckpt = os.path.join(here, "main_run.ckpt")
    if os.path.exists(ckpt):
        os.unlink(ckpt)
    try:
        run(checkpoint=ckpt, callback=stop)
    except Stop:
        pass


if __name__ == "__main__":
    main()
