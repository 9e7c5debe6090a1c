"""KernelModel: a feature map paired with a trained linear model, savable without pickle."""

import importlib
import json
import os
import shutil

import numpy as np

from ..maps.base import from_spec
from ..sidecar import model_arrays, save_model_arrays
from .checkpoint import load_npz, save_npz
from .state import get_state, json_params, params_from_json, set_state

MODEL_FORMAT = "dask-kernels-model-1"

#: Estimators a saved model may hold: their learned state is plain arrays. Loading picks the
#: class from this list by name, so a model file can never name arbitrary code.
SAVABLE = {
    "SGDClassifier": "sklearn.linear_model",
    "SGDRegressor": "sklearn.linear_model",
    "Perceptron": "sklearn.linear_model",
    "PassiveAggressiveClassifier": "sklearn.linear_model",
    "PassiveAggressiveRegressor": "sklearn.linear_model",
    "LogisticRegression": "sklearn.linear_model",
    "RidgeClassifier": "sklearn.linear_model",
    "Ridge": "sklearn.linear_model",
    "LinearRegression": "sklearn.linear_model",
    "LinearSVC": "sklearn.svm",
    "LinearSVR": "sklearn.svm",
    "MultinomialNB": "sklearn.naive_bayes",
    "BernoulliNB": "sklearn.naive_bayes",
    "ComplementNB": "sklearn.naive_bayes",
    "GaussianNB": "sklearn.naive_bayes",
    "MiniBatchKMeans": "sklearn.cluster",
}

#: Rows featurized at once when predicting on in-memory input (bounds the expanded width).
PREDICT_BLOCK_ROWS = 8192


def _is_store(X):
    return hasattr(X, "features") and hasattr(X, "feature_map")


class KernelModel:
    """A feature map and the estimator trained on its features: predicts on raw rows.

    Parameters
    ----------
    feature_map : FeatureMap or None
        Fitted map from raw rows to stored features (None: the estimator sees raw rows).
    estimator : fitted scikit-learn estimator
        Trained on ``feature_map.expand(feature_map.transform(X))``.
    history : list of dict, optional
        Per-epoch records from :func:`dask_kernels.fit_incremental`.

    Notes
    -----
    Methods accept NumPy arrays and SciPy sparse matrices (featurized in blocks of
    ``PREDICT_BLOCK_ROWS`` rows and answered eagerly), dask arrays (answered lazily with
    ``map_blocks``), and feature stores made with the same map (their stored features are used
    directly, lazily).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import SGDClassifier
    >>> from dask_kernels import GCWS, KernelModel
    >>> X = np.random.default_rng(0).random((200, 3)); y = (X[:, 0] > 0.5).astype(int)
    >>> gcws = GCWS(n_components=32).fit(X)
    >>> model = KernelModel(gcws, SGDClassifier(random_state=0).fit(gcws.expand(gcws.transform(X)), y))
    >>> model.predict(X[:5]).shape
    (5,)
    """

    def __init__(self, feature_map, estimator, history=None):
        self.feature_map = feature_map
        self.estimator = estimator
        self.history = list(history or [])

    def __repr__(self):
        m = "raw" if self.feature_map is None else self.feature_map.method
        return f"KernelModel({m}, {type(self.estimator).__name__}, {len(self.history)} epochs)"

    # -- features ---------------------------------------------------------------------------
    def features(self, X):
        """Learner features of in-memory raw rows (what the estimator consumes)."""
        if self.feature_map is None:
            return X
        return self.feature_map.expand(self.feature_map.transform(X))

    def _apply(self, method, X, width=None, dtype=None):
        fn = getattr(self.estimator, method)
        if _is_store(X):
            return self._apply_store(fn, X, width, dtype)
        if hasattr(X, "dask") and hasattr(X, "map_blocks"):
            return self._apply_dask(fn, X, width, dtype)
        n = X.shape[0]
        if n <= PREDICT_BLOCK_ROWS:
            return fn(self.features(X))
        outs = [fn(self.features(X[a:a + PREDICT_BLOCK_ROWS])) for a in range(0, n, PREDICT_BLOCK_ROWS)]
        return np.concatenate(outs)

    def _out_meta(self, fn, sample_block, width, dtype):
        # a 1-row evaluation on a made-up row gives the result's dtype and width (e.g. the
        # class labels' dtype, the number of classes)
        out = fn(sample_block)
        return out.dtype if dtype is None else dtype, (out.shape[1] if out.ndim == 2 else None)

    def _apply_dask(self, fn, X, width, dtype):
        if X.ndim != 2:
            raise ValueError(f"expected 2-D rows, got shape {X.shape}")
        X = X.rechunk({1: -1})
        probe = np.ones((1, X.shape[1]), dtype=X.dtype)  # stays lazy: no data is read
        out_dtype, out_w = self._out_meta(fn, self.features(probe), width, dtype)

        def block(b):
            return fn(self.features(b))

        if out_w is None:
            return X.map_blocks(block, dtype=out_dtype, drop_axis=1, chunks=(X.chunks[0],),
                                meta=np.empty((0,), out_dtype))
        return X.map_blocks(block, dtype=out_dtype, chunks=(X.chunks[0], (out_w,)),
                            meta=np.empty((0, 0), out_dtype))

    def _apply_store(self, fn, store, width, dtype):
        if self.feature_map is None or store.feature_map.spec() != self.feature_map.spec():
            raise ValueError(f"the store at {getattr(store, 'path', '?')} was made by a different "
                             "feature map than this model's: predict on raw rows instead")
        F = store.features.rechunk({1: -1})
        expand = self.feature_map.expand
        probe = np.zeros((1, F.shape[1]), dtype=F.dtype)  # stays lazy: no data is read
        out_dtype, out_w = self._out_meta(fn, expand(probe), width, dtype)

        def block(b):
            return fn(expand(b))

        if out_w is None:
            return F.map_blocks(block, dtype=out_dtype, drop_axis=1, chunks=(F.chunks[0],),
                                meta=np.empty((0,), out_dtype))
        return F.map_blocks(block, dtype=out_dtype, chunks=(F.chunks[0], (out_w,)),
                            meta=np.empty((0, 0), out_dtype))

    # -- estimator API ------------------------------------------------------------------------
    def predict(self, X):
        """Predicted labels / values / clusters of raw rows (or a store's rows)."""
        return self._apply("predict", X)

    def predict_proba(self, X):
        """Class probabilities (estimators with ``predict_proba``)."""
        if not hasattr(self.estimator, "predict_proba"):
            raise AttributeError(f"{self.estimator!r} has no predict_proba (e.g. use loss='log_loss')")
        return self._apply("predict_proba", X)

    def decision_function(self, X):
        """Decision values of linear classifiers."""
        return self._apply("decision_function", X)

    def score(self, X, y):
        """Accuracy (classifiers) or R^2 (regressors) on raw rows; dask input is computed."""
        pred = self.predict(X)
        if hasattr(pred, "compute"):
            pred = pred.compute()
        if hasattr(y, "compute"):
            y = y.compute()
        y = np.asarray(y)
        if pred.shape[0] != y.shape[0]:
            raise ValueError(f"{y.shape[0]} labels for {pred.shape[0]} rows")
        from sklearn.base import is_regressor
        from sklearn.metrics import accuracy_score, r2_score

        return float(r2_score(y, pred) if is_regressor(self.estimator) else accuracy_score(y, pred))

    # -- persistence --------------------------------------------------------------------------
    def save(self, path):
        """Write the model to directory ``path``: ``model.json`` + ``arrays.npz`` (no pickle).

        ``model.json`` holds the feature map's spec, the estimator's class name and parameters,
        its scalar state and the history; ``arrays.npz`` its learned arrays. Replaces ``path``
        atomically (written beside it, then renamed).
        """
        name = type(self.estimator).__name__
        if name not in SAVABLE or type(self.estimator).__module__.split(".")[0] != "sklearn":
            raise TypeError(f"cannot save a {name}: saved models hold linear models and naive Bayes "
                            f"only ({', '.join(sorted(SAVABLE))})")
        arrays, state = get_state(self.estimator)
        meta = {
            "format": MODEL_FORMAT,
            "feature_map": None if self.feature_map is None else self.feature_map.spec(),
            "estimator": {"class": name, "params": json_params(self.estimator), "state": state},
            "history": self.history,
        }
        path = os.fspath(path).rstrip("/")
        tmp = f"{path}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        save_npz(os.path.join(tmp, "arrays.npz"), arrays, {"format": MODEL_FORMAT})
        save_model_arrays(self.feature_map, tmp)  # nystroem: the map's fitted arrays, if any
        with open(os.path.join(tmp, "model.json"), "w") as f:
            json.dump(meta, f, indent=1)
        if os.path.exists(path):
            old = f"{path}.old-{os.getpid()}"
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old)
        else:
            os.replace(tmp, path)
        return path


def load_model(path):
    """Load a :class:`KernelModel` saved with :meth:`KernelModel.save`.

    Never executes code from the file: the estimator class must be one of ``SAVABLE`` and the
    arrays are read with ``allow_pickle=False``.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from sklearn.linear_model import SGDClassifier
    >>> from dask_kernels import KernelModel, load_model
    >>> X = np.random.default_rng(0).random((50, 3)); y = (X[:, 0] > 0.5).astype(int)
    >>> model = KernelModel(None, SGDClassifier(random_state=0).fit(X, y))
    >>> path = model.save(os.path.join(tempfile.mkdtemp(), "model.dk"))
    >>> bool((load_model(path).predict(X) == model.predict(X)).all())
    True
    """
    path = os.fspath(path)
    with open(os.path.join(path, "model.json")) as f:
        meta = json.load(f)
    if meta.get("format") != MODEL_FORMAT:
        raise ValueError(f"{path} is not a saved dask_kernels model (format {meta.get('format')!r})")
    name = meta["estimator"]["class"]
    if name not in SAVABLE:
        raise ValueError(f"{path} names estimator {name!r}, which is not a loadable model class")
    cls = getattr(importlib.import_module(SAVABLE[name]), name)
    estimator = cls(**params_from_json(meta["estimator"]["params"]))
    arrays, _ = load_npz(os.path.join(path, "arrays.npz"))
    set_state(estimator, arrays, meta["estimator"]["state"])
    fmap = None if meta["feature_map"] is None else from_spec(meta["feature_map"], arrays=model_arrays(path))
    return KernelModel(fmap, estimator, meta["history"])
