"""Held-out metrics, including the thesis' ERP (entropy-regularized log loss)."""

import numpy as np
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score

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
    ce = cross_entropy(y_true, proba, classes)
    p = np.asarray(proba, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(p > 0, p * np.log(p), 0.0)
    return float(ce - plogp.sum(axis=1).mean())


def cross_entropy(y_true, proba, classes):
    """Mean ``-log p(y_i | x_i)``, probabilities clipped at machine epsilon."""
    y_true = np.asarray(y_true)
    classes = np.asarray(classes)
    idx = np.searchsorted(classes, y_true)
    idx = np.clip(idx, 0, len(classes) - 1)
    if not np.all(classes[idx] == y_true):
        bad = y_true[classes[idx] != y_true][0]
        raise ValueError(f"held-out label {bad!r} is not one of the training classes {classes.tolist()}")
    p = np.asarray(proba, dtype=np.float64)[np.arange(len(y_true)), idx]
    return float(-np.log(np.clip(p, _EPS, 1.0)).mean())


def evaluate(kind, y_true, pred, proba=None, classes=None, inertia=None):
    """Metrics of one held-out evaluation as a dict (see :func:`fit_incremental`)."""
    if kind == "classifier":
        acc = float(accuracy_score(y_true, pred))
        out = {"accuracy": acc, "error": 1.0 - acc}
        if proba is not None:
            out["log_loss"] = cross_entropy(y_true, proba, classes)
            out["erp"] = erp(y_true, proba, classes)
        return out
    if kind == "regressor":
        y = np.asarray(y_true, dtype=np.float64)
        pred = np.asarray(pred, dtype=np.float64)
        # constant held-out labels: R^2 is undefined (nan), not scikit-learn's finite stand-in
        r2 = float(r2_score(y, pred)) if np.var(y) > 0 else float("nan")
        return {"mse": float(mean_squared_error(y, pred)), "r2": r2}
    return {"inertia": float(inertia)}


#: Which metric drives the schedule and early stopping, and whether lower is better.
LOWER_IS_BETTER = {"erp": True, "log_loss": True, "error": True, "mse": True, "inertia": True,
                   "accuracy": False, "r2": False}


def default_metric(kind, probabilistic):
    if kind == "classifier":
        return "erp" if probabilistic else "error"
    return "mse" if kind == "regressor" else "inertia"
