"""Models trained on class names: ``classes_`` holds the names (a ``<U`` array, saved without
pickle and bounded when loaded), ``predict`` returns them, ``score`` compares them.

Before, a store's string labels came back as a Zarr UTF-32 array, a ``.npy`` of strings was
refused, and a saved model's ``classes_`` of any width loaded unchecked.
"""

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import SGDClassifier

from dask_kernels import GCWS, KernelModel, featurize, fit_incremental, load_model
from dask_kernels.labels import MAX_CLASS_CHARS
from dask_kernels.learn.softmax import SoftmaxSGD

NAMES = np.array(["circle", "square", "triangle"])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(5)
    X = rng.random((300, 4))
    y = NAMES[np.digitize(X[:, 0] + X[:, 1], [0.7, 1.3])]
    fmap = GCWS(n_components=64, seed=2).fit(X)
    # str objects, as pandas and Parquet give them: stored as codes, read back as a <U array
    store = featurize(X, fmap, labels=da.from_array(y.astype(object), chunks=100), store=str(tmp_path_factory.mktemp("store") / "s.zarr"), block_rows=100,
                      progress=False)
    return X, y, store


@pytest.mark.parametrize("estimator", [SGDClassifier(random_state=0), SoftmaxSGD(random_state=0)],
                         ids=["sgd", "softmax"])
def test_a_model_trained_on_a_store_of_names_predicts_names_and_round_trips(data, tmp_path, estimator):
    X, y, store = data
    assert store.labels.dtype.kind == "U"
    model = fit_incremental(estimator, store, epochs=3, progress=False)
    assert model.classes_.tolist() == NAMES.tolist() and model.classes_.dtype.kind == "U"
    pred = model.predict(X)
    assert set(pred.tolist()) <= set(NAMES.tolist())
    accuracy = model.score(store, store.labels)
    assert accuracy == pytest.approx(np.mean(pred == y)) and accuracy > 0.6  # 3 classes: chance is 1/3
    model.save(str(tmp_path / "m"))
    loaded = load_model(str(tmp_path / "m"))
    assert loaded.classes_.tolist() == NAMES.tolist()
    np.testing.assert_array_equal(loaded.predict(X), pred)


def test_a_dask_series_of_names_trains_without_a_store(data, tmp_path):
    import dask.dataframe as dd

    X, y, _ = data
    frame = dd.from_pandas(pd.DataFrame(X, columns=list("abcd")), npartitions=3)
    with dask.config.set({"dataframe.convert-string": False}):  # str objects, not pyarrow strings
        series = dd.from_pandas(pd.Series(y, dtype=object), npartitions=3)
    assert series.dtype == object
    model = fit_incremental(SGDClassifier(random_state=0), frame, series, feature_map=GCWS(n_components=64, seed=2),
                            epochs=2, progress=False)
    assert model.classes_.dtype.kind == "U" and model.classes_.tolist() == NAMES.tolist()
    model.save(str(tmp_path / "m"))  # str objects would need pickle: saved as <U
    assert load_model(str(tmp_path / "m")).predict(X[:5]).tolist() == model.predict(X[:5]).tolist()


def test_a_saved_class_name_longer_than_the_bound_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((40, 3))
    y = np.array(["a", "b" * (MAX_CLASS_CHARS + 1)])[(X[:, 0] > 0.5).astype(int)]
    KernelModel(None, SGDClassifier(random_state=0).fit(X, y)).save(str(tmp_path / "m"))
    with pytest.raises(ValueError, match=rf"classes_: must be at most .* of at most MAX_CLASS_CHARS = {MAX_CLASS_CHARS}"):
        load_model(str(tmp_path / "m"))
    with pytest.raises(ValueError, match="MAX_CLASS_CHARS"):  # nor trained out of core
        fit_incremental(SGDClassifier(random_state=0), X, y, epochs=1, progress=False)
