"""A model trained on a Parquet or CSV table keeps its input columns' names and reads them by name.

Before, the model kept no names: ``predict`` and ``score`` read a table's numeric columns by
position. A test file whose columns come in another order was scored on the wrong columns
without a word, and a test file that still held the label column (of class names) was refused.
"""

import json
import logging

import numpy as np
import pandas as pd
import pytest

from dask_kernels import load_model
from dask_kernels.cli import main

from _cli import one_line_error

pytest.importorskip("pyarrow")

FEATURES = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("names")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4)) * [1.0, 3.0, 0.5, 2.0] + [0.0, 5.0, -1.0, 0.0]  # columns in their own units
    names = np.array(["low", "high"])[(X[:, 0] * X[:, 1] > 0).astype(int)]
    df = pd.DataFrame(X, columns=FEATURES).assign(kind=names)
    df.iloc[:400].to_csv(d / "train.csv", index=False)
    df.iloc[:400].to_parquet(d / "train.parquet")
    test = df.iloc[400:]
    test.to_csv(d / "test.csv", index=False)
    # the same rows: columns in another order, the labels first, and a column the model never saw
    shuffled = test[["kind", "d", "b", "a", "c"]].assign(note="x")
    shuffled.to_csv(d / "shuffled.csv", index=False)
    shuffled.to_parquet(d / "shuffled.parquet")
    test[["kind", "d", "b", "a", "c"]].to_csv(d / "reordered.csv", index=False)  # numbers only, in another order
    test[["a", "b", "d"]].to_csv(d / "missing.csv", index=False)
    return d, X


def _ok(capsys, argv):
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


@pytest.fixture(scope="module", params=["csv", "parquet"])
def model(request, tables, tmp_path_factory):
    d, _ = tables
    out = tmp_path_factory.mktemp("model") / "m.dk"
    assert main(["train", str(d / f"train.{request.param}"), "--label-column", "kind", "--method", "gcws",
                 "--n-components", "64", "--epochs", "2", "--no-progress", "-o", str(out)]) == 0
    return out, request.param


def test_the_model_keeps_the_names_and_info_shows_them(model, capsys):
    path, _ = model
    m = load_model(path)
    assert list(m.feature_names_in_) == FEATURES
    assert "input columns: a, b, c, d" in _ok(capsys, ["info", str(path)])


def test_predict_and_score_read_the_trained_columns_by_name(model, tables, capsys):
    path, fmt = model
    d, X = tables
    expected = load_model(path).predict(X[400:])
    for name in ("test.csv", f"shuffled.{fmt}"):
        out = d / f"p-{name}-{fmt}.npy"
        _ok(capsys, ["predict", str(path), str(d / name), "-o", str(out)])
        np.testing.assert_array_equal(np.load(out, allow_pickle=True), expected)
    scored = [_ok(capsys, ["score", str(path), str(d / name), "--label-column", "kind"]).split()[-1]
              for name in ("test.csv", f"shuffled.{fmt}")]
    assert scored[0] == scored[1]


def test_a_missing_trained_column_is_named(model, tables, capsys):
    path, _ = model
    d, _ = tables
    err = one_line_error(capsys, ["predict", str(path), str(d / "missing.csv"), "-o", str(d / "never.npy")])
    assert "column 'c' not found" in err and "trained on columns a,b,c,d" in err and "--columns" in err
    assert not (d / "never.npy").exists()


def test_columns_given_are_read_as_given_with_a_warning(model, tables, capsys, caplog):
    path, _ = model
    d, X = tables
    out = d / "given.npy"
    with caplog.at_level(logging.WARNING, logger="dask_kernels"):
        _ok(capsys, ["predict", str(path), str(d / "shuffled.csv"), "--columns", "d,b,a,c", "-o", str(out)])
    assert "the model was made from columns a,b,c,d" in caplog.text
    np.testing.assert_array_equal(np.load(out, allow_pickle=True), load_model(path).predict(X[400:, [3, 1, 0, 2]]))
    out.unlink()


def test_a_model_without_names_loads_and_reads_by_position(model, tables, tmp_path, capsys):
    path, _ = model
    d, X = tables
    import shutil

    old = tmp_path / "old.dk"
    shutil.copytree(path, old)
    meta = json.loads((old / "model.json").read_text())
    del meta["feature_names"]  # as models saved before the names were kept
    (old / "model.json").write_text(json.dumps(meta))
    m = load_model(old)
    assert not hasattr(m, "feature_names_in_")
    out = tmp_path / "p.npy"
    _ok(capsys, ["predict", str(old), str(d / "test.csv"), "--label-column", "kind", "-o", str(out)])
    np.testing.assert_array_equal(np.load(out, allow_pickle=True), m.predict(X[400:]))


@pytest.mark.parametrize("names, why", [
    ("a", "must be a list of strings"),
    (["a", 1, "c", "d"], "must be a list of strings"),
    ({"a": 1, "b": 2, "c": 3, "d": 4}, "must be a list of strings"),
    (4, "must be a list of strings"),
    (["a", "b", "c"], "3 feature names for 4 input columns"),
    (["a", "b", "a", "d"], "a feature name is given twice"),
])
def test_malformed_names_are_refused_on_load(model, tmp_path, names, why):
    path, _ = model
    import shutil

    bad = tmp_path / "bad.dk"
    shutil.copytree(path, bad)
    meta = json.loads((bad / "model.json").read_text())
    meta["feature_names"] = names
    (bad / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=why):
        load_model(bad)


def test_the_methods_read_a_dataframe_by_name(model, tables):
    import dask.dataframe as dd

    path, _ = model
    d, X = tables
    m = load_model(path)
    expected = m.predict(X[400:])
    frame = pd.read_csv(d / "shuffled.csv")  # other order, the labels and a text column beside
    np.testing.assert_array_equal(m.predict(frame), expected)
    np.testing.assert_array_equal(m.predict(dd.from_pandas(frame, npartitions=3)).compute(), expected)
    np.testing.assert_allclose(m.predict_proba(frame), m.predict_proba(X[400:]))
    with pytest.raises(ValueError, match="no column 'c'; the model was trained on columns"):
        m.predict(frame.drop(columns="c"))


def test_a_store_keeps_the_names_for_the_models_trained_on_it(tables, tmp_path, capsys):
    d, X = tables
    store, out = tmp_path / "s.zarr", tmp_path / "m.dk"
    _ok(capsys, ["featurize", str(d / "train.csv"), str(store), "--label-column", "kind", "--method", "gcws",
                 "--param", "n_components=64", "--no-progress"])
    assert "input columns: a, b, c, d" in _ok(capsys, ["info", str(store)])
    _ok(capsys, ["train", str(store), "--epochs", "2", "--no-progress", "-o", str(out)])
    m = load_model(out)
    assert list(m.feature_names_in_) == FEATURES
    _ok(capsys, ["predict", str(out), str(d / "shuffled.csv"), "-o", str(tmp_path / "p.npy")])
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy", allow_pickle=True), m.predict(X[400:]))


def test_appended_rows_are_read_by_the_store_names(tables, tmp_path, capsys):
    """A day's table with its columns in another order is appended as the store's columns; before,
    its rows were featurized from the wrong columns without a word."""
    from dask_kernels import open_store

    d, _ = tables
    common = ["--label-column", "kind", "--method", "gcws", "--param", "n_components=64", "--no-progress"]
    _ok(capsys, ["featurize", str(d / "train.csv"), str(tmp_path / "s.zarr"), *common])
    _ok(capsys, ["featurize", str(d / "reordered.csv"), str(tmp_path / "s.zarr"), "--append", *common])
    _ok(capsys, ["featurize", str(d / "train.csv"), str(tmp_path / "t.zarr"), *common])
    _ok(capsys, ["featurize", str(d / "test.csv"), str(tmp_path / "t.zarr"), "--append", *common])
    got, want = open_store(str(tmp_path / "s.zarr")), open_store(str(tmp_path / "t.zarr"))
    assert got.n_rows == want.n_rows == 600
    np.testing.assert_array_equal(got.features.compute(), want.features.compute())
    np.testing.assert_array_equal(got.labels.compute(), want.labels.compute())


def test_the_python_api_keeps_a_dataframes_names(tables, tmp_path):
    import dask.dataframe as dd

    from dask_kernels import GCWS, SoftmaxSGD, featurize, fit_incremental, open_store

    d, X = tables
    frame = pd.read_csv(d / "train.csv")
    gcws = GCWS(n_components=32).fit(frame[FEATURES].to_numpy())
    path = str(tmp_path / "s.zarr")
    store = featurize(dd.from_pandas(frame[FEATURES], npartitions=2), gcws, labels=frame["kind"].to_numpy(),
                      store=path, progress=False)
    assert store.feature_names == FEATURES and open_store(path).feature_names == FEATURES
    model = fit_incremental(SoftmaxSGD(code_bits=8, eta0=0.01), open_store(path), epochs=1, progress=False)
    assert list(model.feature_names_in_) == FEATURES
    other = dd.from_pandas(frame[["b", "a", "c", "d"]], npartitions=1)
    with pytest.raises(ValueError, match=r"input columns \['a', 'b', 'c', 'd'\], the appended rows \['b', 'a'"):
        featurize(other, gcws, labels=frame["kind"].to_numpy(), store=path, mode="append", progress=False)
    with pytest.raises(ValueError, match="3 feature names for 4 input columns"):
        featurize(X[:50], gcws, store=str(tmp_path / "n.zarr"), feature_names=["a", "b", "c"], progress=False)
    assert featurize(X[:50], gcws, store=str(tmp_path / "u.zarr"), progress=False).feature_names is None
    assert featurize(frame[FEATURES], gcws, store=str(tmp_path / "p.zarr"), progress=False).feature_names == FEATURES


def test_fit_incremental_keeps_a_dask_dataframes_names(tables):
    import dask.dataframe as dd

    from dask_kernels import GCWS, SoftmaxSGD, fit_incremental

    d, X = tables
    frame = pd.read_csv(d / "train.csv")
    gcws = GCWS(n_components=32).fit(frame[FEATURES].to_numpy())
    model = fit_incremental(SoftmaxSGD(code_bits=8, eta0=0.01), dd.from_pandas(frame[FEATURES], npartitions=2),
                            dd.from_pandas(frame["kind"], npartitions=2), feature_map=gcws, epochs=1, progress=False)
    assert list(model.feature_names_in_) == FEATURES
    shuffled = pd.read_csv(d / "shuffled.csv")
    np.testing.assert_array_equal(model.predict(shuffled), model.predict(X[400:]))


def test_a_dataframe_of_integer_column_names_predicts_by_them(tables, tmp_path):
    # pd.DataFrame(X) names its columns 0, 1, ...: the model keeps them as '0', '1', ... and
    # predicting on the very frame it was trained on raised "the rows have no column '0'"
    from sklearn.linear_model import SGDClassifier

    from dask_kernels import GCWS, featurize, fit_incremental, open_store

    _, X = tables
    y = (X[:, 0] > np.median(X[:, 0])).astype(int)
    frame = pd.DataFrame(X)
    gcws = GCWS(n_components=32).fit(X)
    direct = fit_incremental(SGDClassifier(loss="log_loss", random_state=0), frame, y, feature_map=gcws, epochs=1,
                             progress=False)
    store = featurize(frame, gcws, labels=y, store=str(tmp_path / "s.zarr"), progress=False)
    stored = fit_incremental(SGDClassifier(loss="log_loss", random_state=0), open_store(store.path), epochs=1,
                             progress=False)
    for model in (direct, stored):
        assert list(model.feature_names_in_) == ["0", "1", "2", "3"]
        np.testing.assert_array_equal(model.predict(frame), model.predict(X))
        np.testing.assert_array_equal(model.predict(frame[[3, 1, 2, 0]]), model.predict(X))
        np.testing.assert_array_equal(model.predict_proba(frame), model.predict_proba(X))
        assert model.score(frame, y) == model.score(X, y)
    clash = frame.assign(extra=0.0)
    clash.columns = [0, 1, 2, 3, "1"]  # two columns the model would both call '1'
    with pytest.raises(ValueError, match=r"the rows have 2 columns named '1' \(\[1, '1'\]\)"):
        direct.predict(clash)


def test_the_model_takes_a_list_of_rows(tables):
    # as scikit-learn's estimators do: it raised AttributeError: 'list' object has no attribute 'shape'
    from sklearn.linear_model import SGDClassifier

    from dask_kernels import GCWS, fit_incremental

    _, X = tables
    y = (X[:, 0] > np.median(X[:, 0])).astype(int)
    model = fit_incremental(SGDClassifier(loss="log_loss", random_state=0), X, y,
                            feature_map=GCWS(n_components=32).fit(X), epochs=1, progress=False)
    rows = X[:7].tolist()
    np.testing.assert_array_equal(model.predict(rows), model.predict(X[:7]))
    np.testing.assert_array_equal(model.predict_proba(rows), model.predict_proba(X[:7]))
    np.testing.assert_array_equal(model.decision_function(rows), model.decision_function(X[:7]))
    assert model.score(rows, y[:7].tolist()) == model.score(X[:7], y[:7])
