"""Block sources: where :func:`~dask_kernels.fit_incremental` gets row blocks from.

A source cuts its rows into blocks and hands out, per block, the *stored form* of the features
(what a feature store holds: GCWS codes, Fourier floats, or raw rows when there is no map) with
the labels; :meth:`BlockSource.expand` turns a stored block into what the learner consumes
(GCWS: one-hot CSR). Keeping the stored form until the last moment keeps held-out sets and the
read-ahead buffer small.

* :class:`StoreSource` reads a feature store (anything with ``features``, ``labels``,
  ``feature_map`` and ``complete``, e.g. :func:`dask_kernels.open_store`). Every row block is
  assembled across *all* column chunks of the features, so every column is used.
* :class:`PartitionSource` does the same for partitioned sparse input (svmlight byte ranges).
* :class:`ArraySource` featurizes raw input (NumPy, memory-mapped ``.npy``, SciPy sparse, dask
  arrays) block by block with ``feature_map.transform_block``; nothing is stored. Without a
  feature map it passes the raw rows through (a linear baseline).
"""

from __future__ import annotations

import copy
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..blocks import row_bounds, validate_block
from ..io.dense import mapped
from ..labels import check_finite
from ..maps.base import ensure_fitted

#: scikit-learn's SGD family (classes of ``sklearn.linear_model``): dense rows go to them in the
#: dtype their loop trains in (:func:`sgd_dtype`).
SGD_FAMILY = ("SGDClassifier", "SGDRegressor", "Perceptron", "PassiveAggressiveClassifier",
              "PassiveAggressiveRegressor")


def in_sgd_family(estimator: Any) -> bool:
    """Whether ``estimator`` is of :data:`SGD_FAMILY`.

    Such an estimator exists only once ``sklearn.linear_model`` is imported, so a process that
    has not imported it (loading a :class:`~dask_kernels.SoftmaxSGD` model to predict or score)
    does not import it for this check (with its model_selection and metrics, about 110 modules).
    """
    linear_model = sys.modules.get("sklearn.linear_model")
    return linear_model is not None and isinstance(
        estimator, tuple(getattr(linear_model, n) for n in SGD_FAMILY if hasattr(linear_model, n)))


def learner_features(fmap: Any, stored: Any, estimator: Any = None) -> Any:
    """What the learner receives for a block of stored features: the one rule, used in this
    process and on the workers alike.

    The feature map's expansion of the stored form (GCWS codes -> one-hot CSR; floats as they
    are), or the stored block itself without a map. ``estimator`` is the learner (its
    parameters may ask for another form of the same features: an estimator built with
    ``code_bits``, such as :class:`~dask_kernels.SoftmaxSGD`, receives GCWS codes as stored).
    Dense floats for scikit-learn's SGD family are handed over as float64 (see
    :func:`sgd_dtype`), so that ``partial_fit`` neither converts nor copies them.
    """
    from .softmax import feeds_codes

    if fmap is not None and feeds_codes(estimator, fmap):
        return stored
    return sgd_dtype(stored if fmap is None else fmap.expand(stored), estimator)


def sgd_dtype(F: Any, estimator: Any = None) -> Any:
    """Dense float rows in the dtype scikit-learn's SGD family (SGDClassifier, SGDRegressor,
    Perceptron, the passive-aggressive models) trains in, C-ordered: float64, or the dtype of
    the coefficients an already fitted estimator has (its Cython loop refuses rows of another
    dtype); anything else unchanged.

    The loop accepts float32 but trains about 20% slower on dense float32 rows than on float64
    (scikit-learn 1.9; on sparse one-hot rows float32 is the faster one, so CSR is left
    alone). Converting where the step is prepared (a prefetch thread, or a worker) takes that
    work off the learner's thread; the model is then float64, as from in-memory
    ``partial_fit`` on float64 rows.
    """
    dtype = sgd_target(F.dtype, estimator) if isinstance(F, np.ndarray) else None
    if dtype is None:
        return F
    return F if F.dtype == dtype and F.flags.c_contiguous else np.ascontiguousarray(F, dtype=dtype)


def sgd_target(dtype: Any, estimator: Any = None) -> np.dtype | None:
    """The dtype :func:`sgd_dtype` gives dense rows of ``dtype`` for ``estimator``, or None
    if it leaves them as they are (not floats, or not an SGD-family estimator)."""
    if np.dtype(dtype).kind != "f" or not in_sgd_family(estimator):
        return None
    coef = getattr(estimator, "coef_", None)
    return coef.dtype if isinstance(coef, np.ndarray) and coef.dtype.kind == "f" else np.dtype(np.float64)


def _is_dask(a):
    return hasattr(a, "dask") and hasattr(a, "compute")


def _featurize(fmap, X, a, b, rows):
    """Stored-form features of raw rows ``a:b`` (or the selection ``rows`` of them); without a
    map the raw rows themselves, checked here (a NaN named by its row, not by the learner's
    message, which names none)."""
    numbers = None if rows is None else a + np.asarray(rows)
    if fmap is None:
        return validate_block(X, row_offset=a, row_numbers=numbers)
    X = fmap.validate_block(X, row_offset=a, row_numbers=numbers)
    return fmap.transform_block(X, row_offset=a)


def _fit_if_needed(fmap, first_block, n_features, all_rows=None):
    fmap = ensure_fitted(fmap, first_block, all_rows)  # unfitted: a fitted clone, as in featurize
    if fmap.n_features_in_ != n_features:
        raise ValueError(f"the feature map expects {fmap.n_features_in_} input features, "
                         f"the input has {n_features}")
    return fmap


def _bounds(n_rows, block_rows, chunks=None):
    if block_rows is None and chunks is not None:
        bounds = row_bounds(sizes=chunks)
    else:
        block_rows = int(block_rows or 10_000)
        if block_rows < 1:
            raise ValueError(f"block_rows must be >= 1, got {block_rows}")
        bounds = row_bounds(n_rows, block_rows)
    return [(a, b) for a, b in bounds if b > a]


class BlockSource:
    """Base class: ``n_rows``, ``bounds`` (list of ``(start, stop)``), ``feature_map``,
    ``n_input_features`` (the width of the rows read, before the map)."""

    feature_map = None
    n_rows = 0
    n_input_features = 0
    bounds = ()
    has_labels = False
    #: dask scheduler of this source's reads (None: the active one); "synchronous" in tasks
    #: that run on a worker, which read in their own thread where they run
    scheduler = None

    def synchronous(self):
        """A copy of this source whose reads run in the calling thread (for worker tasks)."""
        out = copy.copy(self)
        out.scheduler = "synchronous"
        return out

    @property
    def n_blocks(self):
        return len(self.bounds)

    def learner_width(self) -> int:
        """Features the learner sees: the map's (after :meth:`expand`), else the rows' own."""
        return learner_width(self.feature_map) if self.feature_map is not None else int(self.n_input_features)

    def read(self, i, rows=None):
        """``(stored_block, labels_or_None)`` of block ``i``; ``rows`` selects rows within it."""
        raise NotImplementedError

    def read_blocks(self, blocks, rows):
        """``[read(b, r) for b, r in zip(blocks, rows)]`` (sources may read them together)."""
        return [self.read(b, r) for b, r in zip(blocks, rows)]

    def read_split(self, blocks: list[int], selections: list[tuple]) -> list[list[tuple]]:
        """For each block, ``[read(b, rows) for rows in its selections]``; sources that can
        read a block once for all its selections do (a store, raw rows)."""
        return [[self.read(b, r) for r in sels] for b, sels in zip(blocks, selections)]

    def row_bytes(self):
        """Approximate bytes of one row in stored form (sizes the shuffle window)."""
        fmap = self.feature_map
        if fmap is not None:
            return int(fmap.n_output_features_) * np.dtype(fmap.output_dtype_).itemsize
        if getattr(self, "_row_bytes", None) is None:  # measured on block 0: read it once
            X, _ = self.read(0)
            self._row_bytes = max(1, (X.data.nbytes + X.indices.nbytes if sp.issparse(X) else X.nbytes)
                                  // max(1, X.shape[0]))
        return self._row_bytes

    def read_labels(self, i):
        """Labels of block ``i`` only (for finding the classes without reading features)."""
        raise NotImplementedError

    def classes(self):
        """Sorted distinct labels (one pass over the labels only)."""
        return np.unique(np.concatenate([np.unique(self.read_labels(i)) for i in range(self.n_blocks)]))

    #: Feed the stored codes as they are (set by :meth:`feed`: an estimator with ``code_bits``).
    codes = False

    @property
    def finite(self) -> bool:
        """The learner features are finite by construction: a feature map computes them from
        rows that passed its input contract (:mod:`.learner` then skips scikit-learn's scan)."""
        return self.feature_map is not None

    def feed(self, estimator):
        """Check what :func:`learner_features` gives ``estimator`` (GCWS codes as stored if it
        takes them: ``code_bits``, checked against the map's bits here, naming the store)."""
        from .softmax import feeds_codes

        self.codes = feeds_codes(estimator, self.feature_map, getattr(getattr(self, "store", None), "path",
                                                                     "the feature map"))
        return self

    def expand(self, stored, estimator=None):
        """Learner features of a stored block (see :func:`learner_features`)."""
        return stored if self.codes else learner_features(self.feature_map, stored, estimator)

    def fingerprint(self):
        """What must match for a checkpoint of this source to be resumed."""
        fmap = self.feature_map
        return {
            "n_rows": int(self.n_rows),
            "bounds": [list(b) for b in self.bounds],
            "spec": None if fmap is None else fmap.spec(),
        }


class StoreSource(BlockSource):
    """Row blocks of a feature store.

    Parameters
    ----------
    store : FeatureStore or duck-typed equivalent
        Needs ``features`` (2-D dask array), ``labels`` (1-D dask array or None),
        ``feature_map`` and ``complete``; ``path`` is used in messages when present.
    block_rows : int, optional
        Rows per block; by default the store's row chunks.
    """

    def __init__(self, store, block_rows=None):
        where = getattr(store, "path", "the feature store")
        if not getattr(store, "complete", False):
            raise ValueError(
                f"{where} is incomplete: featurization did not finish writing every block. "
                "Re-run dask_kernels.featurize with the same arguments to complete it.")
        feats = store.features
        if feats.ndim != 2:
            raise ValueError(f"{where}: features must be 2-D, got shape {feats.shape}")
        self.store = store
        self.features = feats
        self.labels = store.labels
        self.feature_map = store.feature_map
        self.n_rows, self.n_input_features = int(feats.shape[0]), int(feats.shape[1])
        width = getattr(self.feature_map, "n_output_features_", feats.shape[1])
        if feats.shape[1] != width:
            raise ValueError(f"{where}: features have {feats.shape[1]} columns but the stored "
                             f"spec says {width}")
        if self.labels is not None:
            if self.labels.shape[0] != self.n_rows:
                raise ValueError(f"{where}: {self.labels.shape[0]} labels for {self.n_rows} "
                                 "feature rows: labels are misaligned with the features")
            self.has_labels = True
        self.bounds = _bounds(self.n_rows, block_rows, feats.chunks[0] if block_rows is None else None)
        self._blocks_are_stored = None  # see _direct

    def read(self, i, rows=None):
        import dask

        if self._direct():
            X, y = self._read_direct([i])[0]
        else:
            a, b = self.bounds[i]
            # one compute: the row slice spans every column chunk, so whole rows come back
            parts = (self.features[a:b],) + ((self.labels[a:b],) if self.has_labels else ())
            got = dask.compute(*parts, scheduler=self.scheduler)
            X = np.asarray(got[0])
            y = np.asarray(got[1]) if self.has_labels else None
        if rows is not None:
            X = X[rows]
            y = None if y is None else y[rows]
        return X, y

    def _direct(self) -> bool:
        """The store reads its own blocks (``read_block``, checked as its dask arrays check
        them) and the reads would run in this process: the source's arrays are the store's
        own, as :func:`~dask_kernels.open_store` made them (``is_stored_array``:
        not mapped, sliced or joined with appended segments), its blocks are the stored ones,
        and the scheduler is dask's threaded or synchronous one (never a distributed client's)."""
        import dask.base
        import dask.local
        import dask.threaded

        if self._blocks_are_stored is None:
            blocks = getattr(self.store, "blocks", None)
            from ..pipeline.store import is_stored_array

            own = all(is_stored_array(a, name)
                      for name, a in (("features", self.features), ("labels", self.labels)) if a is not None)
            self._blocks_are_stored = (own and callable(getattr(self.store, "read_block", None)) and callable(blocks)
                                       and [tuple(b) for b in blocks()] == [tuple(b) for b in self.bounds])
        scheduler = dask.base.get_scheduler(scheduler=self.scheduler)
        return self._blocks_are_stored and scheduler in (None, dask.threaded.get, dask.local.get_sync)

    def _read_direct(self, blocks: list[int]) -> list[tuple]:
        """``[(features, labels or None)]`` of whole stored blocks from ``store.read_block``:
        the same checked arrays as a dask compute of the rows, without the graph and the copy
        dask makes of a single chunk (~6 ms of CPU per 10 MB block); blocks in parallel on
        as many threads as dask's threaded scheduler would take, in this thread if synchronous."""
        import dask.base
        import dask.local

        def one(i: int) -> tuple:
            got = self.store.read_block(int(i))
            return np.asarray(got["features"]), (np.asarray(got["labels"]) if self.has_labels else None)

        workers = min(len(blocks), os.cpu_count() or 1)
        if workers <= 1 or dask.base.get_scheduler(scheduler=self.scheduler) is dask.local.get_sync:
            return [one(i) for i in blocks]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, blocks))

    def read_blocks(self, blocks, rows):
        import dask

        if self._direct():
            out = []
            for (X, y), r in zip(self._read_direct(blocks), rows):
                out.append((X, y) if r is None else (X[r], None if y is None else y[r]))
            return out
        # one compute for all the blocks: the scheduler reads their chunks in parallel
        parts = []
        for i in blocks:
            a, b = self.bounds[i]
            parts += [self.features[a:b]] + ([self.labels[a:b]] if self.has_labels else [])
        got = dask.compute(*parts, scheduler=self.scheduler)
        step = 2 if self.has_labels else 1
        out = []
        for j, r in enumerate(rows):
            X = np.asarray(got[step * j])
            y = np.asarray(got[step * j + 1]) if self.has_labels else None
            if r is not None:
                X, y = X[r], (None if y is None else y[r])
            out.append((X, y))
        return out

    def read_split(self, blocks: list[int], selections: list[tuple]) -> list[list[tuple]]:
        whole = self.read_blocks(blocks, [None] * len(blocks))  # one read of each block
        return [[(X[r], None if y is None else y[r]) for r in sels] for (X, y), sels in zip(whole, selections)]

    def row_bytes(self):
        return int(self.features.shape[1]) * self.features.dtype.itemsize

    @property
    def finite(self) -> bool:
        """Also: every block read is checked against its digest (what the map wrote)."""
        return self.feature_map is not None and bool(getattr(self.store, "verify", False))

    def read_labels(self, i):
        a, b = self.bounds[i]
        return np.asarray(self.labels[a:b].compute(scheduler=self.scheduler))

    def classes(self):
        import dask.array as da

        return np.asarray(da.unique(self.labels).compute())  # one graph: parallel on a cluster

    def fingerprint(self):
        fp = super().fingerprint()
        fp["store"] = str(getattr(self.store, "path", ""))
        return fp


class ArraySource(BlockSource):
    """Raw rows featurized block by block (nothing stored).

    Parameters
    ----------
    X : ndarray, memory-mapped array, SciPy sparse matrix or dask array of shape (n, d)
    y : array-like or dask array of shape (n,), optional
    feature_map : FeatureMap, optional
        Fitted map (an unfitted one is fitted on the first block). None trains on raw rows.
    block_rows : int, optional
        Rows per block (default: the dask row chunks, else 10000).

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import GCWS
    >>> from dask_kernels.learn import ArraySource
    >>> X = np.random.default_rng(0).random((100, 5)); y = (X[:, 0] > 0.5).astype(int)
    >>> src = ArraySource(X, y, GCWS(n_components=16).fit(X), block_rows=32)
    >>> src.n_blocks, src.read(0)[0].shape
    (4, (32, 16))
    """

    def __init__(self, X, y=None, feature_map=None, block_rows=None):
        if not (_is_dask(X) or sp.issparse(X)):
            X = np.asarray(X) if not isinstance(X, np.ndarray) else X
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (rows, features), got shape {X.shape}")
        if _is_dask(X) and np.isnan(X.shape[0]):
            raise ValueError("X has row chunks of unknown sizes (e.g. featurize(ddf) without a store, or "
                             "ddf.to_dask_array()): blocks need their row numbers; call X.compute_chunk_sizes() "
                             "first, or pass the DataFrame itself")
        if sp.issparse(X):  # checked whole: slicing a malformed matrix silently drops entries
            X = validate_block(X)
        self.X = X
        self.n_rows, self.n_input_features = int(X.shape[0]), int(X.shape[1])
        if y is not None:
            if not (_is_dask(y) or isinstance(y, np.ndarray)):  # a np.memmap stays one (see __getstate__)
                y = np.asarray(y)
            if y.ndim != 1 or y.shape[0] != self.n_rows:
                raise ValueError(f"labels have shape {tuple(y.shape)} but X has {self.n_rows} rows: "
                                 "labels are misaligned with the features")
            self.has_labels = True
        self.y = y
        # rows and labels of a Parquet partition from one read of the file, not one each
        # (:func:`~dask_kernels.io._layers.read_together`; only where both are computed: the
        # labels alone, e.g. the classes' pass, keep their own cheaper graph)
        self._together = None
        if _is_dask(X) and y is not None and _is_dask(y):
            from ..io._layers import read_together  # noqa: PLC0415  (only for dask input)

            joint = read_together(X, y)
            self._together = joint if joint[0] is not X else None
        chunks = X.chunks[0] if _is_dask(X) and block_rows is None else None
        self.bounds = _bounds(self.n_rows, block_rows, chunks)
        if feature_map is not None:
            feature_map = _fit_if_needed(feature_map, lambda: self._rows(*self.bounds[0]), X.shape[1], X)
        self.feature_map = feature_map

    def __getstate__(self):
        # a file NumPy maps (np.load(mmap_mode="r")) travels as its path, not as its data: a
        # Client's workers map it again (the held-out set and the steps read it there)
        state = dict(self.__dict__)
        for name in ("X", "y"):
            state[name] = mapped(state[name]) or state[name]
        return state

    def _rows(self, a, b, rows=None):
        X = self.X[a:b]
        if _is_dask(X):
            X = X.compute(scheduler=self.scheduler)
        if rows is not None:
            X = X[rows]
        return sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)

    def _block(self, i):
        """``(raw rows, labels or None)`` of block ``i``, computed together when they share reads."""
        a, b = self.bounds[i]
        if self._together is None:
            X, y = self._rows(a, b), (self.read_labels(i) if self.has_labels else None)
        else:
            import dask  # noqa: PLC0415

            X, y = dask.compute(self._together[0][a:b], self._together[1][a:b], scheduler=self.scheduler)
            X, y = (sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)), np.asarray(y)
        if y is not None:  # the learners check no label of a step whose features are finite by construction
            check_finite(y, a)
        return X, y

    def read(self, i, rows=None):
        a, b = self.bounds[i]
        X, y = self._block(i)
        if rows is not None:
            X, y = X[rows], (None if y is None else y[rows])
        return _featurize(self.feature_map, X, a, b, rows), y

    def read_split(self, blocks: list[int], selections: list[tuple]) -> list[list[tuple]]:
        out = []
        for i, sels in zip(blocks, selections):  # raw rows read once, each selection featurized as read(i, rows)
            a, b = self.bounds[i]
            X, y = self._block(i)
            out.append([(_featurize(self.feature_map, X[r], a, b, r), None if y is None else y[r]) for r in sels])
        return out

    def read_labels(self, i):
        a, b = self.bounds[i]
        y = self.y[a:b]
        return np.asarray(y.compute(scheduler=self.scheduler) if _is_dask(y) else y)


class PartitionSource(BlockSource):
    """Partitioned sparse rows (e.g. :func:`dask_kernels.read_svmlight`), one block per partition,
    featurized on the fly.

    Parameters
    ----------
    parts : SparsePartitions or duck-typed equivalent
        Needs ``loader(i) -> (csr, labels_or_None, qid_or_None)``, ``row_counts``,
        ``n_features`` and ``has_labels``.
    feature_map : FeatureMap, optional
        As for :class:`ArraySource`.
    """

    def __init__(self, parts, feature_map=None):
        self.parts = parts
        self.bounds = row_bounds(sizes=parts.row_counts)
        self.n_rows = self.bounds[-1][1] if self.bounds else 0
        self.has_labels = bool(parts.has_labels)
        self.n_input_features = int(parts.n_features)
        if feature_map is not None:
            feature_map = _fit_if_needed(feature_map, self._first_rows, self.n_input_features, parts)
        self.feature_map = feature_map

    def _first_rows(self):
        """Rows of the first partition that has any (a long comment header, or a line longer
        than the blocksize, leaves leading partitions empty)."""
        for i, n in enumerate(self.parts.row_counts):
            if n:
                return sp.csr_matrix(self.parts.loader(i)[0])
        raise ValueError("the input has no rows: nothing to fit the feature map on")

    def read(self, i, rows=None):
        a, b = self.bounds[i]
        X, y, _ = self.parts.loader(i)
        X = validate_block(X, row_offset=a)  # whole, before rows are picked out of it
        if X.shape[0] != b - a:
            raise ValueError(f"partition {i} has {X.shape[0]} rows, its row count says {b - a}")
        if rows is not None:
            X = X[rows]
            y = None if y is None else np.asarray(y)[rows]
        return _featurize(self.feature_map, X, a, b, rows), (None if y is None else np.asarray(y))

    def read_labels(self, i):
        return np.asarray(self.parts.loader(i)[1])


def as_source(data, y=None, feature_map=None, block_rows=None):
    """A :class:`BlockSource` for a source, a feature store, or raw input (+ map)."""
    if isinstance(data, BlockSource):
        if y is not None or feature_map is not None:
            raise ValueError("pass labels and feature map to the BlockSource itself")
        return data
    if hasattr(data, "features") and hasattr(data, "feature_map"):
        if y is not None:
            raise ValueError("a feature store carries its own labels: do not pass y")
        if feature_map is not None:
            raise ValueError("a feature store carries its own feature map: do not pass feature_map")
        return StoreSource(data, block_rows=block_rows)
    if hasattr(data, "loader") and hasattr(data, "row_counts"):
        if y is not None:
            raise ValueError("partitioned sparse input carries its own labels: do not pass y")
        return PartitionSource(data, feature_map)
    if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
        from ..pipeline.store import open_store  # noqa: PLC0415  (the store reader, on first use)

        return StoreSource(open_store(data), block_rows=block_rows)
    from ..io.tabular import as_rows  # dask DataFrames/Series -> dask arrays of known lengths

    data, y = as_rows(data, y)
    return ArraySource(data, y, feature_map, block_rows=block_rows)


def learner_width(fmap: Any) -> int:
    """Number of features the learner sees from ``fmap`` (after :meth:`expand`)."""
    probe = np.zeros((0, int(fmap.n_output_features_)), dtype=fmap.output_dtype_)  # no rows: nothing allocated
    return int(fmap.expand(probe).shape[1])
