"""Errors that used to mislead now say what the file is and what to do, naming it. Before: a CSV
renamed ``.npy`` was told about ``allow_pickle``; an empty svmlight file with ``--n-features``
got scikit-learn's "Found array with 0 sample(s)" without the file; ``train`` on it printed
``<...PartitionSource object at 0x...> has no rows``."""

import os

from _cli import one_line_error


def test_a_csv_named_npy_is_called_what_it_looks_like(tmp_path, capsys):
    (tmp_path / "rows.npy").write_text("a,b\n1,2\n")
    message = one_line_error(capsys, ["featurize", str(tmp_path / "rows.npy"), str(tmp_path / "s.zarr"),
                                      "--method", "gcws"])
    assert "rows.npy" in message and "not a .npy file" in message and "--format csv" in message
    assert "allow_pickle" not in message
    assert not os.path.exists(tmp_path / "s.zarr")


def test_an_empty_svmlight_file_is_named_by_featurize_and_train(tmp_path, capsys):
    (tmp_path / "empty.svm").write_bytes(b"")
    message = one_line_error(capsys, ["featurize", str(tmp_path / "empty.svm"), str(tmp_path / "s.zarr"),
                                      "--n-features", "5"])
    assert "empty.svm" in message and "has no rows" in message
    message = one_line_error(capsys, ["train", str(tmp_path / "empty.svm"), "-o", str(tmp_path / "m.dk"),
                                      "--n-features", "5"])
    assert "empty.svm" in message and "has no rows" in message and "object at 0x" not in message
    assert sorted(os.listdir(tmp_path)) == ["empty.svm"]


def test_a_csv_of_its_header_alone_is_said_to_have_no_rows(tmp_path, capsys):
    # its columns, typed from no rows, were called text: "columns 'a' (string), 'b' (string) are not numeric"
    (tmp_path / "empty.csv").write_text("a,b,y\n")
    message = one_line_error(capsys, ["featurize", str(tmp_path / "empty.csv"), str(tmp_path / "s.zarr"),
                                      "--label-column", "y"])
    assert "empty.csv" in message and "has no rows" in message and "not numeric" not in message
    message = one_line_error(capsys, ["train", str(tmp_path / "empty.csv"), "-o", str(tmp_path / "m.dk"),
                                      "--label-column", "y"])
    assert "empty.csv" in message and "has no rows" in message and "not numeric" not in message
    assert sorted(os.listdir(tmp_path)) == ["empty.csv"]


def test_predict_proba_of_a_regressor_says_to_drop_proba(tmp_path, capsys):
    # it advised training "with --estimator sgd, softmax or a naive Bayes estimator": classifiers,
    # for a regression target
    import numpy as np

    from dask_kernels.cli import main

    rng = np.random.default_rng(0)
    X = rng.random((200, 4))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", X[:, 0] * 3.0)
    assert main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--n-components", "16",
                 "--estimator", "sgd-regressor", "--epochs", "1", "--no-progress", "-o", str(tmp_path / "m.dk")]) == 0
    capsys.readouterr()
    message = one_line_error(capsys, ["predict", str(tmp_path / "m.dk"), str(tmp_path / "X.npy"), "-o",
                                      str(tmp_path / "p.npy"), "--proba"])
    assert "--proba: the model's SGDRegressor" in message and "drop --proba" in message, message
    assert "naive Bayes" not in message
    assert not (tmp_path / "p.npy").exists()


def test_an_unknown_train_method_lists_raw_too(tmp_path, capsys):
    import numpy as np

    np.save(tmp_path / "X.npy", np.zeros((10, 3)))
    np.save(tmp_path / "y.npy", np.arange(10) % 2)
    message = one_line_error(capsys, ["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"),
                                      "--method", "foo", "-o", str(tmp_path / "m.dk")])
    assert "--method 'foo' is unknown; known: core, fastfood, gcws, nrff, nystroem, raw, rff" in message, message
    message = one_line_error(capsys, ["featurize", str(tmp_path / "X.npy"), str(tmp_path / "s.zarr"),
                                      "--method", "foo"])
    assert "raw" not in message  # featurize has no raw: its stores hold features of a map


def test_n_components_given_twice_is_refused_naming_both(tmp_path, capsys):
    # --param n_components=128 silently won over --n-components 64
    import numpy as np

    np.save(tmp_path / "X.npy", np.zeros((10, 3)))
    np.save(tmp_path / "y.npy", np.arange(10) % 2)
    message = one_line_error(capsys, ["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"),
                                      "--method", "rff", "--n-components", "64", "--param", "n_components=128",
                                      "-o", str(tmp_path / "m.dk")])
    assert "--n-components 64 and --param n_components=128" in message and "give one of them" in message, message
    assert not (tmp_path / "m.dk").exists()
