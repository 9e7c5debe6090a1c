"""Out-of-core training: ``fit_incremental`` streams row blocks into ``partial_fit``.

Per epoch the rows are served in a seeded order that spans several blocks (:mod:`.shuffle`),
held-out rows left out, while the next window of blocks is read and the next step expanded in
background threads. After each epoch the held-out set is scored and the thesis' schedule
applied (:class:`.loop.Schedule`; docs: the training recipe). The run's position and the
schedule's memory live in a :class:`.loop.LoopState`, which :class:`.checkpointer.Checkpointer`
saves with the estimator.

Determinism: every shuffle comes from ``numpy.random.default_rng`` keyed by ``(seed, epoch[,
window])``, a pure function of its key, so the only state a checkpoint needs besides the
estimator is the position ``(epoch, step)``. An interrupted run resumed from its checkpoint
performs exactly the same ``partial_fit`` calls as an uninterrupted one and ends with identical
coefficients.

Each ``partial_fit`` call runs through :mod:`.learner`: a multiclass SGD model's one-vs-rest
problems on ``n_jobs`` threads (bitwise the one-thread model), without scikit-learn's finite
scan for features a map computed.

Under a distributed Client the steps are prepared on the workers (:mod:`.remote`); with
``replicas`` > 1 copies of the model train on the workers and are averaged after every epoch
(:mod:`.replicas`). Both give bitwise the coefficients of the same run made locally.
"""

from __future__ import annotations

import numbers
import sys
import time
import warnings

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import is_classifier, is_regressor

from .checkpointer import Checkpointer
from .learner import learner_threads, partial_fit
from .loop import LoopState, Schedule
from .metrics import LOWER_IS_BETTER, default_metric, evaluate
from .remote import WorkerFeed, get_client
from .replicas import Replicas, check_replicas
from .shuffle import (EpochPlan, KeptRows, auto_window, held_out_rows, keep, keeps_rows, local_steps,
                      reader_thread)
from .sources import ArraySource, StoreSource, as_source, sgd_dtype
from .state import copy_state, get_state, set_state

if TYPE_CHECKING:
    from .model import KernelModel

_HALVABLE = ("constant", "invscaling", "adaptive")
_DEPRECATED: Any = object()  # default of the deprecated parameters: tells "not passed" from None


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
            F = expand(X, estimator)
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
    estimator: Any,
    source: Any,
    y: Any = None,
    *,
    feature_map: Any = None,
    epochs: int = 5,
    validation_fraction: float | None = 0.1,
    validation_data: Any = None,
    seed: int = 0,
    block_rows: int | None = None,
    shuffle_window: str | int = "auto",
    step_blocks: int = 1,
    prefetch: bool = True,
    schedule: str | None = "auto",
    min_improvement: float = 0.01,
    metric: str = "auto",
    early_stopping: bool = True,
    n_iter_no_change: int = 3,
    replicas: int = 1,
    n_jobs: int | None = None,
    client: Any = None,
    checkpoint: Any = None,
    checkpoint_every: int | None = None,
    resume: bool = True,
    classes: Any = None,
    callback: Callable[[dict], Any] | None = None,
    progress: bool = True,
    validation: Any = _DEPRECATED,
    patience: Any = _DEPRECATED,
) -> KernelModel:
    """Train ``estimator`` out of core on row blocks of a feature store or of raw input.

    Parameters
    ----------
    estimator : scikit-learn estimator with ``partial_fit``
        E.g. SGDClassifier, SGDRegressor, Perceptron, PassiveAggressiveClassifier,
        MultinomialNB/BernoulliNB (on GCWS one-hot codes), MiniBatchKMeans. Trained in place.
        If it has a ``random_state`` parameter that is None it is set to ``seed`` so that runs
        (and resumed runs) are reproducible. An SGDClassifier on dense float rows trains after
        its first step through a Numba replica of scikit-learn's SGD loop, bitwise the same
        model, several one-vs-rest classes per core (:mod:`dask_kernels.learn.sgd_fast`).
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
    validation_fraction : float or None, default=0.1
        Fraction of the training rows held out and scored after every epoch (a seeded random
        subset, read in one pass before training and kept in memory in stored form, e.g.
        codes). None (or 0) holds out nothing; without ``validation_data`` that disables
        evaluation, the schedule and early stopping.
    validation_data : BlockSource, store, (X, y) tuple, optional
        A separate held-out set (featurized with the same map) scored after every epoch
        instead of a fraction of the training rows (``validation_fraction`` is then ignored).
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
        Locally, when every block fits in two windows (the memory of a window and the next one
        read ahead; one without ``prefetch``), the stored training rows are read once and kept
        from epoch to epoch.
    step_blocks : int, default=1
        Rows per step (per ``partial_fit`` call): this many blocks' worth, drawn from the
        window as above (at most a window; a window of fewer blocks is one step). Fewer, longer
        calls pay scikit-learn's fixed cost per call less often and give the one-vs-rest
        threads (``n_jobs``) longer tasks, so 10000-row blocks with ``step_blocks=5`` train
        faster on 2 cores; but at a high constant ``eta0`` the model can be several points
        less accurate than with 1 (at a small ``eta0`` the difference is within noise). That is
        the estimator's, not the feeding's: ``partial_fit`` in memory on the very same rows in
        the same calls gives the same models (bitwise with ``shuffle=False``). Keep the default
        unless you have measured on your data. Checkpoints, ``checkpoint_every``
        and ``callback`` count steps. Memory: two prepared steps (the next is prepared while one
        trains). Keep SGD's own ``shuffle=True`` although the rows already come in a seeded
        random order: with ``shuffle=False`` it is faster (no random access to the step's
        rows) but the one-vs-rest problems all see the rows in one order, which cost several
        points of test accuracy in the training benchmark (``benchmarks/bench_train.py``).
    prefetch : bool, default=True
        Read the next window (after an epoch's last one, the next epoch's first) and expand
        the next step in background threads while the current step trains (under a Client the
        workers always prepare a few steps ahead).
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
        Stop after ``n_iter_no_change`` epochs without a new best held-out metric.
    n_iter_no_change : int, default=3
        Epochs without a new best held-out metric after which training stops.
    replicas : int, default=1
        Data-parallel training by iterative parameter mixing (:mod:`dask_kernels.learn.replicas`):
        every epoch, this many copies of the model train in parallel on disjoint shares of the
        blocks (on the workers under a Client, else in threads) and their coefficients are
        averaged; the held-out score, the schedule, early stopping and checkpoints then act on
        the average as in sequential mode. Averaging is sound only for linear models with a
        convex loss: SGDClassifier, SGDRegressor, Perceptron and the passive-aggressive
        models; any other estimator is refused. Checkpoints are written after every epoch
        (``checkpoint_every`` is refused). A fixed seed gives bitwise the same model wherever
        the replicas run.
    n_jobs : int or None, default=None
        Threads for the one-vs-rest problems of a multiclass SGDClassifier, Perceptron or
        passive-aggressive classifier in each ``partial_fit`` call that has enough work to pay
        for them (:mod:`dask_kernels.learn.learner`; e.g. 10000 rows x 256 features x 4
        classes): bitwise the coefficients of one thread, as the classes are independent
        problems. None: every usable CPU when called from the main
        thread, 1 from any other (never nested inside Dask's or a user's threads); -1: every
        usable CPU. Used only when the estimator's own ``n_jobs`` is None (the estimator is not
        changed); each replica of ``replicas`` > 1 trains on one thread.
    client : distributed.Client or False, optional
        Cluster to prepare the blocks on (default: the active Client, if any; False: none).
        With a Client, blocks are read, featurized (raw input) and expanded on the workers,
        several steps ahead, and only prepared steps reach this process; the coefficients are
        bitwise those of the local run.
    checkpoint : path or URL, optional
        File (npz + JSON, no pickle) rewritten atomically after every epoch and every
        ``checkpoint_every`` blocks: estimator state, the start-of-epoch model, the position,
        the learning rate and the history. A local path, a ``file://`` URL or an fsspec URL
        such as ``s3://bucket/run.ckpt`` (uploaded whole, then read back and compared; see
        :mod:`dask_kernels.learn.checkpointer`).
    checkpoint_every : int, optional
        Also checkpoint every this many steps (one per ``step_blocks`` blocks) within an epoch.
    resume : bool, default=True
        If ``checkpoint`` exists, continue from it (it must come from the same source, seed
        and estimator parameters) instead of starting over.
    classes : array-like, optional
        Classes of a classifier; by default found in one pass over the labels.
    callback : callable, optional
        Called as ``callback(info)`` after every step (one ``partial_fit`` call; with
        ``replicas`` > 1 after every epoch's average) with a dict (epoch, position: steps done
        in the epoch, rows); raising from it stops training (the last checkpoint remains).
    progress : bool, default=True
        Print one line per epoch to stderr.
    validation : deprecated
        Use ``validation_fraction`` (a float) or ``validation_data`` (a held-out set); still
        accepted, with a FutureWarning, until the next release.
    patience : deprecated
        Use ``n_iter_no_change``; still accepted, with a FutureWarning, until the next release.

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

    validation_fraction, validation_data, n_iter_no_change = _renamed(
        validation, patience, validation_fraction, validation_data, n_iter_no_change)
    src, kind, classes = _check_inputs(estimator, source, y, feature_map, block_rows, epochs, schedule,
                                       seed, checkpoint, classes)
    replicas = check_replicas(estimator, replicas, src.n_blocks, checkpoint_every)
    threads = learner_threads(estimator, n_jobs)
    metric = default_metric(kind, _probabilistic(estimator)) if metric == "auto" else metric
    if metric not in LOWER_IS_BETTER:
        raise ValueError(f"unknown metric {metric!r}; choose from {sorted(LOWER_IS_BETTER)}")
    sign = 1.0 if LOWER_IS_BETTER[metric] else -1.0
    window = _window(shuffle_window, src)
    if not isinstance(step_blocks, (int, np.integer)) or isinstance(step_blocks, bool) or step_blocks < 1:
        raise ValueError(f"step_blocks must be an integer >= 1, got {step_blocks!r}")
    step_blocks = int(min(step_blocks, window))
    client = get_client(client)
    feed = WorkerFeed(client, src, estimator) if client is not None else None
    # every block's stored rows fit in the windows in flight: keep them from epoch to epoch
    # (read once per run, not once per epoch; dense floats in one array: steps read in place)
    cache = KeptRows(src.n_rows) if feed is None and replicas == 1 and keeps_rows(src, window, prefetch) else None
    held, fraction = _held_out(validation_fraction, validation_data, src, kind, seed, block_rows, feed, cache,
                               window)
    rule = Schedule(min_improvement, halve=schedule == "auto" and _halvable(estimator),
                    revert=schedule == "auto" and held is not None, early_stopping=early_stopping,
                    n_iter_no_change=int(n_iter_no_change))
    state, snapshot = LoopState(eta0=estimator.get_params(deep=False).get("eta0")), None
    ckpt = None
    if checkpoint is not None:
        held_desc = "external" if validation_data is not None else (
            None if validation_fraction is None else float(validation_fraction))
        ckpt = Checkpointer(checkpoint, {"source": src.fingerprint(), "seed": int(seed), "validation": held_desc,
                                         "shuffle_window": window, "estimator": type(estimator).__name__,
                                         # replicas only when > 1: sequential checkpoints stay as they were
                                         "epochs": int(epochs), **({"replicas": replicas} if replicas > 1 else {}),
                                         **({"step_blocks": step_blocks} if step_blocks > 1 else {})})
        if resume and ckpt.exists():
            n_steps = EpochPlan(src, seed, 0, window, fraction, step_blocks=step_blocks).n_steps
            state, snapshot = ckpt.load(estimator, n_steps=n_steps, epochs=epochs,
                                        width=_learner_width(src), halvable=_halvable(estimator))
    fit_args = {"classes": classes} if kind == "classifier" else {}
    supervised = kind != "clusterer"
    team = Replicas(replicas, src, seed=seed, window=window, fraction=fraction, client=client,
                    src_future=feed and feed.src, step_blocks=step_blocks) if replicas > 1 else None

    # a run-long reader thread (local, sequential): it reads the next epoch's first window
    # while the last one trains and the held-out set is scored
    following = None  # the next epoch's plan (its first window read ahead)
    with reader_thread(prefetch and feed is None and replicas == 1) as reader:
        while not state.done and state.epoch < epochs:
            epoch, start = state.epoch, state.position
            if start == 0:
                snapshot = copy_state(get_state(estimator)) if _is_fitted(estimator) else None
                state.epoch_rows, state.epoch_seconds = 0, 0.0
            t0 = time.perf_counter()
            if replicas > 1:  # iterative parameter mixing: the average after the epoch
                state.epoch_rows = team.run_epoch(estimator, epoch, fit_args, supervised, prefetch)
                state.position = src.n_blocks
                if callback is not None:
                    callback({"epoch": epoch, "position": state.position, "rows": state.epoch_rows})
            else:
                plan = following if following is not None and following.epoch == epoch else \
                    EpochPlan(src, seed, epoch, window, fraction, cache=cache, step_blocks=step_blocks)
                following = EpochPlan(src, seed, epoch + 1, window, fraction, cache=cache, step_blocks=step_blocks) \
                    if reader is not None and epoch + 1 < epochs else None
                steps = feed.steps(plan, start) if feed is not None else \
                    local_steps(plan, start, estimator, prefetch, reader, following)
                for pos, (F, yb, n) in enumerate(steps, start):
                    if n:  # (sgd_dtype: a no-op unless a worker prepared F for an unfitted clone)
                        partial_fit(estimator, sgd_dtype(F, estimator), yb if supervised else None, fit_args,
                                    threads=threads, finite=src.finite)
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
    return KernelModel(src.feature_map, estimator, state.history)


def _renamed(validation, patience, validation_fraction, validation_data, n_iter_no_change):
    """The new names' values, taking the deprecated ``validation``/``patience`` with a warning."""
    if validation is not _DEPRECATED:
        warnings.warn("fit_incremental(validation=...) is deprecated and will be removed in the next release: "
                      "use validation_fraction=<float> for a held-out fraction or validation_data=<set> for a "
                      "separate held-out set", FutureWarning, stacklevel=3)
        real = validation is None or (isinstance(validation, numbers.Real) and not isinstance(validation, bool))
        validation_fraction, validation_data = (validation, None) if real else (None, validation)
    if patience is not _DEPRECATED:
        warnings.warn("fit_incremental(patience=...) is deprecated and will be removed in the next release: "
                      "use n_iter_no_change (scikit-learn's name)", FutureWarning, stacklevel=3)
        n_iter_no_change = patience
    if not isinstance(n_iter_no_change, (int, np.integer)) or isinstance(n_iter_no_change, bool) \
            or n_iter_no_change < 1:
        raise ValueError(f"n_iter_no_change must be an integer >= 1, got {n_iter_no_change!r}")
    if validation_fraction is not None and not (isinstance(validation_fraction, numbers.Real)
                                                and not isinstance(validation_fraction, bool)):
        raise ValueError(f"validation_fraction must be a number in [0, 1) or None, got {validation_fraction!r} "
                         "(a separate held-out set goes in validation_data)")
    return (validation_fraction or None), validation_data, n_iter_no_change


def _check_inputs(estimator, source, y, feature_map, block_rows, epochs, schedule, seed, checkpoint, classes):
    """The source, the estimator's kind and classes; every argument error before any work."""
    if not hasattr(estimator, "partial_fit"):
        raise TypeError(f"{type(estimator).__name__} has no partial_fit: out-of-core training needs "
                        "an incremental estimator (e.g. SGDClassifier, SGDRegressor, MultinomialNB)")
    src = as_source(source, y, feature_map, block_rows).feed(estimator)
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


def _held_out(fraction, data, src, kind, seed, block_rows, feed=None, cache=None, window=None):
    """``(held-out set or None, held-out fraction of the training source)``; with a worker
    ``feed`` the held-out rows of the training source are read on the workers; with a
    ``cache`` (:func:`.shuffle.keeps_rows`) each block is read once for both, ``window``
    blocks at a time (default: the automatic window): its training rows are put in the cache
    for the epochs."""
    held = None
    if data is not None:
        if isinstance(data, tuple):
            vsrc = ArraySource(data[0], data[1] if len(data) > 1 else None, src.feature_map, block_rows=block_rows)
        else:
            vsrc = as_source(data, block_rows=block_rows)
        if kind != "clusterer" and not vsrc.has_labels:
            raise ValueError("the validation data has no labels")
        held, fraction = _HeldOut(vsrc.read(i) for i in range(vsrc.n_blocks)), 0.0
    elif fraction is not None:
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"validation_fraction must be in [0, 1), got {fraction}")
        fraction = float(fraction)
        items = [(i, held_out_rows(seed, i, b - a, fraction)) for i, (a, b) in enumerate(src.bounds)]
        if feed is not None:
            held = _HeldOut(feed.read(items))
        elif cache is not None:
            held = _HeldOut(_read_once(src, items, cache, EpochPlan(src, seed, 0, src.n_blocks, fraction),
                                       window or auto_window(src)))
        else:
            held = _HeldOut(src.read(i, r) for i, r in items)
    if held is not None and held.n_rows == 0:
        raise ValueError("the held-out set is empty: use a larger validation_fraction or more rows")
    return held, fraction or 0.0


def _read_once(src, items, cache, plan, window):
    """Held-out rows ``items`` (``[(block, rows)]``) and, into ``cache``, the training rows that
    ``plan`` reads (:meth:`.shuffle.EpochPlan.load`), from one read of each block; ``window``
    blocks (the run's shuffle window) at a time, so that whole blocks never take more than the
    run's window besides the cache."""
    held, group = [], window
    for k in range(0, len(items), group):
        chunk = items[k:k + group]
        blocks = [i for i, _ in chunk]
        parts = src.read_split(blocks, [(rows, plan.training_rows(i)) for i, rows in chunk])
        held += [rows for rows, _ in parts]
        trains = [train for _, train in parts]
        del parts  # (each block's read rows are freed once kept)
        keep(cache, blocks, trains)
    return held


def _window(shuffle_window, src):
    if isinstance(shuffle_window, str) and shuffle_window == "auto":
        return auto_window(src)
    if not isinstance(shuffle_window, (int, np.integer)) or isinstance(shuffle_window, bool) or shuffle_window < 1:
        raise ValueError(f"shuffle_window must be 'auto' or an integer >= 1, got {shuffle_window!r}")
    return int(min(shuffle_window, src.n_blocks))


def _epoch_record(state, seconds, halve):
    seconds += state.epoch_seconds
    return {"epoch": state.epoch + 1, "rows": int(state.epoch_rows), "seconds": seconds,
            "rows_per_s": state.epoch_rows / seconds if seconds > 0 else float("nan"),
            "eta0": state.eta0 if halve else None}


def _is_fitted(estimator):
    return any(k.endswith("_") and not k.startswith("__") for k in vars(estimator))


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
        return int(src.feature_map.n_output_features_) if src.codes else learner_width(src.feature_map)
    if isinstance(src, StoreSource):
        return int(src.features.shape[1])
    if isinstance(src, ArraySource):
        return int(src.X.shape[1])
    return int(src.parts.n_features)
