"""Out-of-core training: ``fit_incremental`` streams row blocks into ``partial_fit``.

Per epoch the rows are served in a seeded order that spans several blocks (:mod:`.shuffle`),
held-out rows left out, while the next window of blocks is read and the next step expanded in
background threads. After each epoch the held-out set is scored and the thesis' schedule
applied (:class:`.loop.Schedule`, ALGORITHMS.md section 5). The run's position and the
schedule's memory live in a :class:`.loop.LoopState`, which :class:`.checkpointer.Checkpointer`
saves with the estimator.

Determinism: every shuffle comes from ``numpy.random.default_rng`` keyed by ``(seed, epoch[,
window])``, a pure function of its key, so the only state a checkpoint needs besides the
estimator is the position ``(epoch, step)``. An interrupted run resumed from its checkpoint
performs exactly the same ``partial_fit`` calls as an uninterrupted one and ends with identical
coefficients.
"""

import numbers
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.base import is_classifier, is_regressor

from .checkpointer import Checkpointer
from .loop import LoopState, Schedule
from .metrics import LOWER_IS_BETTER, default_metric, evaluate
from .shuffle import EpochPlan, auto_window, held_out_rows
from .sources import ArraySource, StoreSource, as_source
from .state import copy_state, get_state, set_state

_HALVABLE = ("constant", "invscaling", "adaptive")


def _kind(estimator):
    if is_classifier(estimator):
        return "classifier"
    if is_regressor(estimator):
        return "regressor"
    return "clusterer"


def _halvable(estimator):
    params = estimator.get_params(deep=False)
    return "eta0" in params and params.get("learning_rate", "constant") in _HALVABLE


def _probabilistic(estimator):
    try:
        return hasattr(estimator, "predict_proba")
    except Exception:  # noqa: BLE001  (available_if raises before fit for some estimators)
        return False


class _HeldOut:
    """Held-out rows in stored form (small: codes or floats), scored in chunks."""

    def __init__(self, parts):
        self.parts = [(X, y) for X, y in parts if X.shape[0]]
        self.n_rows = sum(X.shape[0] for X, _ in self.parts)

    def score(self, estimator, expand, kind, classes):
        preds, probas, ys, inertia = [], [], [], 0.0
        proba_ok = kind == "classifier" and _probabilistic(estimator)
        for X, y in self.parts:
            F = expand(X)
            if kind == "clusterer":
                inertia += -float(estimator.score(F))
                continue
            preds.append(estimator.predict(F))
            if proba_ok:
                probas.append(estimator.predict_proba(F))
            ys.append(y)
        if kind == "clusterer":
            return evaluate(kind, None, None, inertia=inertia / max(self.n_rows, 1))
        y = np.concatenate(ys)
        return evaluate(kind, y, np.concatenate(preds), np.concatenate(probas) if proba_ok else None,
                        None if classes is None else np.asarray(classes))


def fit_incremental(
    estimator,
    source,
    y=None,
    *,
    feature_map=None,
    epochs=5,
    validation=0.1,
    seed=0,
    block_rows=None,
    shuffle_window="auto",
    prefetch=True,
    schedule="auto",
    min_improvement=0.01,
    metric="auto",
    early_stopping=True,
    patience=3,
    checkpoint=None,
    checkpoint_every=None,
    resume=True,
    classes=None,
    callback=None,
    progress=True,
):
    """Train ``estimator`` out of core on row blocks of a feature store or of raw input.

    Parameters
    ----------
    estimator : scikit-learn estimator with ``partial_fit``
        E.g. SGDClassifier, SGDRegressor, Perceptron, PassiveAggressiveClassifier,
        MultinomialNB/BernoulliNB (on GCWS one-hot codes), MiniBatchKMeans. Trained in place.
        If it has a ``random_state`` parameter that is None it is set to ``seed`` so that runs
        (and resumed runs) are reproducible.
    source : FeatureStore, path of a store, BlockSource, or raw rows
        A store's features are read block by block (every column chunk of a row block) and
        expanded with its feature map (GCWS codes -> one-hot CSR; floats unchanged). Raw rows
        (NumPy, memory-mapped, SciPy sparse or dask array) are featurized per block with
        ``feature_map`` (nothing stored), or used as they are without a map.
    y : array-like or dask array, optional
        Labels of raw rows (a store carries its own).
    feature_map : FeatureMap, optional
        Map for raw rows. An unfitted map is not changed: a clone is fitted on the first block
        that has rows (on all rows for Nystroem) and is the returned model's ``feature_map``,
        as in :func:`~dask_kernels.featurize`.
    epochs : int, default=5
        Maximum number of passes over the training rows.
    validation : float, BlockSource, store, (X, y) tuple or None, default=0.1
        Held-out data scored after every epoch. A float holds out that fraction of rows (a
        seeded random subset, read in one pass before training and kept in memory in stored
        form, e.g. codes); anything else is a separate held-out set (featurized with the same
        map). None disables evaluation, the schedule and early stopping.
    seed : int, default=0
        Seed of the shuffles and of the held-out selection.
    block_rows : int, optional
        Rows per block (default: the store's row chunks or the dask chunks; 10000 for NumPy).
    shuffle_window : "auto" or int, default="auto"
        Rows are shuffled across this many blocks at a time (a seeded shuffle buffer, see
        :mod:`dask_kernels.learn.shuffle`): each step (one ``partial_fit`` call) draws its rows
        from every block of its window, so label-sorted input trains like shuffled input.
        "auto" takes as many blocks as fit in about 128 MiB of stored features (every block of
        a small data set: a global permutation); 1 only shuffles rows within blocks (cheapest).
    prefetch : bool, default=True
        Read the next window and expand the next step in background threads while the current
        step trains.
    schedule : {"auto", None}, default="auto"
        The thesis' learning-rate schedule: halve ``eta0`` when the held-out metric improved by
        less than ``min_improvement`` (only for estimators with ``eta0`` and a constant,
        "invscaling" or "adaptive" learning rate; with SGD's default "optimal" rate nothing
        can be halved), revert to the start-of-epoch model when it got worse.
    min_improvement : float, default=0.01
        Relative improvement below which the learning rate is halved.
    metric : str, default="auto"
        Held-out metric driving the schedule and early stopping: "erp" for probabilistic
        classifiers, "error" (1 - accuracy) for other classifiers, "mse" for regressors,
        "inertia" for clusterers; or "log_loss", "accuracy", "r2".
    early_stopping : bool, default=True
        Stop after ``patience`` epochs without a new best held-out metric.
    patience : int, default=3
    checkpoint : path, optional
        File (npz + JSON, no pickle) rewritten atomically after every epoch and every
        ``checkpoint_every`` blocks: estimator state, the start-of-epoch model, the position,
        the learning rate and the history.
    checkpoint_every : int, optional
        Also checkpoint every this many steps (one per block) within an epoch.
    resume : bool, default=True
        If ``checkpoint`` exists, continue from it (it must come from the same source, seed
        and estimator parameters) instead of starting over.
    classes : array-like, optional
        Classes of a classifier; by default found in one pass over the labels.
    callback : callable, optional
        Called as ``callback(info)`` after every step (one ``partial_fit`` call) with a dict
        (epoch, position: steps done in the epoch, rows); raising from it stops training (the
        last checkpoint remains).
    progress : bool, default=True
        Print one line per epoch to stderr.

    Returns
    -------
    KernelModel
        The feature map, the trained estimator and ``history``: one dict per epoch with
        ``epoch``, ``rows``, ``seconds``, ``rows_per_s``, ``eta0``, the held-out metrics
        (accuracy, error, log_loss, erp / mse, r2 / inertia) and ``action`` ("first", "keep",
        "halve", "revert").

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import SGDClassifier
    >>> from dask_kernels import GCWS, fit_incremental
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 4)); y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> model = fit_incremental(SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.01),
    ...                         X, y, feature_map=GCWS(n_components=64).fit(X), epochs=3,
    ...                         block_rows=500, progress=False)
    >>> len(model.history) <= 3 and model.score(X, y) > 0.8
    True
    """
    from .model import KernelModel

    src, kind, classes = _check_inputs(estimator, source, y, feature_map, block_rows, epochs, schedule,
                                       seed, checkpoint, classes)
    metric = default_metric(kind, _probabilistic(estimator)) if metric == "auto" else metric
    if metric not in LOWER_IS_BETTER:
        raise ValueError(f"unknown metric {metric!r}; choose from {sorted(LOWER_IS_BETTER)}")
    sign = 1.0 if LOWER_IS_BETTER[metric] else -1.0
    window = _window(shuffle_window, src)
    held, fraction = _held_out(validation, src, kind, seed, block_rows)
    rule = Schedule(min_improvement, halve=schedule == "auto" and _halvable(estimator),
                    revert=schedule == "auto" and held is not None, early_stopping=early_stopping,
                    patience=int(patience))
    state, snapshot = LoopState(eta0=estimator.get_params(deep=False).get("eta0")), None
    ckpt = None
    if checkpoint is not None:
        ckpt = Checkpointer(checkpoint, {"source": src.fingerprint(), "seed": int(seed),
                                         "validation": _vdesc(validation), "shuffle_window": window,
                                         "estimator": type(estimator).__name__, "epochs": int(epochs)})
        if resume and ckpt.exists():
            state, snapshot = ckpt.load(estimator, n_steps=src.n_blocks, epochs=epochs,
                                        width=_learner_width(src), halvable=_halvable(estimator))
    fit_args = {"classes": classes} if kind == "classifier" else {}

    def prepare(item):  # runs in the prefetch thread: the step's rows, expanded
        X, yb, rows = item
        return (src.expand(X[rows]) if rows.size else None), (None if yb is None else yb[rows]), rows.size

    reader = ThreadPoolExecutor(max_workers=1) if prefetch else None
    expander = ThreadPoolExecutor(max_workers=1) if prefetch else None
    try:
        while not state.done and state.epoch < epochs:
            epoch, start = state.epoch, state.position
            plan = EpochPlan(src, seed, epoch, window, fraction)
            if start == 0:
                snapshot = copy_state(get_state(estimator)) if _is_fitted(estimator) else None
                state.epoch_rows, state.epoch_seconds = 0, 0.0
            t0 = time.perf_counter()
            for pos, (F, yb, n) in enumerate(_ahead(plan.steps(start, reader), prepare, expander), start):
                if n:
                    estimator.partial_fit(F, *(() if kind == "clusterer" else (yb,)), **fit_args)
                state.epoch_rows += n
                state.position = pos + 1
                if ckpt is not None and checkpoint_every and state.position % checkpoint_every == 0 \
                        and state.position < plan.n_steps:
                    state.epoch_seconds, t0 = state.epoch_seconds + time.perf_counter() - t0, time.perf_counter()
                    ckpt.save(estimator, snapshot, state)
                if callback is not None:
                    callback({"epoch": epoch, "position": state.position, "rows": n})
            record = _epoch_record(state, time.perf_counter() - t0, rule.halve)
            if held is not None:
                record.update(held.score(estimator, src.expand, kind, classes), metric=metric)
                record["action"] = rule.step(state, sign * record[metric], can_revert=snapshot is not None)
                if record["action"] == "revert":
                    set_state(estimator, *snapshot)
                if rule.halve:
                    estimator.set_params(eta0=state.eta0)
            state.history.append(record)
            state.epoch, state.position = epoch + 1, 0
            if ckpt is not None:
                ckpt.save(estimator, None, state)
            if progress:
                _print_record(record)
    finally:
        for pool in (reader, expander):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
    return KernelModel(src.feature_map, estimator, state.history)


def _check_inputs(estimator, source, y, feature_map, block_rows, epochs, schedule, seed, checkpoint, classes):
    """The source, the estimator's kind and classes; every argument error before any work."""
    if not hasattr(estimator, "partial_fit"):
        raise TypeError(f"{type(estimator).__name__} has no partial_fit: out-of-core training needs "
                        "an incremental estimator (e.g. SGDClassifier, SGDRegressor, MultinomialNB)")
    src = as_source(source, y, feature_map, block_rows)
    if src.n_rows == 0:
        raise ValueError("the training input has no rows: nothing to train on")
    kind = _kind(estimator)
    if kind != "clusterer" and not src.has_labels:
        raise ValueError(f"{type(estimator).__name__} needs labels but the source has none "
                         "(a store featurized without labels=..., or raw rows without y)")
    if int(epochs) < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    if schedule not in ("auto", None, False):
        raise ValueError(f"schedule must be 'auto' or None, got {schedule!r}")
    params = estimator.get_params(deep=False)
    if "random_state" in params:
        if params["random_state"] is None:
            estimator.set_params(random_state=int(seed))
        elif not isinstance(params["random_state"], (int, np.integer)) and checkpoint is not None:
            raise ValueError("checkpointed training needs an int random_state (a RandomState "
                             "instance cannot be restored identically)")
    if kind == "classifier":
        classes = np.asarray(src.classes() if classes is None else classes)
        if classes.size < 2:
            raise ValueError(f"a classifier needs at least two classes, the labels hold {classes.tolist()}")
    return src, kind, classes


def _held_out(validation, src, kind, seed, block_rows):
    """``(held-out set or None, held-out fraction of the training source)``."""
    held, fraction = None, 0.0
    if isinstance(validation, numbers.Real) and not isinstance(validation, bool):
        if not 0.0 < validation < 1.0:
            raise ValueError(f"validation fraction must be in (0, 1), got {validation}")
        fraction = float(validation)
        held = _HeldOut(src.read(i, held_out_rows(seed, i, b - a, fraction))
                        for i, (a, b) in enumerate(src.bounds))
    elif validation is not None:
        if isinstance(validation, tuple):
            vsrc = ArraySource(validation[0], validation[1] if len(validation) > 1 else None,
                               src.feature_map, block_rows=block_rows)
        else:
            vsrc = as_source(validation, block_rows=block_rows)
        if kind != "clusterer" and not vsrc.has_labels:
            raise ValueError("the validation data has no labels")
        held = _HeldOut(vsrc.read(i) for i in range(vsrc.n_blocks))
    if held is not None and held.n_rows == 0:
        raise ValueError("the held-out set is empty: use a larger validation fraction or more rows")
    return held, fraction


def _window(shuffle_window, src):
    if isinstance(shuffle_window, str) and shuffle_window == "auto":
        return auto_window(src)
    if not isinstance(shuffle_window, (int, np.integer)) or isinstance(shuffle_window, bool) or shuffle_window < 1:
        raise ValueError(f"shuffle_window must be 'auto' or an integer >= 1, got {shuffle_window!r}")
    return int(min(shuffle_window, src.n_blocks))


def _ahead(items, fn, pool):
    """Yield ``fn(item)`` for each item in order, computing the next one in ``pool``."""
    if pool is None:
        yield from map(fn, items)
        return
    pending = None
    for item in items:
        nxt = pool.submit(fn, item)
        if pending is not None:
            yield pending.result()
        pending = nxt
    if pending is not None:
        yield pending.result()


def _epoch_record(state, seconds, halve):
    seconds += state.epoch_seconds
    return {"epoch": state.epoch + 1, "rows": int(state.epoch_rows), "seconds": seconds,
            "rows_per_s": state.epoch_rows / seconds if seconds > 0 else float("nan"),
            "eta0": state.eta0 if halve else None}


def _is_fitted(estimator):
    return any(k.endswith("_") and not k.startswith("__") for k in vars(estimator))


def _vdesc(validation):
    if validation is None or (isinstance(validation, numbers.Real) and not isinstance(validation, bool)):
        return None if validation is None else float(validation)
    return "external"


def _print_record(r):
    keys = [k for k in ("accuracy", "erp", "log_loss", "mse", "r2", "inertia") if k in r]
    parts = [f"epoch {r['epoch']}", f"{r['rows']} rows", f"{r['rows_per_s']:,.0f} rows/s"]
    parts += [f"{k} {r[k]:.4f}" for k in keys]
    if r.get("eta0") is not None:
        parts.append(f"eta0 {r['eta0']:.3g}")
    if "action" in r:
        parts.append(r["action"])
    print("  ".join(parts), file=sys.stderr)


def _learner_width(src):
    from .model import learner_width

    if src.feature_map is not None:
        return learner_width(src.feature_map)
    if isinstance(src, StoreSource):
        return int(src.features.shape[1])
    if isinstance(src, ArraySource):
        return int(src.X.shape[1])
    return int(src.parts.n_features)
