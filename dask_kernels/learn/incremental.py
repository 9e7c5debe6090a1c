"""Out-of-core training: ``fit_incremental`` streams row blocks into ``partial_fit``.

The loop (:func:`_train`) is a few lines: each epoch trains on the steps of a *feed*
(:mod:`.feeds`: prepared here, on the workers of a Client, or by replicas), then
:class:`_Run` scores the held-out set, applies the schedule, checkpoints and reports. The
options are one :class:`.config.TrainConfig`, checked before any work.

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

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .._estimator import is_classifier, is_regressor
from ..labels import check_count, names
from ..maps._parallel import _one_blas_thread
from .checkpointer import Checkpointer
from .config import TrainConfig
from .feeds import Feed, LocalFeed
from .learner import Fitter, learner_threads
from .loop import LoopState, Schedule
from .metrics import LOWER_IS_BETTER, available_metrics, evaluate, proba_terms
from .remote import WorkerFeed, get_client
from .replicas import Replicas, check_replicas
from .report import Progress, legend
from .shuffle import Order, auto_window
from .sources import ArraySource, StoreSource, as_source, learner_width
from .state import copy_state, get_state, set_state

if TYPE_CHECKING:
    from .model import KernelModel

_HALVABLE = ("constant", "invscaling", "adaptive")
#: With ``progress`` and stderr not a terminal, a line within an epoch at least this often (seconds), after a step.
PROGRESS_SECONDS = 10.0


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


def held_out_metric(estimator: Any, metric: str = "auto", option: str = "metric=") -> str:
    """The held-out metric a run of ``estimator`` decides on: ``metric``, or the estimator's
    default for ``"auto"`` (:func:`.metrics.available_metrics`).

    Raises ValueError (naming the metric as ``option``, e.g. ``"--metric "`` in the CLI) for a
    metric the estimator's held-out scores lack, before any step trains: it would otherwise be
    missing from the first epoch's scores.
    """
    kind, probabilistic = _kind(estimator), _probabilistic(estimator)
    metrics = available_metrics(kind, probabilistic)
    if metric == "auto":
        return metrics[0]
    if metric not in metrics:
        shown = f"{option}{metric!r}" if option.endswith("=") else f"{option}{metric}"
        raise ValueError(f"{shown}: the held-out scores of {type(estimator).__name__} (a {kind}"
                         + (", without predict_proba" if kind == "classifier" and not probabilistic else "")
                         + f") are {', '.join(map(repr, metrics))}: choose one of them")
    return metric


class _HeldOut:
    """Held-out rows in stored form (small: codes or floats), scored in chunks: a chunk's
    probabilities (a float per class and row) are reduced to the two per-row terms of the
    log loss and ERP (:func:`.metrics.proba_terms`) before the next chunk is scored.

    BLAS runs on one thread while they are scored: the products are skinny (a block's held-out
    rows times a few classes) and OpenBLAS's threads, woken for each, spin-wait for the next
    one; on 2 cores scoring 20000 rows of 256 floats in 20 parts took 0.29 s of CPU (0.59 s
    wall, the spinning threads competing with the run's own) against 0.04 s on one thread."""

    def __init__(self, parts):
        self.parts = [(X, y) for X, y in parts if X.shape[0]]
        self.n_rows = sum(X.shape[0] for X, _ in self.parts)

    def score(self, estimator, expand, kind, classes):
        with _one_blas_thread():
            return self._score(estimator, expand, kind, classes)

    def _score(self, estimator, expand, kind, classes):
        preds, terms, ys, inertia = [], [], [], 0.0
        proba_ok = kind == "classifier" and _probabilistic(estimator)
        classes = None if classes is None else np.asarray(classes)
        for X, y in self.parts:
            F = expand(X, estimator)
            if kind == "clusterer":
                inertia += -float(estimator.score(F))
                continue
            preds.append(estimator.predict(F))
            if proba_ok:
                terms.append(proba_terms(y, estimator.predict_proba(F), classes))
            ys.append(y)
        if kind == "clusterer":
            return evaluate(kind, None, None, inertia=inertia / max(self.n_rows, 1))
        y = np.concatenate(ys)
        terms = tuple(np.concatenate(t) for t in zip(*terms)) if proba_ok else None
        return evaluate(kind, y, np.concatenate(preds), classes=classes, terms=terms)


def fit_incremental(estimator: Any, source: Any, y: Any = None, *, feature_map: Any = None,
                    config: TrainConfig | None = None, **options: Any) -> KernelModel:
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
    config : TrainConfig, optional
        The run's options as one object (:class:`~dask_kernels.learn.config.TrainConfig`);
        keyword ``options`` replace its fields.
    **options
        The fields of :class:`~dask_kernels.learn.config.TrainConfig`, which documents them:
        ``epochs`` (5), ``validation_fraction`` (0.1), ``validation_data``, ``seed`` (0),
        ``block_rows``, ``shuffle_window`` ("auto"), ``step_blocks`` (1), ``prefetch`` (True),
        ``schedule`` ("auto"), ``min_improvement`` (0.01), ``metric`` ("auto"),
        ``early_stopping`` (True), ``n_iter_no_change`` (3), ``min_epochs`` (5), ``replicas`` (1),
        ``n_jobs``, ``client``, ``checkpoint``, ``checkpoint_every``, ``checkpoint_seconds``,
        ``resume`` (True), ``classes``,
        ``callback``, ``progress`` (True). The deprecated ``validation`` (use
        ``validation_fraction`` or ``validation_data``) and ``patience`` (use
        ``n_iter_no_change``) are still taken, with a FutureWarning, until the next release.

    Returns
    -------
    KernelModel
        The feature map, the trained estimator and ``history``: one dict per epoch with
        ``epoch``, ``rows``, ``seconds``, ``rows_per_s``, ``eta0``, the held-out metrics
        (accuracy, error, log_loss, erp / mse, r2 / inertia), ``metric`` (the one the schedule
        decides on), ``baseline`` (its value for the model the epoch started from, which the
        schedule compared with), ``action`` ("first", "keep", "halve", "revert") and ``stop``
        (early stopping ended the run after this epoch). Its ``feature_names_in_`` are the
        input's column names when the source has them (a store that kept them, a pandas or
        dask DataFrame).

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
    from ..io.tabular import column_names
    from .model import KernelModel, svmlight_base, with_feature_names, with_svmlight_base

    names = getattr(source, "feature_names", None)  # a store's input columns (featurize kept them)
    names = column_names(source) if names is None else names  # a DataFrame's
    run = _Run(estimator, source, y, feature_map, TrainConfig.from_options(config, options), names)
    with run.feed:
        _train(run)
    model = with_feature_names(KernelModel(run.src.feature_map, estimator, run.state.history), names)
    return with_svmlight_base(model, svmlight_base(source))  # predict reads svmlight files as trained


def _train(run: _Run) -> None:
    """The training loop: every epoch trains on the feed's steps from where the run stands
    (a resumed run's position), then the held-out set is scored and the schedule applied."""
    state = run.state
    while not state.done and state.epoch < run.cfg.epochs:
        run.begin_epoch()
        for position, rows in run.feed.epoch(run.estimator, state.epoch, state.position):
            run.step_done(position, rows)
        run.end_epoch()


class _Run:
    """One training run: its checked inputs, its feed, held-out set, schedule, checkpoint and
    state, and what happens around the steps of :func:`_train`."""

    def __init__(self, estimator: Any, source: Any, y: Any, feature_map: Any, cfg: TrainConfig,
                 names: list[str] | None = None) -> None:
        self.estimator, self.cfg = estimator, cfg
        src, kind, classes = _check_inputs(estimator, source, y, feature_map, cfg.block_rows, cfg.seed,
                                           cfg.checkpoint, cfg.classes)
        self.src, self.kind, self.classes = src, kind, classes
        replicas = check_replicas(estimator, cfg.replicas, src.n_blocks, cfg.checkpoint_every)
        metric = held_out_metric(estimator, cfg.metric)  # before any step: see there
        self.metric, self.sign = metric, 1.0 if LOWER_IS_BETTER[metric] else -1.0
        w = cfg.shuffle_window
        window = auto_window(src) if isinstance(w, str) else int(min(w, src.n_blocks))
        order = Order(int(cfg.seed), window, cfg.fraction, int(min(cfg.step_blocks, window)))
        fit = Fitter({"classes": classes} if kind == "classifier" else {}, kind != "clusterer",
                     learner_threads(estimator, cfg.n_jobs), src.finite)
        self.feed = _feed(src, estimator, order, fit, replicas, cfg)
        self.held = _held_out(cfg, src, kind, self.feed, names)
        self.rule = Schedule(cfg.min_improvement, halve=cfg.schedule == "auto" and _halvable(estimator),
                             revert=cfg.schedule == "auto" and self.held is not None,
                             early_stopping=cfg.early_stopping, n_iter_no_change=int(cfg.n_iter_no_change),
                             min_epochs=int(cfg.min_epochs))
        self.state, self.snapshot = LoopState(eta0=estimator.get_params(deep=False).get("eta0")), None
        self.ckpt = None if cfg.checkpoint is None else Checkpointer(cfg.checkpoint, _fingerprint(
            src, estimator, cfg, order, replicas))
        if self.ckpt is not None and cfg.resume and self.ckpt.exists():
            self.state, self.snapshot = self.ckpt.load(estimator, n_steps=self.feed.n_steps, epochs=cfg.epochs,
                                                       width=_learner_width(src), halvable=_halvable(estimator))
        self.t0 = 0.0
        self.saved = time.perf_counter()  # of the last checkpoint (or the start), for checkpoint_seconds
        self.progress = None if not cfg.progress else Progress(
            self.feed.n_steps, cfg.epochs, PROGRESS_SECONDS,
            legend(metric, LOWER_IS_BETTER[metric], self.rule) if self.held is not None else None)

    def begin_epoch(self) -> None:
        state = self.state
        if state.position == 0:  # the start-of-epoch model, restored by a "revert"
            self.snapshot = copy_state(get_state(self.estimator)) if _is_fitted(self.estimator) else None
            state.epoch_rows, state.epoch_seconds = 0, 0.0
        self.t0 = time.perf_counter()
        if self.progress is not None:
            self.progress.start_epoch()

    def step_done(self, position: int, rows: int) -> None:
        """After a step: the counters, a checkpoint every ``checkpoint_every`` steps or
        ``checkpoint_seconds``, the progress bar or line, the callback."""
        state, cfg = self.state, self.cfg
        state.epoch_rows += rows
        state.position = position
        every, seconds, now = cfg.checkpoint_every, cfg.checkpoint_seconds, time.perf_counter()
        due = (every and position % every == 0) or (seconds and now - self.saved >= seconds)
        if self.ckpt is not None and due and position < self.feed.n_steps:
            state.epoch_seconds, self.t0 = state.epoch_seconds + now - self.t0, now
            self.ckpt.save(self.estimator, self.snapshot, state)
            self.saved = time.perf_counter()
        if self.progress is not None:
            self.progress.step(state.epoch, position, state.epoch_rows,
                               state.epoch_seconds + time.perf_counter() - self.t0)
        if cfg.callback is not None:
            cfg.callback({"epoch": state.epoch, "position": position, "rows": rows})

    def end_epoch(self) -> None:
        """The held-out score, the schedule's action, the history, the checkpoint, the progress line."""
        state, estimator = self.state, self.estimator
        record = _epoch_record(state, time.perf_counter() - self.t0, self.rule.halve)
        if self.held is not None:
            record.update(self.held.score(estimator, self.src.expand, self.kind, self.classes), metric=self.metric)
            # what the schedule compares with: the metric of the model this epoch started from
            record["baseline"] = None if state.prev is None else self.sign * state.prev
            record["action"] = self.rule.step(state, self.sign * record[self.metric],
                                              can_revert=self.snapshot is not None)
            record["stop"] = state.done
            if record["action"] == "revert":
                set_state(estimator, *self.snapshot)
            if self.rule.halve:
                estimator.set_params(eta0=state.eta0)
        state.history.append(record)
        state.epoch, state.position = state.epoch + 1, 0
        if self.ckpt is not None:
            self.ckpt.save(estimator, None, state)
            self.saved = time.perf_counter()
        if self.progress is not None:
            self.progress.epoch_done(record)


def _feed(src: Any, estimator: Any, order: Order, fit: Fitter, replicas: int, cfg: TrainConfig) -> Feed:
    """Where the steps are prepared: on the workers of a Client, by replicas, or here."""
    client = get_client(cfg.client)
    workers = WorkerFeed(client, src, estimator, order, fit, cfg.epochs, cfg.prefetch) if client is not None else None
    if replicas > 1:
        return Replicas(replicas, src, order, fit, cfg.epochs, cfg.prefetch, client=client, feed=workers)
    if workers is not None:
        return workers
    # with prefetch this process reads, decompresses and gathers the next steps meanwhile (about a
    # core): the SGD fast path then keeps 4 classes in one group on one thread rather than two
    # groups of 2 on two (~1.3x the CPU; an SGDClassifier of 4 classes from a float store took
    # 15% less CPU for one epoch, on 2 loaded cores)
    return LocalFeed(src, order, replace(fit, whole_groups=cfg.prefetch), cfg.epochs, cfg.prefetch)


def _fingerprint(src: Any, estimator: Any, cfg: TrainConfig, order: Order, replicas: int) -> dict:
    """What a checkpoint must have been written for to be resumed."""
    held = "external" if cfg.validation_data is not None else (
        None if not cfg.validation_fraction else float(cfg.validation_fraction))
    return {"source": src.fingerprint(), "seed": int(cfg.seed), "validation": held, "shuffle_window": order.window,
            "estimator": type(estimator).__name__, "epochs": int(cfg.epochs),
            # replicas and step_blocks only when not 1: such checkpoints stay as they were
            **({"replicas": replicas} if replicas > 1 else {}),
            **({"step_blocks": order.step_blocks} if order.step_blocks > 1 else {})}


def _held_out(cfg: TrainConfig, src: Any, kind: str, feed: Feed, names: list[str] | None = None) -> _HeldOut | None:
    """The held-out set: ``validation_data``, or the held-out fraction of the training rows
    (read by the ``feed``: on the workers, or, when the feed keeps the training rows, in the
    same read of each block), or None. A DataFrame of ``validation_data`` is read by the
    training columns' ``names``, as the model reads tables, and a dask one as in training."""
    if cfg.validation_data is not None:
        data = cfg.validation_data
        if isinstance(data, tuple):
            from ..io.tabular import as_rows
            from .model import by_name

            X, y = as_rows(by_name(data[0], names, "validation_data's rows"), data[1] if len(data) > 1 else None)
            vsrc = ArraySource(X, y, src.feature_map, block_rows=cfg.block_rows)
        else:
            vsrc = as_source(data, block_rows=cfg.block_rows)
        if kind != "clusterer" and not vsrc.has_labels:
            raise ValueError("the validation data has no labels")
        held = _HeldOut(vsrc.read(i) for i in range(vsrc.n_blocks))
    elif cfg.fraction:
        held = _HeldOut(feed.held_out())
    else:
        return None
    if held.n_rows == 0:
        raise ValueError("the held-out set is empty: use a larger validation_fraction or more rows")
    return held


def _check_inputs(estimator, source, y, feature_map, block_rows, seed, checkpoint, classes):
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
    params = estimator.get_params(deep=False)
    if "random_state" in params:
        if params["random_state"] is None:
            estimator.set_params(random_state=int(seed))
        elif not isinstance(params["random_state"], (int, np.integer)) and checkpoint is not None:
            raise ValueError("checkpointed training needs an int random_state (a RandomState "
                             "instance cannot be restored identically)")
    if kind == "classifier":
        # sorted, as scikit-learn's partial_fit keeps them: held-out labels are looked up in them
        classes = np.asarray(src.classes()) if classes is None else np.unique(np.asarray(classes))
        if classes.dtype.kind in "UO":  # class names, bounded; str objects (pandas) as <U: saved without pickle
            classes = names(classes, where="labels")
            check_count(classes.size)
        if classes.size < 2:
            raise ValueError(f"a classifier needs at least two classes, the labels hold {classes.tolist()}")
    return src, kind, classes


def _epoch_record(state, seconds, halve):
    seconds += state.epoch_seconds
    return {"epoch": state.epoch + 1, "rows": int(state.epoch_rows), "seconds": seconds,
            "rows_per_s": state.epoch_rows / seconds if seconds > 0 else float("nan"),
            "eta0": state.eta0 if halve else None}


def _is_fitted(estimator):
    return any(k.endswith("_") and not k.startswith("__") for k in vars(estimator))


def _learner_width(src):
    if src.feature_map is not None:
        return int(src.feature_map.n_output_features_) if src.codes else learner_width(src.feature_map)
    if isinstance(src, StoreSource):
        return int(src.features.shape[1])
    if isinstance(src, ArraySource):
        return int(src.X.shape[1])
    return int(src.parts.n_features)
