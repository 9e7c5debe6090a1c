"""``dask-kernels train`` end to end on small files."""

import numpy as np
from sklearn.datasets import dump_svmlight_file, load_digits

from dask_kernels import load_model
from dask_kernels.cli import main


def test_train_from_npy_and_svmlight(tmp_path, capsys):
    X, y = load_digits(return_X_y=True)
    X, y = X[:900], y[:900]
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    out = tmp_path / "model.dk"
    rc = main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"),
               "--method", "gcws", "--n-components", "64", "--param", "bits=6",
               "--epochs", "3", "--block-rows", "200", "--validation-fraction", "0.1", "-o", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "accuracy" in text and "erp" in text and "saved KernelModel(gcws" in text
    model = load_model(out)
    assert model.feature_map.bits == 6 and len(model.history) >= 1
    # 10 balanced classes: chance is 0.1; GCWS + SGD on digits is far above it
    assert model.score(X, y) > 0.8

    dump_svmlight_file(X, y, str(tmp_path / "d.svm"))
    rc = main(["train", str(tmp_path / "d.svm"), "--zero-based", "--method", "raw", "--estimator", "sgd-hinge",
               "--epochs", "2", "-o", str(tmp_path / "raw.dk")])
    assert rc == 0 and load_model(tmp_path / "raw.dk").feature_map is None


def test_train_runs_on_the_named_scheduler(tmp_path, capsys):
    from distributed import LocalCluster

    X, y = load_digits(return_X_y=True)
    dump_svmlight_file(X[:400], y[:400], str(tmp_path / "d.svm"))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                      dashboard_address=":0") as lc:
        before = lc.scheduler.transition_counter
        rc = main(["train", str(tmp_path / "d.svm"), "--zero-based", "--method", "raw", "--blocksize", "4000",
                   "--epochs", "1", "-o", str(tmp_path / "m.dk"), "--scheduler", lc.scheduler_address])
        assert rc == 0 and lc.scheduler.transition_counter > before  # the blocks were read there
    assert load_model(tmp_path / "m.dk").estimator.n_features_in_ == 64
    rc = main(["train", str(tmp_path / "d.svm"), "-o", str(tmp_path / "n.dk"), "--scheduler", "127.0.0.1:1"])
    assert rc == 1 and "--scheduler tcp://127.0.0.1:1: cannot connect" in capsys.readouterr().err
