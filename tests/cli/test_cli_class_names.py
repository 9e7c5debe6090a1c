"""Class names on the command line: a Parquet/CSV string ``--label-column`` or a ``.npy`` of
strings, through featurize, train, score and predict (every output format gives the names).

Before, a Parquet label column of letters was refused with advice about feature columns, a
``.npy`` of strings "is not numeric", and predict wrote no CSV.
"""

import numpy as np
import pandas as pd
import pytest
import zarr

from dask_kernels import load_model, open_store
from dask_kernels.cli import main

pytest.importorskip("pyarrow")

NAMES = np.array(["north", "south"])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("class names")
    rng = np.random.default_rng(1)
    X = rng.random((240, 4))
    y = NAMES[(X[:, 0] + X[:, 1] > 1).astype(int)]
    frame = pd.DataFrame(X, columns=list("abcd")).assign(side=y)
    frame.to_parquet(d / "t.parquet", row_group_size=80)
    frame.to_csv(d / "t.csv", index=False)
    np.save(d / "X.npy", X)
    np.save(d / "y.npy", y)
    assert main(["featurize", str(d / "t.parquet"), str(d / "s.zarr"), "--label-column", "side",
                 "--param", "n_components=64", "--no-progress"]) == 0
    assert main(["train", str(d / "s.zarr"), "-o", str(d / "m"), "--epochs", "3"]) == 0
    return d, X, y


def test_a_parquet_label_column_of_names_is_stored_and_trained_on(data):
    d, _, y = data
    store = open_store(str(d / "s.zarr"))
    assert store.classes.tolist() == NAMES.tolist() and store.labels.compute().tolist() == y.tolist()
    assert load_model(str(d / "m")).classes_.tolist() == NAMES.tolist()


def test_csv_and_npy_names_are_stored_alike(data):
    d, _, y = data
    assert main(["featurize", str(d / "t.csv"), str(d / "c.zarr"), "--label-column", "side",
                 "--param", "n_components=64", "--no-progress"]) == 0
    assert main(["featurize", str(d / "X.npy"), str(d / "n.zarr"), "--labels", str(d / "y.npy"),
                 "--param", "n_components=64", "--no-progress"]) == 0
    for name in ("c.zarr", "n.zarr"):
        assert open_store(str(d / name)).labels.compute().tolist() == y.tolist()


@pytest.mark.parametrize("suffix", [".npy", ".parquet", ".zarr", ".csv"])
def test_predict_writes_the_class_names_in_every_output_format(data, suffix):
    d, X, _ = data
    want = load_model(str(d / "m")).predict(X).tolist()
    assert set(want) == set(NAMES.tolist())  # both classes predicted: names, not codes, are compared
    out = d / f"p{suffix}"
    assert main(["predict", str(d / "m"), str(d / "t.parquet"), "--label-column", "side", "-o", str(out)]) == 0
    if suffix == ".npy":
        got = np.load(out).tolist()
    elif suffix == ".parquet":
        got = pd.read_parquet(out).sort_values("row")["prediction"].tolist()
    elif suffix == ".zarr":
        z = zarr.open_array(str(out), mode="r")
        assert "UTF8" in str(z.metadata.data_type)  # Zarr's specified string type, not UTF-32
        got = z[:].tolist()
    else:
        table = pd.read_csv(out)
        assert list(table.columns) == ["row", "prediction"] and table["row"].tolist() == list(range(len(X)))
        got = table["prediction"].tolist()
    assert got == want


def test_score_and_a_model_trained_from_a_npy_of_names(data, capsys):
    d, X, y = data
    assert main(["train", str(d / "X.npy"), "--labels", str(d / "y.npy"), "-o", str(d / "m2"), "--epochs", "2"]) == 0
    model = load_model(str(d / "m2"))
    assert model.classes_.tolist() == NAMES.tolist()
    capsys.readouterr()
    assert main(["score", str(d / "m2"), str(d / "X.npy"), "--labels", str(d / "y.npy")]) == 0
    accuracy = float(capsys.readouterr().out.split("accuracy")[1].split()[0])
    assert accuracy == pytest.approx(np.mean(model.predict(X) == y), abs=1e-6)


def test_info_lists_a_stores_class_names(data, capsys):
    d, _, _ = data
    capsys.readouterr()
    assert main(["info", str(d / "s.zarr")]) == 0
    assert "classes: 2 (north, south)" in capsys.readouterr().out.splitlines()
