"""Random feature selection (May 2017, Algorithm 1): keep the random features a model uses most.

A random feature of RFF, NRFF or Fastfood is its id (every parameter is a pure function of
``(seed, id)``, see ``feature_ids``), so the pool of candidate features is a list of integers
and the result is a map with the kept ``feature_ids``: nothing but ids is ever stored.

Algorithm (target D features, T rounds, R rows per round, schedule ``s_t = round(t D / T)``)::

    pool = []
    for t = 1 .. T:
        add D - s_{t-1} new ids to the pool (ids never used before: next, next + 1, ...)
        one SGD pass over R rows drawn at random (seeded by (seed, t)) on the pool's features
        keep the s_t ids whose weight rows W_j (over classes) have the largest sum_c W_jc^2

About ``D (T + 1) / 2`` features are generated in all. Fastfood is selected by whole blocks of d
features (d = the padded input width): the features of a block share their Hadamard transforms,
so a block costs the same whether one or all of its features are kept; D is rounded up to a
multiple of d and a block's score is the sum of its features' scores.

What the map learns from the data (``scale``, ``gamma="scale"``) is learned once from all rows
before the first round: a feature id is then the same feature in every round and in the result.

Random rows: round t takes the R rows with the smallest
``rank(seed, STREAM_SELECT_ROWS, t, i)`` (:mod:`dask_kernels.rng`), a pure function of the seed.
"""

from __future__ import annotations

import numbers
import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._compat import HasMethods, Interval
from ._docstrings import fill_doc

from .io.sparse import SparsePartitions
from .maps.base import FeatureMap, ensure_fitted
from .maps._parallel import RUNTIME_PARAMS
from .maps.fastfood import Fastfood, padded_dim
from .maps.nrff import NRFF
from .maps.rff import RFF
from .maps.spec import from_spec
from .rng import rank_array, register_stream

STREAM_SELECT_ROWS = register_stream("select.rows", 71)

#: Maps whose features can be selected (they take ``feature_ids``).
SELECTABLE = (RFF, NRFF, Fastfood)


def _n_rows(X):
    return int(X.shape[0])


def _take_rows(X, rows):
    """Rows ``rows`` (sorted) of a NumPy, SciPy or Dask array or of SparsePartitions, in memory."""
    if isinstance(X, SparsePartitions):
        return _take_partition_rows(X, rows)
    if hasattr(X, "dask"):
        import dask

        part = X[rows]
        (part,) = dask.compute(part)
        return part
    if sp.issparse(X):
        return sp.csr_matrix(X)[rows]
    return np.asarray(X[rows])


def _take_partition_rows(X, rows):
    """Rows ``rows`` (sorted) of SparsePartitions as one CSR matrix: only the partitions that
    hold them are loaded, in one compute."""
    import dask

    starts = np.asarray(X.row_offsets, dtype=np.int64)
    part_of = np.searchsorted(starts, rows, side="right") - 1
    needed = np.unique(part_of)
    delayed = X.to_delayed()
    loaded = dask.compute(*[delayed[i] for i in needed])
    pieces = [part[0][rows[part_of == i] - starts[i]] for i, part in zip(needed, loaded)]
    return sp.vstack(pieces, format="csr") if pieces else sp.csr_matrix((0, X.n_features))


#: Bytes of input rows one read of Dask input may gather: the rows of several rounds are read
#: in one pass over the data when they fit (an out-of-core array is read about
#: ``T R d 8 / GATHER_BYTES`` times, not T times).
GATHER_BYTES = 256 * 2**20


class _RoundRows:
    """Each round's rows, read from Dask input in as few passes as fit in :data:`GATHER_BYTES`."""

    def __init__(self, X, plans):
        self.X, self.plans, self.cache, self.passes = X, plans, {}, 0
        self.lazy = hasattr(X, "dask") or isinstance(X, SparsePartitions)
        self.per_pass = max(1, GATHER_BYTES // (int(X.shape[1]) * 8))  # rows per pass

    def __call__(self, t):
        rows = self.plans[t]
        if not self.lazy:
            return _take_rows(self.X, rows)
        if t not in self.cache:
            self.cache.clear()
            union, rounds = np.empty(0, dtype=np.int64), []
            for u in range(t, len(self.plans)):
                merged = np.union1d(union, self.plans[u])
                if rounds and merged.size > self.per_pass:
                    break
                union, rounds = merged, rounds + [u]
            block = _take_rows(self.X, union)
            self.passes += 1
            for u in rounds:
                self.cache[u] = block[np.searchsorted(union, self.plans[u])]
        return self.cache.pop(t)


def _learned_state(base, X, unit):
    """``base`` (a clone) fitted once on the training rows ``X``: what it learns from the data
    (``scale``, ``gamma="scale"``) comes from all rows, as ``featurize`` and ``fit_incremental``
    fit such maps (``fits_partitioned``); a map that learns nothing reads only the first row."""
    template = clone(base).set_params(n_components=unit, feature_ids=None)  # the fit does not depend on the ids
    return ensure_fitted(template, lambda: _take_rows(X, np.arange(1)), all_rows=X)


def _with_ids(fitted, ids, runtime):
    """``fitted`` with the features ``ids``: the same learned state, so an id is the same random
    feature in every round and in the result. Built from the spec (a map is its spec), then the
    runtime parameters (``n_jobs``) the spec leaves out."""
    spec = fitted.spec()
    spec["params"] = {**spec["params"], "n_components": int(ids.size), "feature_ids": ids.tolist()}
    spec["state"] = {k: v for k, v in spec["state"].items() if k != "sidecar"}  # the ids are given, not a sidecar
    spec["n_output_features"] = int(ids.size)
    return from_spec(spec).set_params(**runtime)


def _labels(y):
    if hasattr(y, "dask"):
        if y.ndim != 1:
            raise ValueError(f"y must be 1-d (one label per row), got shape {y.shape}")
        return y
    return column_or_1d(y, warn=True)


def round_rows(seed: int, t: int, n: int, r: int) -> np.ndarray:
    """The sorted rows of round ``t``: the ``r`` rows with the smallest
    ``rank(seed, STREAM_SELECT_ROWS, t, i)``, i < n (all rows when r >= n)."""
    if r >= n:
        return np.arange(n)
    ranks = rank_array(np.uint64(seed), np.uint64(STREAM_SELECT_ROWS), np.array([t], dtype=np.uint64),
                       np.arange(n, dtype=np.uint64))[0]
    return np.sort(np.argpartition(ranks, r - 1)[:r])


@fill_doc
class RandomFeatureSelector(TransformerMixin, BaseEstimator):
    """Select D random features of a Fourier map by their weights (May 2017, Algorithm 1).

    Parameters
    ----------
    feature_map : RFF, NRFF or Fastfood
        The map whose features are candidates (its parameters other than ``n_components``
        and ``feature_ids`` are kept; unfitted is fine).
    n_components : int, default=1000
        D, the number of features kept (Fastfood: rounded up to a multiple of the padded
        input width d, whole blocks).
    subset_rows : int or None, default=None
        R, the rows of each round's SGD pass (None: ``min(n_samples, max(2 D, 1000))``; the
        thesis finds R = O(D) enough).
    rounds : int, default=10
        T, the number of selection rounds (the thesis uses 50).
    estimator : classifier with ``partial_fit`` and ``coef_``, or None, default=None
        The model of each round, cloned for every round; one ``partial_fit`` call on the R rows
        is the SGD pass; ``coef_`` holds the weights, (n_classes, n_features) or the transpose
        (for a low-rank model, the product W = U V, as in the thesis). None: ``SGDClassifier(loss="log_loss", alpha=1e-5,
        learning_rate="constant", eta0=1 / mean ||z||^2)``, one-vs-rest.
    seed : int, default=0
        Seed of the row subsets (and of the estimator's ``random_state`` when it is None).

    Attributes
    ----------
    feature_ids_ : ndarray of int64, shape (n_output_features,)
        The kept ids, increasing.
    feature_map_ : FeatureMap
        ``feature_map`` with ``n_components = len(feature_ids_)`` and the kept ``feature_ids``,
        fitted: use it like any map (``featurize``, stores, ``fit_incremental``, the CLI). What
        the map learns from the data (``scale``, ``gamma="scale"``) is learned once from all
        training rows, as ``featurize`` learns it, and every round selects on that state.
    scores_ : ndarray of float64
        ``sum_c W_jc^2`` of each kept id in the last round (Fastfood: its block's mean).
    n_generated_ : int
        Distinct feature ids generated (about ``D (T + 1) / 2``).
    n_data_passes_ : int
        Reads of Dask input (the rows of consecutive rounds are gathered in one pass while they
        fit in 256 MiB); 0 for in-memory input.
    n_features_in_ : int
    classes_ : ndarray
    selection_seconds_ : float
        Wall time of :meth:`fit`.

    %(selection_references)s

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import RFF
    >>> from dask_kernels.select import RandomFeatureSelector
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 5)); y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> sel = RandomFeatureSelector(RFF(gamma=0.5, seed=1), n_components=20, rounds=4).fit(X, y)
    >>> sel.feature_map_.n_components, sel.n_generated_
    (20, 50)
    >>> sel.transform(X).shape
    (300, 20)
    """

    _parameter_constraints = {
        "feature_map": [HasMethods(["fit", "transform", "spec"])],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "subset_rows": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "rounds": [Interval(numbers.Integral, 1, None, closed="left")],
        "estimator": [None, HasMethods(["partial_fit"])],
        "seed": [Interval(numbers.Integral, 0, 2**64 - 1, closed="both")],
    }

    def __init__(
        self,
        feature_map: FeatureMap,
        *,
        n_components: int = 1000,
        subset_rows: int | None = None,
        rounds: int = 10,
        estimator: Any = None,
        seed: int = 0,
    ) -> None:
        self.feature_map = feature_map
        self.n_components = n_components
        self.subset_rows = subset_rows
        self.rounds = rounds
        self.estimator = estimator
        self.seed = seed

    def _estimator(self, Z, t):
        if self.estimator is not None:
            est = clone(self.estimator)
            if "random_state" in est.get_params() and est.get_params()["random_state"] is None:
                est.set_params(random_state=(int(self.seed) + t) % 2**32)
            return est
        from sklearn.linear_model import SGDClassifier

        sq = Z.multiply(Z).sum(axis=1) if sp.issparse(Z) else np.einsum("ij,ij->i", Z, Z, dtype=np.float64)
        eta0 = 1.0 / max(float(np.mean(sq)), 1e-12)
        return SGDClassifier(loss="log_loss", alpha=1e-5, learning_rate="constant", eta0=eta0,
                             random_state=(int(self.seed) + t) % 2**32)

    def fit(self, X: Any, y: Any) -> RandomFeatureSelector:
        """Run the selection on rows ``X`` (NumPy, SciPy sparse or Dask array, or
        :class:`~dask_kernels.io.SparsePartitions` from ``read_svmlight``) with labels ``y``.

        Only ``rounds`` subsets of ``subset_rows`` rows are read, one per round.

        Returns
        -------
        self
        """
        start = time.perf_counter()
        self._validate_params()
        base = self.feature_map
        if not isinstance(base, SELECTABLE):
            raise ValueError(f"feature_map must be one of {[c.__name__ for c in SELECTABLE]} (maps whose features "
                             f"are ids), got {type(base).__name__}")
        X = self._validate_rows(X)
        n = _n_rows(X)
        if y is None:
            raise ValueError("RandomFeatureSelector requires y to be passed, but the target y is None (the "
                             "features are selected by a classifier's weights)")
        y = _labels(y)
        if n != _n_rows(y):
            raise ValueError(f"X has {n} rows, y has {_n_rows(y)}")
        if hasattr(y, "dask"):
            import dask

            (y,) = dask.compute(y)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError(f"y has {self.classes_.size} class; selection needs at least 2")
        width = int(X.shape[1])
        unit = padded_dim(width) if isinstance(base, Fastfood) else 1
        D = -(-int(self.n_components) // unit)  # in units (features, or Fastfood blocks)
        T = int(self.rounds)
        R = min(n, int(self.subset_rows) if self.subset_rows is not None else max(2 * int(self.n_components), 1000))
        pool = np.empty(0, dtype=np.int64)  # unit ids
        next_id = 0
        plans = [None] + [round_rows(int(self.seed), t, n, R) for t in range(1, T + 1)]
        read = _RoundRows(X, plans)
        fitted = _learned_state(base, X, unit)  # once: every round's features share this state
        runtime = {k: v for k, v in base.get_params(deep=False).items() if k in RUNTIME_PARAMS}
        for t in range(1, T + 1):
            new = D - pool.size
            pool = np.concatenate([pool, np.arange(next_id, next_id + new, dtype=np.int64)])
            next_id += new
            ids = (pool[:, None] * unit + np.arange(unit)).ravel()
            Xt, yt = read(t), y[plans[t]]
            fmap = _with_ids(fitted, ids, runtime)
            Z = fmap.transform(Xt)
            est = self._estimator(Z, t)
            est.partial_fit(Z, yt, classes=self.classes_)
            coef = np.atleast_2d(np.asarray(getattr(est, "coef_", np.empty(0)), dtype=np.float64))
            if coef.shape[-1] != ids.size and coef.shape[0] == ids.size:
                coef = coef.T  # a (features, classes) layout
            if coef.shape[-1] != ids.size:
                raise ValueError(f"estimator {type(est).__name__}: coef_ of shape {coef.shape} after partial_fit, "
                                 f"expected (n_classes, {ids.size}) weights of the pool's features")
            score = (coef**2).sum(axis=0).reshape(-1, unit).sum(axis=1)
            keep = round(t * D / T)
            order = np.argsort(-score, kind="stable")[:keep]  # pool is increasing: ties keep the lower id
            pool, pool_score = pool[np.sort(order)], score[np.sort(order)]
        self.n_generated_ = int(next_id * unit)
        self.feature_ids_ = (pool[:, None] * unit + np.arange(unit)).ravel()
        self.scores_ = np.repeat(pool_score / unit, unit)
        self.feature_map_ = _with_ids(fitted, self.feature_ids_, runtime)
        self.n_data_passes_ = read.passes
        self.selection_seconds_ = time.perf_counter() - start
        return self

    def _validate_rows(self, X):
        """The shape of ``X`` checked at the boundary (2-d, at least one row and one column) and
        ``n_features_in_`` set; in-memory input through scikit-learn's ``validate_data`` (its
        messages, feature names), Dask input and svmlight partitions without reading them. Values are checked by the map."""
        if not hasattr(X, "dask") and not isinstance(X, SparsePartitions):
            return validate_data(self, X, reset=True, accept_sparse=("csr", "csc", "coo"), dtype=None,
                                 ensure_all_finite=False)
        what = "svmlight partitions" if isinstance(X, SparsePartitions) else "a Dask array"
        if len(X.shape) != 2:
            raise ValueError(f"expected 2-d rows (n_samples, n_features), got {what} of shape {X.shape}")
        if not X.shape[0] >= 1 or not X.shape[1] >= 1:  # NaN (unknown) row counts fail here too
            raise ValueError(f"found {what} of shape {X.shape}: selection needs at least one row and one "
                             "feature" + ("" if isinstance(X, SparsePartitions) else
                                          " (and known chunk sizes: X.compute_chunk_sizes())"))
        self.n_features_in_ = int(X.shape[1])
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True  # fit needs the labels
        tags.input_tags.sparse = get_tags(self.feature_map).input_tags.sparse
        tags.transformer_tags.preserves_dtype = []  # the output dtype is the map's, as for the map itself
        return tags

    def transform(self, X: Any) -> np.ndarray:
        """The selected features of ``X``: ``feature_map_.transform(X)``."""
        check_is_fitted(self)
        if hasattr(X, "columns") and not hasattr(X, "dask"):
            # a pandas DataFrame: its names are checked against the selector's (the map was fitted on
            # the bare rows, and warned that it was fitted without names)
            X = validate_data(self, X, reset=False, accept_sparse=("csr", "csc", "coo"), dtype=None,
                              ensure_all_finite=False)
        return self.feature_map_.transform(X)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The selected map's output feature names (``feature_map_.get_feature_names_out``);
        ``input_features``, if given, must be the input's, as for the maps. Defining it gives the
        selector scikit-learn's ``set_output`` (e.g. ``transform="pandas"`` in a Pipeline)."""
        check_is_fitted(self)
        known = getattr(self, "feature_names_in_", None)
        if input_features is not None and known is not None and not np.array_equal(
                np.asarray(input_features, dtype=object), known):
            raise ValueError("input_features is not equal to feature_names_in_")
        return self.feature_map_.get_feature_names_out(input_features)


@fill_doc
def select_features(feature_map: FeatureMap, X: Any, y: Any, *, n_components: int = 1000,
                    subset_rows: int | None = None,
                    rounds: int = 10, estimator: Any = None, seed: int = 0) -> FeatureMap:
    """Random feature selection (May 2017, Algorithm 1): a fitted map with the kept features.

    Shorthand for ``RandomFeatureSelector(...).fit(X, y).feature_map_``; see
    :class:`RandomFeatureSelector` for the parameters and the algorithm.

    Returns
    -------
    FeatureMap
        ``feature_map`` with ``n_components`` kept ``feature_ids``, fitted on ``X`` (what it
        learns from the data, such as ``scale`` or ``gamma="scale"``, from all rows).
        Long id lists are kept beside its spec (the sidecar: saved models, feature stores and
        :func:`dask_kernels.maps.save_map` carry them).

    %(selection_references)s

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import RFF, select_features
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 5)); y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> fmap = select_features(RFF(gamma=0.5, seed=1), X, y, n_components=20, rounds=4)
    >>> fmap.spec()["params"]["feature_ids"][:5]  # kept ids, increasing
    [3, 7, 16, 17, 20]
    """
    return RandomFeatureSelector(feature_map, n_components=n_components, subset_rows=subset_rows, rounds=rounds,
                                 estimator=estimator, seed=seed).fit(X, y).feature_map_
