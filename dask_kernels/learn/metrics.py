"""Held-out metrics, including the thesis' ERP (entropy-regularized log loss).

Accuracy, R^2 and the mean squared error are computed here with NumPy, as scikit-learn defines
them for one column of labels: importing ``sklearn.metrics`` cost ``score`` and ``train`` about
0.1 s of their start-up, for one line of arithmetic each.
"""

import numpy as np

_EPS = np.finfo(np.float64).eps


def erp(y_true, proba, classes):
    """Entropy-regularized log loss: cross-entropy plus the mean entropy of the predictions.

    ``ERP = -(1/N) sum_i log p(y_i|x_i) - (1/N) sum_i sum_c p(c|x_i) log p(c|x_i)``
    (May's thesis; the docs' training recipe page). It is lowest for confident *and* correct
    predictions; ``0 * log 0`` counts as 0.

    Parameters
    ----------
    y_true : array-like of shape (n,)
    proba : ndarray of shape (n, n_classes)
        Predicted probabilities, columns in the order of ``classes``.
    classes : array-like of shape (n_classes,)

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels.learn.metrics import erp
    >>> round(erp([0, 1], np.array([[0.5, 0.5], [0.5, 0.5]]), [0, 1]), 6)  # 2 log 2
    1.386294
    """
    return _erp(*proba_terms(y_true, proba, classes))


def cross_entropy(y_true, proba, classes):
    """Mean ``-log p(y_i | x_i)``, probabilities clipped at machine epsilon."""
    return _cross_entropy(true_class_proba(y_true, proba, classes))


def true_class_proba(y_true, proba, classes):
    """``p(y_i | x_i)`` of every row: the column of its label (a label that is not one of
    ``classes`` raises ValueError)."""
    y_true = np.asarray(y_true)
    classes = np.asarray(classes)
    idx = np.searchsorted(classes, y_true)
    idx = np.clip(idx, 0, len(classes) - 1)
    if not np.all(classes[idx] == y_true):
        bad = y_true[classes[idx] != y_true][0]
        raise ValueError(f"held-out label {bad!r} is not one of the training classes {classes.tolist()}")
    return np.asarray(proba, dtype=np.float64)[np.arange(len(y_true)), idx]


def proba_terms(y_true, proba, classes):
    """Per row, what :func:`cross_entropy` and :func:`erp` average: ``(p(y_i | x_i), sum_c
    p(c | x_i) log p(c | x_i))``, two floats a row. Rows scored a chunk at a time keep these
    instead of their probabilities (a float per class): the means of the chunks' terms put
    together are bitwise those of all the rows' probabilities at once."""
    p = np.asarray(proba, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
    return true_class_proba(y_true, p, classes), plogp


def _cross_entropy(p_true):
    return float(-np.log(np.clip(p_true, _EPS, 1.0)).mean())


def _erp(p_true, plogp):
    return float(_cross_entropy(p_true) - plogp.mean())


def _is_text(a):
    return a.dtype.kind in "SU" or a.dtype.kind == "O" and isinstance(a.flat[0], str)


def _pair(y_true, pred):
    """``(y_true, pred)`` as 1-d arrays of one length and one kind (strings or numbers)."""
    y_true, pred = np.asarray(y_true), np.asarray(pred)
    if y_true.ndim != 1 or pred.ndim != 1 or y_true.shape != pred.shape:
        raise ValueError(f"labels of shape {y_true.shape} for predictions of shape {pred.shape}: give one label "
                         "per row")
    if y_true.size == 0:
        raise ValueError("no rows to score")
    if _is_text(y_true) != _is_text(pred):
        raise ValueError(f"labels are {y_true.dtype} but predictions {pred.dtype}: mix of strings and numbers "
                         "(were the labels the ones the model was trained with?)")
    return y_true, pred


def accuracy(y_true, pred):
    """Fraction of rows whose prediction equals the label (scikit-learn's ``accuracy_score``).

    Examples
    --------
    >>> from dask_kernels.learn.metrics import accuracy
    >>> accuracy([0, 1, 1, 0], [0, 1, 0, 0])
    0.75
    """
    y_true, pred = _pair(y_true, pred)
    return n_correct(y_true, pred) / y_true.size


def n_correct(y_true, pred):
    """Number of rows whose prediction equals the label, with :func:`accuracy`'s checks (what
    ``dask-kernels score`` adds up over partitions)."""
    y_true, pred = _pair(y_true, pred)
    return int(np.count_nonzero(y_true == pred))


def mean_squared_error(y_true, pred):
    """Mean of ``(y - pred)^2``.

    Examples
    --------
    >>> from dask_kernels.learn.metrics import mean_squared_error
    >>> mean_squared_error([1.0, 2.0], [1.0, 4.0])
    2.0
    """
    y, p = (a.astype(np.float64) for a in _pair(y_true, pred))
    return float(np.mean((y - p) ** 2))


def r2(y_true, pred):
    """Coefficient of determination ``1 - sum((y - pred)^2) / sum((y - mean y)^2)``, as
    scikit-learn's ``r2_score``: 1.0 for constant labels predicted exactly, 0.0 for constant
    labels predicted otherwise, NaN for a single row.

    Examples
    --------
    >>> from dask_kernels.learn.metrics import r2
    >>> r2([1.0, 2.0, 3.0], [1.0, 2.0, 4.0])
    0.5
    """
    y, p = (a.astype(np.float64) for a in _pair(y_true, pred))
    if y.size < 2:
        return float("nan")
    residual, total = float(np.sum((y - p) ** 2)), float(np.sum((y - y.mean()) ** 2))
    if total == 0.0:
        return 1.0 if residual == 0.0 else 0.0
    return 1.0 - residual / total


def model_score(regressor, y_true, pred):
    """``("r2", R^2)`` of a regressor's predictions, else ``("accuracy", accuracy)``: what
    :meth:`KernelModel.score <dask_kernels.learn.KernelModel.score>` and ``dask-kernels score``
    report."""
    return ("r2", r2(y_true, pred)) if regressor else ("accuracy", accuracy(y_true, pred))


def evaluate(kind, y_true, pred, proba=None, classes=None, inertia=None, terms=None):
    """Metrics of one held-out evaluation as a dict (see :func:`fit_incremental`); a
    classifier's log loss and ERP from its probabilities ``proba``, or from their per-row
    ``terms`` (:func:`proba_terms`)."""
    if kind == "classifier":
        acc = accuracy(y_true, pred)
        out = {"accuracy": acc, "error": 1.0 - acc}
        if proba is not None:
            terms = proba_terms(y_true, proba, classes)
        if terms is not None:
            out["log_loss"] = _cross_entropy(terms[0])
            out["erp"] = _erp(*terms)
        return out
    if kind == "regressor":
        y = np.asarray(y_true, dtype=np.float64)
        pred = np.asarray(pred, dtype=np.float64)
        # constant held-out labels: R^2 is undefined (nan), not scikit-learn's finite stand-in
        return {"mse": mean_squared_error(y, pred), "r2": r2(y, pred) if np.var(y) > 0 else float("nan")}
    return {"inertia": float(inertia)}


#: Which metric drives the schedule and early stopping, and whether lower is better.
LOWER_IS_BETTER = {"erp": True, "log_loss": True, "error": True, "mse": True, "inertia": True,
                   "accuracy": False, "r2": False}


def available_metrics(kind, probabilistic):
    """The held-out metrics :func:`evaluate` gives an estimator of ``kind``, its default first
    (log loss and ERP only for a classifier with ``predict_proba``)."""
    if kind == "classifier":
        return ("erp", "log_loss", "accuracy", "error") if probabilistic else ("error", "accuracy")
    return ("mse", "r2") if kind == "regressor" else ("inertia",)
