"""``dask-kernels select``: the selected map as a spec file (ids beside it when many), errors as one line."""

import numpy as np
import pytest

from dask_kernels import RFF
from dask_kernels.cli import main
from dask_kernels.select import RandomFeatureSelector
from dask_kernels.maps import load_map


@pytest.fixture()
def data(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6))
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    return tmp_path, X, y


def test_select_writes_the_same_map_as_the_library(data, capsys):
    d, X, y = data
    out = d / "sel.json"
    assert main(["select", str(d / "X.npy"), str(out), "--labels", str(d / "y.npy"), "--param", "gamma=0.5",
                 "--n-components", "300", "--rounds", "3", "--subset-rows", "200", "--seed", "2", "--block-rows",
                 "64"]) == 0
    assert (d / "sel.npz").exists()  # 300 ids > 256: beside the spec
    assert "300 selected features" in capsys.readouterr().out
    ref = RandomFeatureSelector(RFF(gamma=0.5), n_components=300, rounds=3, subset_rows=200, seed=2).fit(X, y)
    fmap = load_map(out)
    assert np.array_equal(fmap.feature_ids, ref.feature_ids_)
    assert np.array_equal(fmap.transform(X), ref.transform(X))


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--param", "n_components=5"], "--param n_components: set by the selection"),
        (["--param", "gamma=-1"], "gamma"),
        (["--method", "gcws"], "invalid choice"),
    ],
)
def test_user_errors_are_one_line(data, capsys, extra, message):
    d, _, _ = data
    argv = ["select", str(d / "X.npy"), str(d / "o.json"), "--labels", str(d / "y.npy"), *extra]
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse's choices
        rc = e.code
    err = capsys.readouterr().err
    assert rc != 0 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (d / "o.json").exists()


def test_existing_output_is_not_overwritten(data, capsys):
    d, _, _ = data
    (d / "o.json").write_text("mine")
    assert main(["select", str(d / "X.npy"), str(d / "o.json"), "--labels", str(d / "y.npy")]) == 1
    assert "--overwrite" in capsys.readouterr().err and (d / "o.json").read_text() == "mine"


def test_svmlight_input_selects_with_the_files_labels(data, capsys):
    """An svmlight file (several byte partitions) carries its labels: the selection equals the
    library's on the same rows in memory."""
    from sklearn.datasets import dump_svmlight_file

    d, X, y = data
    dump_svmlight_file(X, y, str(d / "train.svm"), zero_based=False)
    out = d / "sel.json"
    assert main(["select", str(d / "train.svm"), str(out), "--param", "gamma=0.5", "--n-components", "40",
                 "--rounds", "3", "--subset-rows", "200", "--seed", "2", "--blocksize", "4096"]) == 0
    assert "40 selected features" in capsys.readouterr().out
    from sklearn.datasets import load_svmlight_file

    Xs, ys = load_svmlight_file(str(d / "train.svm"), n_features=X.shape[1])
    ref = RandomFeatureSelector(RFF(gamma=0.5), n_components=40, rounds=3, subset_rows=200, seed=2).fit(Xs, ys)
    fmap = load_map(out)
    assert np.array_equal(fmap.feature_ids, ref.feature_ids_)


def test_svmlight_with_labels_and_npy_without_labels_are_one_line_errors(data, capsys):
    from sklearn.datasets import dump_svmlight_file

    d, X, y = data
    dump_svmlight_file(X, y, str(d / "train.svm"), zero_based=False)
    for argv, message in (
        (["select", str(d / "train.svm"), str(d / "o.json"), "--labels", str(d / "y.npy")], "svmlight files carry"),
        (["select", str(d / "X.npy"), str(d / "o.json")], "X.npy: has no labels; pass --labels y.npy"),
    ):
        assert main(argv) != 0
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (d / "o.json").exists()
