"""KernelModel: a feature map paired with a trained linear model, savable without pickle (its
on-disk format: :mod:`dask_kernels.learn.persist`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from .._estimator import Estimator, available_if, estimator_type, is_regressor
from ..blocks import InputValueError, row_bounds, validate_block
from .persist import read_model, save_model

if TYPE_CHECKING:  # names used only in annotations
    from ..maps.base import FeatureMap
    import dask.array as da


#: Rows featurized at once when predicting on in-memory input (bounds the expanded width).
PREDICT_BLOCK_ROWS = 8192


def _is_store(X):
    return hasattr(X, "features") and hasattr(X, "feature_map")


def _estimator_has(model: KernelModel, method: str) -> bool:
    """True if the model's estimator has ``method``; else the estimator's own AttributeError,
    which says why (scikit-learn's: "probability estimates are not available for loss='hinge'")."""
    getattr(model.estimator, method)
    return True


class KernelModel(Estimator):
    """A feature map and the estimator trained on its features: predicts on raw rows.

    A scikit-learn estimator: ``get_params``/``set_params`` reach into both parts
    (``estimator__alpha``, ``feature_map__n_components``), :meth:`fit` fits both in memory, so a
    ``KernelModel`` can be a ``Pipeline`` step or searched with ``GridSearchCV``; it is a
    classifier, regressor or clusterer as its estimator is. :func:`dask_kernels.fit_incremental`
    returns one trained out of core.

    Parameters
    ----------
    feature_map : FeatureMap or None
        Map from raw rows to stored features (None: the estimator sees raw rows).
    estimator : scikit-learn estimator
        Trained on ``feature_map.expand(feature_map.transform(X))``.
    history : list of dict, optional
        Per-epoch records from :func:`dask_kernels.fit_incremental`.

    Attributes
    ----------
    classes_ : ndarray
        The estimator's classes (classifiers).
    n_features_in_ : int
        Raw input features.
    feature_names_in_ : ndarray of str
        Names of the input columns, in order, when the model was trained on a table whose
        columns have names (``dask-kernels train`` on a Parquet or CSV file). Kept when saved;
        ``dask-kernels predict`` and ``score`` read the columns of that name from a table, and
        the methods from a pandas or dask DataFrame.
    svmlight_zero_based_ : bool
        Whether the svmlight input the model was trained on numbered its columns from 0 (set by
        :func:`dask_kernels.fit_incremental` on svmlight input, or on a feature store made from
        it; absent otherwise and in models saved before it was kept). Kept when saved;
        ``dask-kernels predict`` and ``score`` read svmlight input with this index base.

    Notes
    -----
    Methods accept NumPy arrays and SciPy sparse matrices (featurized in blocks of
    ``PREDICT_BLOCK_ROWS`` rows and answered eagerly), dask arrays (answered lazily with
    ``map_blocks``, block by block on the workers, as dask-ml's ``ParallelPostFit``), dask
    DataFrames (likewise, without a pass over the rows for their lengths: the result's row
    chunks are of unknown size, as ``to_dask_array()``'s), and
    feature stores made with the same map (their stored features are used directly, lazily).

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

    def __init__(self, feature_map: FeatureMap | None = None, estimator: Any = None,
                 history: list[dict] | None = None) -> None:
        self.feature_map = feature_map
        self.estimator = estimator
        self.history = history

    def __repr__(self, N_CHAR_MAX=700):
        m = "raw" if self.feature_map is None else getattr(self.feature_map, "method", type(self.feature_map).__name__)
        return f"KernelModel({m}, {type(self.estimator).__name__}, {len(self.history or [])} epochs)"

    @property
    def _estimator_type(self):
        return None if self.estimator is None else estimator_type(self.estimator)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self.estimator is not None:
            inner = self.estimator.__sklearn_tags__()
            tags.estimator_type = inner.estimator_type
            tags.classifier_tags, tags.regressor_tags = inner.classifier_tags, inner.regressor_tags
        tags.input_tags.sparse = True
        return tags

    def __sklearn_is_fitted__(self):
        return self.estimator is not None and any(
            k.endswith("_") and not k.startswith("__") for k in vars(self.estimator))

    @property
    def classes_(self):
        return self.estimator.classes_

    @property
    def n_features_in_(self):
        if self.feature_map is None:
            return self.estimator.n_features_in_
        return self.feature_map.n_features_in_

    def fit(self, X: Any, y: Any = None, **fit_params: Any) -> KernelModel:
        """Fit the feature map (if any) and then the estimator on in-memory rows ``X``.

        For data that does not fit in memory use :func:`dask_kernels.fit_incremental`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), optional
        **fit_params
            Passed to ``estimator.fit`` (e.g. ``sample_weight``).

        Returns
        -------
        self
        """
        if self.estimator is None:
            raise ValueError("KernelModel.fit needs an estimator")
        self.__dict__.pop("svmlight_zero_based_", None)  # in-memory rows: no svmlight file to number
        if self.feature_map is not None:
            self.feature_map.fit(X)
        F = X if self.feature_map is None else self.features(X)
        args = () if y is None else (y,)
        self.estimator.fit(F, *args, **fit_params)
        return self

    # -- features ---------------------------------------------------------------------------
    def features(self, X: Any, row_offset: int = 0) -> np.ndarray | sp.csr_matrix | da.Array:
        """Learner features of in-memory raw rows (what the estimator consumes); errors name
        global rows (``row_offset`` is the number of ``X[0]``). Without a map, the raw rows,
        checked (scikit-learn's message for a NaN names no row)."""
        if self.feature_map is None:
            return validate_block(X, row_offset=row_offset)
        fmap = self.feature_map
        return self._learner_input(fmap.transform_block(fmap.validate_block(X, row_offset), row_offset))

    def _learner_input(self, stored):
        """What the estimator consumes of stored features (:func:`.sources.learner_features`)."""
        from .sources import learner_features

        return learner_features(self.feature_map, stored, self.estimator)

    def _apply(self, method, X, width=None, dtype=None):
        fn = getattr(self.estimator, method)
        from ..io.tabular import as_rows  # dask DataFrames -> dask arrays

        # lengths=False: learning a DataFrame's partition lengths reads every row at the call; the
        # lazy result's row chunks are of unknown size (NaN) instead, as dask's own to_dask_array()
        X, _ = as_rows(self._by_name(X), lengths=False)
        if _is_store(X):
            return self._apply_store(fn, X, width, dtype)
        if hasattr(X, "dask") and hasattr(X, "map_blocks"):
            return self._apply_dask(fn, X, width, dtype)
        if sp.issparse(X):  # checked whole: slicing a malformed matrix silently drops entries
            X = validate_block(X)
        elif not hasattr(X, "shape"):  # a list of rows, as scikit-learn's estimators take
            X = np.asarray(X)
        n = X.shape[0]
        if n == 0:  # the estimators' own message would name the features' width, not the rows'
            raise ValueError(f"X has no rows (shape {X.shape}): nothing to {method}")
        if n <= PREDICT_BLOCK_ROWS:
            return fn(self.features(X))
        outs = [fn(self.features(X[a:b], a)) for a, b in row_bounds(n, PREDICT_BLOCK_ROWS)]
        return np.concatenate(outs)

    def _by_name(self, X):
        """A DataFrame's columns the model was trained on, by name, in order (``feature_names_in_``)."""
        return by_name(X, getattr(self, "feature_names_in_", None))

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
        return self._map_blocks(X, _raw_block, fn, self.features(probe), width, dtype)

    def _apply_store(self, fn, store, width, dtype):
        if self.feature_map is None or store.feature_map.spec() != self.feature_map.spec():
            raise ValueError(f"the store at {getattr(store, 'path', '?')} was made by a different "
                             "feature map than this model's: predict on raw rows instead")
        F = store.features.rechunk({1: -1})
        probe = np.zeros((1, F.shape[1]), dtype=F.dtype)  # stays lazy: no data is read
        return self._map_blocks(F, _stored_block, fn, self._learner_input(probe), width, dtype)

    def _map_blocks(self, A, block, fn, probe_features, width, dtype):
        """``block(b, model, method)`` over A's row blocks; the model is one shared key of the
        graph (:func:`dask_kernels._graph.shared_key`), not a copy of its coefficients per task."""
        from dask.base import tokenize

        from .._graph import shared_key

        out_dtype, out_w = self._out_meta(fn, probe_features, width, dtype)
        model = shared_key(self, f"dk-model-{tokenize(A.name, fn.__name__, id(self))}")
        empty = np.empty((0,) if out_w is None else (0, out_w), out_dtype)  # an empty block's result
        if out_w is None:
            return A.map_blocks(block, model, fn.__name__, empty, dtype=out_dtype, drop_axis=1,
                                chunks=(A.chunks[0],), meta=np.empty((0,), out_dtype))
        return A.map_blocks(block, model, fn.__name__, empty, dtype=out_dtype, chunks=(A.chunks[0], (out_w,)),
                            meta=np.empty((0, 0), out_dtype))

    # -- estimator API ------------------------------------------------------------------------
    def predict(self, X: Any) -> np.ndarray | da.Array:
        """Predicted labels / values / clusters of raw rows (or a store's rows)."""
        return self._apply("predict", X)

    @available_if(lambda self: _estimator_has(self, "predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray | da.Array:
        """Class probabilities (estimators with ``predict_proba``; ``hasattr`` says which)."""
        return self._apply("predict_proba", X)

    @available_if(lambda self: _estimator_has(self, "decision_function"))
    def decision_function(self, X: Any) -> np.ndarray | da.Array:
        """Decision values of linear classifiers (estimators with ``decision_function``)."""
        return self._apply("decision_function", X)

    def score(self, X: Any, y: Any) -> float:
        """Accuracy (classifiers) or R^2 (regressors) on raw rows; dask input is computed."""
        pred = self.predict(X)
        if hasattr(pred, "compute"):
            pred = pred.compute()
        if hasattr(y, "compute"):
            y = y.compute()
        y = np.asarray(y)
        if pred.shape[0] != y.shape[0]:
            raise ValueError(f"{y.shape[0]} labels for {pred.shape[0]} rows")
        from .metrics import model_score

        return model_score(is_regressor(self.estimator), y, pred)[1]

    # -- persistence --------------------------------------------------------------------------
    def save(self, path: str | os.PathLike, overwrite: bool = False, storage_options: dict | None = None) -> str:
        """Write the model to directory ``path``: ``model.json`` + ``arrays.npz`` (no pickle).

        ``model.json`` holds the feature map's spec, the estimator's class name and parameters,
        its scalar state and the history; ``arrays.npz`` its learned arrays. The model is
        written to a temporary directory beside ``path`` and renamed into place; if anything
        fails the temporary directory is removed and ``path`` is untouched.

        On an fsspec URL (``s3://bucket/models/m.dk``; object stores have no rename) the files
        are uploaded with ``model.json`` last: it is the marker that the model is complete
        (:func:`load_model` needs it). Replacing a saved model removes its ``model.json``
        first, so a save killed midway never leaves a mix of two models that loads.

        Parameters
        ----------
        path : str or path-like
            Local path, ``file://`` or fsspec URL. Must not exist, be an empty directory, or
            (with ``overwrite=True``) hold a saved model: a directory with only ``model.json``
            (with this package's format marker) and ``arrays.npz`` (or, on a URL, only those
            names without ``model.json``: a save that did not finish). Anything else (a file,
            a folder of other files) is refused and never modified.
        overwrite : bool, default=False
            Replace a saved model at ``path``.
        storage_options : dict, optional
            fsspec options for a URL ``path`` (e.g. credentials, ``client_kwargs``).

        Returns
        -------
        str
            ``path``.

        Raises
        ------
        FileExistsError
            If ``path`` exists and is not replaceable (see above).
        TypeError
            If the estimator is not one of the savable classes
            (``dask_kernels.learn.persist.SAVABLE``).
        """
        return save_model(self, path, overwrite, storage_options)


def load_model(path: str | os.PathLike, *, max_bytes: int | None = None,
               storage_options: dict | None = None) -> KernelModel:
    """Load a :class:`KernelModel` saved with :meth:`KernelModel.save`.

    Never executes code from the file and never allocates more than the file justifies: the
    estimator class must be one of ``dask_kernels.learn.persist.SAVABLE`` (chosen by name from that fixed list), its
    parameters go through scikit-learn's parameter validation, the arrays are read without
    pickle, only those the metadata declares, each checked against its declared shape and
    dtype and against a size cap before it is allocated (see
    :func:`dask_kernels._npz.load_npz`), the learned arrays' shapes are checked
    against each other and against the feature map, and the feature map is rebuilt with
    :func:`~dask_kernels.maps.from_spec`, which validates every field.

    Parameters
    ----------
    path : str or path-like
        The model directory: a local path, ``file://`` or fsspec URL (``s3://...``; its files
        are copied to a temporary folder and checked there).
    max_bytes : int, optional
        Lower cap on the bytes the arrays may take in memory.
    storage_options : dict, optional
        fsspec options for a URL ``path``.

    Raises
    ------
    ValueError
        Naming the file and key or member, for anything malformed, tampered with or too large.
    FileNotFoundError
        If ``path`` is not a directory with a ``model.json``.

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
    fmap, estimator, history, names, zero_based = read_model(path, max_bytes=max_bytes,
                                                              storage_options=storage_options)
    return with_svmlight_base(with_feature_names(KernelModel(fmap, estimator, history), names), zero_based)


def with_feature_names(model: KernelModel, names: Any) -> KernelModel:
    """``model`` with ``feature_names_in_`` set to ``names``, the input's column names (None:
    unchanged)."""
    if names is not None:
        model.feature_names_in_ = np.asarray([str(n) for n in names], dtype=object)
    return model


def with_svmlight_base(model: KernelModel, zero_based: bool | None) -> KernelModel:
    """``model`` with ``svmlight_zero_based_`` set to ``zero_based`` (None: unchanged)."""
    if zero_based is not None:
        model.svmlight_zero_based_ = bool(zero_based)
    return model


def svmlight_base(source: Any) -> bool | None:
    """Whether the svmlight input behind ``source`` numbers its columns from 0: ``source`` is
    SparsePartitions (``read_svmlight``), a source holding them (``.parts``), or a feature store
    (or a source holding it, ``.store``) whose every segment was featurized from svmlight files.
    None: other input, or segments read with different bases."""
    store = getattr(source, "store", source)  # a StoreSource holds the store
    if _is_store(store) and isinstance(getattr(store, "info", None), dict):
        fps = [s.info.get("fingerprint", {}).get("input") for s in [store, *getattr(store, "segments", [])]]
    else:
        fps = [getattr(getattr(source, "parts", source), "fingerprint", None)]
    bases = {fp.get("zero_based") if isinstance(fp, dict) and fp.get("kind") == "svmlight" else None for fp in fps}
    return bases.pop() if len(bases) == 1 and None not in bases else None


def by_name(X: Any, names: Any, what: str = "the rows") -> Any:
    """The columns ``names`` of a pandas or dask DataFrame ``X``, in that order (the columns a model
    was trained on); anything else, or no ``names``, as it is. ``what`` names ``X`` in errors."""
    if names is None or not hasattr(X, "columns"):
        return X
    names = [str(n) for n in names]
    columns = {}  # a column by its name as the model keeps it (a string: pd.DataFrame(X)'s are ints)
    for c in X.columns:
        columns.setdefault(str(c), []).append(c)
    missing = [n for n in names if n not in columns]
    if missing:
        raise ValueError(f"{what} have no column {missing[0]!r}; the model was trained on columns {names}")
    twice = [n for n in names if len(columns[n]) > 1]
    if twice:
        raise ValueError(f"{what} have {len(columns[twice[0]])} columns named {twice[0]!r} "
                         f"({columns[twice[0]]!r}); the model was trained on columns {names}")
    return X[[columns[n][0] for n in names]]


def _raw_block(b, model, method, empty, block_info=None):
    """A task: the model's ``method`` on one block of raw rows (its global first row from dask);
    ``empty`` for a block of no rows (a filtered DataFrame's partition), which estimators refuse."""
    if b.shape[0] == 0:
        return empty
    first = block_info[0]["array-location"][0][0] if block_info else 0
    if first == first:
        return getattr(model.estimator, method)(model.features(b, first))
    # rows of unknown chunk sizes (a dask DataFrame's partitions): no global row number to give
    try:
        features = model.features(b, 0)
    except InputValueError as e:
        raise e.at(f"row {e.row} of partition {block_info[0]['chunk-location'][0]}") from None
    return getattr(model.estimator, method)(features)


def _stored_block(b, model, method, empty):
    """A task: the model's ``method`` on one block of a store's features (``empty`` for no rows)."""
    if b.shape[0] == 0:
        return empty
    return getattr(model.estimator, method)(model._learner_input(b))
