"""Out-of-core training: ``fit_incremental`` streams row blocks into ``partial_fit``.

Per epoch: the block order is shuffled, each block's rows are shuffled, held-out rows are left
out, and the next block is read (and expanded) in a background thread while the current one
trains. After each epoch the held-out set is scored and the thesis' schedule applied
(ALGORITHMS.md section 5): if the held-out metric improved by less than ``min_improvement``
(1%) the learning rate ``eta0`` is halved; if it got worse the model is also reverted to the
start of the epoch. Early stopping ends training after ``patience`` epochs without a new best.

Determinism: every shuffle comes from ``numpy.random.default_rng((seed, epoch[, block]))``, a
pure function of its key, so the only state a checkpoint needs besides the estimator is the
position ``(epoch, block)``. An interrupted run resumed from its checkpoint performs exactly the
same ``partial_fit`` calls as an uninterrupted one and ends with identical coefficients.
"""

import numbers
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.base import clone, is_classifier, is_regressor

from .checkpoint import load_npz, prefixed, read_format, save_npz, unprefixed
from .metrics import LOWER_IS_BETTER, default_metric, evaluate
from .sources import ArraySource, StoreSource, as_source
from .state import _unscalar, copy_state, get_state, json_params, set_state

CHECKPOINT_FORMAT = "dask-kernels-checkpoint-1"
_HELD_OUT_KEY = 0x5EED  # rng key component of the held-out selection (not used by shuffles)
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


def _held_out_rows(seed, block, n, fraction):
    return np.flatnonzero(np.random.default_rng((seed, _HELD_OUT_KEY, block)).random(n) < fraction)


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
        Map for raw rows.
    epochs : int, default=5
        Maximum number of passes over the training rows.
    validation : float, BlockSource, store, (X, y) tuple or None, default=0.1
        Held-out data scored after every epoch. A float holds out that fraction of rows (a
        seeded random subset, read in one pass before training and kept in memory in stored
        form, e.g. codes); anything else is a separate held-out set (featurized with the same
        map). None disables evaluation, the schedule and early stopping.
    seed : int, default=0
        Seed of the block-order and row shuffles and of the held-out selection.
    block_rows : int, optional
        Rows per block (default: the store's row chunks or the dask chunks; 10000 for NumPy).
    prefetch : bool, default=True
        Read and expand the next block in a background thread while the current one trains.
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
        Also checkpoint every this many blocks within an epoch.
    resume : bool, default=True
        If ``checkpoint`` exists, continue from it (it must come from the same source, seed
        and estimator parameters) instead of starting over.
    classes : array-like, optional
        Classes of a classifier; by default found in one pass over the labels.
    callback : callable, optional
        Called as ``callback(info)`` after every block with a dict (epoch, position, block,
        rows); raising from it stops training (the last checkpoint remains).
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

    if not hasattr(estimator, "partial_fit"):
        raise TypeError(f"{type(estimator).__name__} has no partial_fit: out-of-core training needs "
                        "an incremental estimator (e.g. SGDClassifier, SGDRegressor, MultinomialNB)")
    src = as_source(source, y, feature_map, block_rows)
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
        if classes is None:
            classes = src.classes()
        classes = np.asarray(classes)
        if classes.size < 2:
            raise ValueError(f"a classifier needs at least two classes, the labels hold {classes.tolist()}")

    # -- held-out set ----------------------------------------------------------------------------
    held, fraction = None, 0.0
    if isinstance(validation, numbers.Real) and not isinstance(validation, bool):
        if not 0.0 < validation < 1.0:
            raise ValueError(f"validation fraction must be in (0, 1), got {validation}")
        fraction = float(validation)
        held = _HeldOut(src.read(i, _held_out_rows(seed, i, b - a, fraction))
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

    metric = default_metric(kind, _probabilistic(estimator)) if metric == "auto" else metric
    if metric not in LOWER_IS_BETTER:
        raise ValueError(f"unknown metric {metric!r}; choose from {sorted(LOWER_IS_BETTER)}")
    sign = 1.0 if LOWER_IS_BETTER[metric] else -1.0
    halve = schedule == "auto" and _halvable(estimator)
    revert = schedule == "auto" and held is not None

    # -- loop state (all of it goes into checkpoints) --------------------------------------------
    loop = {"epoch": 0, "position": 0, "history": [], "prev": None, "best": None, "stale": 0,
            "done": False, "eta0": params.get("eta0")}
    snapshot = None  # estimator state at the start of the current epoch (for reverts)
    fingerprint = {"source": src.fingerprint(), "seed": int(seed), "validation": _vdesc(validation),
                   "estimator": type(estimator).__name__, "epochs": int(epochs)}
    if checkpoint is not None:
        checkpoint = os.fspath(checkpoint)
        _check_checkpoint_path(checkpoint)
        if resume and os.path.exists(checkpoint):
            loop, snapshot = _load_checkpoint(checkpoint, estimator, fingerprint, src, epochs)

    def prepared(epoch, block):
        """Read, drop held-out rows, shuffle and expand one block (runs in the prefetch thread)."""
        a, b = src.bounds[block]
        n = b - a
        keep = np.ones(n, dtype=bool)
        if fraction:
            keep[_held_out_rows(seed, block, n, fraction)] = False
        rows = np.flatnonzero(keep)
        rows = rows[np.random.default_rng((seed, epoch, block)).permutation(rows.size)]
        X, yb = src.read(block, rows)
        return (src.expand(X) if rows.size else None), yb, rows.size

    def train(F, yb):
        if kind == "classifier":
            estimator.partial_fit(F, yb, classes=classes)
        elif kind == "regressor":
            estimator.partial_fit(F, yb)
        else:
            estimator.partial_fit(F)

    pool = ThreadPoolExecutor(max_workers=1) if prefetch else None
    try:
        while not loop["done"] and loop["epoch"] < epochs:
            epoch = loop["epoch"]
            order = np.random.default_rng((seed, epoch)).permutation(src.n_blocks)
            if loop["position"] == 0:
                snapshot = copy_state(get_state(estimator)) if _is_fitted(estimator) else None
                loop["epoch_rows"], loop["epoch_seconds"] = 0, 0.0
            t_start = time.perf_counter()
            start = loop["position"]
            blocks = [int(b) for b in order[start:]]
            for pos, (F, yb, n) in enumerate(_read_ahead(prepared, epoch, blocks, pool), start):
                if n:
                    train(F, yb)
                loop["epoch_rows"] += n
                loop["position"] = pos + 1
                if checkpoint is not None and checkpoint_every and (pos + 1) % checkpoint_every == 0 \
                        and pos + 1 < src.n_blocks:
                    loop["epoch_seconds"] += time.perf_counter() - t_start
                    t_start = time.perf_counter()
                    _save_checkpoint(checkpoint, estimator, snapshot, loop, fingerprint)
                if callback is not None:
                    callback({"epoch": epoch, "position": pos + 1, "block": int(order[pos]), "rows": n})
            seconds = loop["epoch_seconds"] + time.perf_counter() - t_start
            record = {"epoch": epoch + 1, "rows": int(loop["epoch_rows"]), "seconds": seconds,
                      "rows_per_s": loop["epoch_rows"] / seconds if seconds > 0 else float("nan"),
                      "eta0": loop["eta0"] if halve else None}
            if held is not None:
                record.update(held.score(estimator, src.expand, kind, classes))
                record["metric"] = metric
                loss = sign * record[metric]
                action = _schedule_action(loop["prev"], loss, min_improvement, revert and snapshot is not None,
                                          halve)
                if action == "revert":
                    set_state(estimator, *snapshot)
                if action == "halve" or (action == "revert" and halve):
                    loop["eta0"] = float(loop["eta0"]) / 2.0
                    estimator.set_params(eta0=loop["eta0"])
                if action != "revert":
                    loop["prev"] = loss
                record["action"] = action
                if loop["best"] is None or loss < loop["best"]:
                    loop["best"], loop["stale"] = loss, 0
                else:
                    loop["stale"] += 1
                if early_stopping and loop["stale"] >= patience:
                    loop["done"] = True
            loop["history"].append(record)
            loop["epoch"], loop["position"] = epoch + 1, 0
            if checkpoint is not None:
                _save_checkpoint(checkpoint, estimator, None, loop, fingerprint)
            if progress:
                _print_record(record)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return KernelModel(src.feature_map, estimator, loop["history"])


def _schedule_action(prev, loss, min_improvement, can_revert, can_halve):
    """The thesis' rule on a lower-is-better held-out loss: "first", "keep", "halve" (improved by
    less than ``min_improvement``, relative) or "revert" (got worse; the rate is halved too)."""
    if prev is None:
        return "first"
    if loss > prev and can_revert:
        return "revert"
    if prev - loss < min_improvement * abs(prev) and can_halve:
        return "halve"
    return "keep"


def _read_ahead(fn, epoch, blocks, pool):
    """Yield ``fn(epoch, b)`` for each block in order, computing the next one in ``pool``."""
    if pool is None:
        for b in blocks:
            yield fn(epoch, b)
        return
    pending = pool.submit(fn, epoch, blocks[0]) if blocks else None
    for i in range(len(blocks)):
        result = pending.result()
        pending = pool.submit(fn, epoch, blocks[i + 1]) if i + 1 < len(blocks) else None
        yield result


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


def _save_checkpoint(path, estimator, snapshot, loop, fingerprint):
    arrays, est_meta = get_state(estimator)
    payload = prefixed(arrays, "est")
    snap_meta = None
    if snapshot is not None:
        payload.update(prefixed(snapshot[0], "snap"))
        snap_meta = snapshot[1]
    meta = {"format": CHECKPOINT_FORMAT, "fingerprint": fingerprint, "params": json_params(estimator),
            "estimator_state": est_meta, "snapshot_state": snap_meta,
            "loop": {k: v for k, v in loop.items()}}
    save_npz(path, payload, meta)


def _check_checkpoint_path(path):
    """A checkpoint path must be absent or a checkpoint: never overwrite anything else."""
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isfile(path)):
        raise ValueError(f"checkpoint {path} exists and is not a file: refusing to use it")
    if os.path.exists(path) and read_format(path) != CHECKPOINT_FORMAT:
        raise ValueError(f"checkpoint {path} exists and is not a dask_kernels checkpoint: refusing to "
                         "overwrite it (choose another checkpoint path)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"checkpoint {path}: folder {folder} does not exist")


def _is_int(v, lo=0, hi=None):
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)


def _is_real(v, positive=False):
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
    return ok and (not positive or v > 0)


def _check_loop(path, loop, n_blocks, epochs, eta0, halvable):
    """Raise ValueError naming the key unless ``loop`` is a state this run can resume from."""
    def bad(key, what):
        raise ValueError(f"checkpoint {path}: loop.{key} {what}; delete the checkpoint or pass "
                         "resume=False to start over")

    if not isinstance(loop, dict):
        raise ValueError(f"checkpoint {path}: loop must be an object")
    for key in ("epoch", "position", "history", "prev", "best", "stale", "done", "eta0"):
        if key not in loop:
            bad(key, "is missing")
    if not _is_int(loop["epoch"], 0, epochs):
        bad("epoch", f"must be an integer in [0, {epochs}], got {loop['epoch']!r}")
    if not _is_int(loop["position"], 0, n_blocks - 1):
        bad("position", f"must be an integer in [0, {n_blocks - 1}] ({n_blocks} blocks), "
                        f"got {loop['position']!r}")
    if loop["position"] and loop["epoch"] >= epochs:
        bad("position", "must be 0 once every epoch is done")
    hist = loop["history"]
    if not isinstance(hist, list) or len(hist) != loop["epoch"] or not all(isinstance(r, dict) for r in hist):
        bad("history", f"must be a list of {loop['epoch']} records (one per finished epoch)")
    for key in ("prev", "best"):
        if loop[key] is not None and not _is_real(loop[key]):
            bad(key, f"must be a finite number or null, got {loop[key]!r}")
    if not _is_int(loop["stale"]):
        bad("stale", f"must be a non-negative integer, got {loop['stale']!r}")
    if not isinstance(loop["done"], bool):
        bad("done", f"must be true or false, got {loop['done']!r}")
    if (eta0 is None) != (loop["eta0"] is None) or (eta0 is not None and not _is_eta0(loop["eta0"], halvable)):
        bad("eta0", f"must be {'null' if eta0 is None else 'the finite learning rate params.eta0'}, "
                    f"got {loop['eta0']!r}")
    if loop["position"]:
        if not _is_int(loop.get("epoch_rows")):
            bad("epoch_rows", f"must be a non-negative integer, got {loop.get('epoch_rows')!r}")
        if not _is_real(loop.get("epoch_seconds")) or loop["epoch_seconds"] < 0:
            bad("epoch_seconds", f"must be a non-negative number, got {loop.get('epoch_seconds')!r}")


def _is_eta0(v, halvable):
    return _is_real(v) and (v > 0 if halvable else v >= 0)


def _learner_width(src):
    from .model import learner_width

    if src.feature_map is not None:
        return learner_width(src.feature_map)
    if isinstance(src, StoreSource):
        return int(src.features.shape[1])
    if isinstance(src, ArraySource):
        return int(src.X.shape[1])
    return int(src.parts.n_features)


def _load_checkpoint(path, estimator, fingerprint, src, epochs):
    arrays, meta = load_npz(path)
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a dask_kernels checkpoint ({meta.get('format')!r})")
    try:
        old = meta["fingerprint"]
        for key in fingerprint:
            if _canon(old.get(key)) != _canon(fingerprint[key]):
                raise ValueError(f"checkpoint {path} was written for a different {key} "
                                 f"({_short(old.get(key))} != {_short(fingerprint[key])}); "
                                 "delete it or pass resume=False to start over")
        mine = json_params(estimator)
        theirs = meta["params"]
        if not isinstance(theirs, dict) or set(theirs) != set(mine):
            raise ValueError(f"checkpoint {path}: params name other parameters than "
                             f"{type(estimator).__name__}'s")
        for k, v in theirs.items():
            if k != "eta0" and mine.get(k) != v:
                raise ValueError(f"checkpoint {path} was written by an estimator with {k}={v!r}, "
                                 f"this one has {mine.get(k)!r}")
        loop = meta["loop"]
        eta0 = _unscalar(theirs["eta0"]) if "eta0" in theirs else None
        if eta0 is not None and not _is_eta0(eta0, _halvable(estimator)):
            raise ValueError(f"checkpoint {path}: params.eta0 must be a finite learning rate, got {eta0!r}")
        _check_loop(path, loop, src.n_blocks, int(epochs), eta0, _halvable(estimator))
        if eta0 is not None:
            if loop["eta0"] != eta0:
                raise ValueError(f"checkpoint {path}: params.eta0 {eta0!r} != loop.eta0 {loop['eta0']!r}")
            estimator.set_params(eta0=eta0)
        est_state, snap_state = meta["estimator_state"], meta["snapshot_state"]
    except KeyError as e:
        raise ValueError(f"checkpoint {path}: missing key {e.args[0]!r}") from None
    except (TypeError, AttributeError) as e:
        raise ValueError(f"checkpoint {path}: malformed ({e})") from None
    for k in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("__")]:
        delattr(estimator, k)  # drop state of an interrupted in-memory run
    set_state(estimator, unprefixed(arrays, "est"), est_state, where=f"checkpoint {path} (estimator state)")
    width = _learner_width(src)
    n_in = getattr(estimator, "n_features_in_", None)
    if n_in is not None and n_in != width:
        raise ValueError(f"checkpoint {path}: the estimator state has {n_in} features, this source "
                         f"gives {width}")
    snapshot = None
    if snap_state is not None:
        snapshot = (unprefixed(arrays, "snap"), snap_state)
        probe = clone(estimator)
        set_state(probe, *snapshot, where=f"checkpoint {path} (start-of-epoch state)")
        if getattr(probe, "n_features_in_", width) != width:
            raise ValueError(f"checkpoint {path}: the start-of-epoch state has "
                             f"{probe.n_features_in_} features, this source gives {width}")
    return loop, snapshot


def _canon(v):
    import json

    return json.dumps(v, sort_keys=True)


def _short(v):
    s = _canon(v)
    return s if len(s) < 80 else s[:77] + "..."
