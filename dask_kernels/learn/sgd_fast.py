"""``SGDClassifier.partial_fit`` on dense rows through :mod:`._sgd_kernels`: bitwise the same
model, several one-vs-rest classes per core.

:func:`applies` says when the replica is exact: a scikit-learn in :data:`SUPPORTED` (the
versions this package declares, whose ``_plain_sgd`` the kernels are checked against bitwise,
at the lowest and the highest), an ``SGDClassifier`` (fitted, or
before its first call with ``classes``: set up as scikit-learn sets it up, :func:`_prime`;
the model is then in the dtype of the first call's rows, as scikit-learn's) with loss
``log_loss``, ``hinge``, ``squared_hinge``, ``perceptron`` or ``modified_huber``, penalty
``l2`` or None, learning rate ``constant``, ``optimal`` or ``invscaling``, ``average=False``,
``class_weight=None``, ``early_stopping=False``, ``verbose=0``; dense C-ordered rows in the
dtype of ``coef_`` (of a first call: float32 or float64), or a step's rows named in the array that keeps them
(:class:`._gather.StepRows`: float32 or float64, each value converted to the dtype of
``coef_`` as it is read, the same values as ``astype``'s; no gathered copy of the step), no
``sample_weight``. Anything else goes to ``estimator.partial_fit`` unchanged (a
``StepRows`` gathered first).

:func:`partial_fit` then does what scikit-learn's would: the same parameter validation, the
same draws from ``random_state`` (an int, None: the global ``np.random``, or a
``RandomState``, left in the same state), the per-class labels, shuffles and seeds, and the
same updates of ``coef_``, ``intercept_`` (float64 for a binary model, as scikit-learn leaves
it), ``t_`` and ``n_iter_``. If a kernel aborts (a weight scale of zero, or a coefficient that
is not finite), the estimator and the random state are restored and scikit-learn's
``partial_fit`` makes the call (and raises what it raises); so it does for rows that are not
finite and for a label that is not in ``classes_``, which scikit-learn refuses.

The classes are fitted in groups of up to four per kernel call (:data:`GROUP`); groups run
on ``threads`` threads of the process's pool when there are several. With ``whole_groups``
False, several threads get smaller groups, one per thread (4 classes on 2 threads: two
groups of 2, ~1.5x faster on idle cores for ~1.3x the CPU: each group reads every row, and a
group of 2 runs fewer chains side by side); with True, groups stay of four and only more than
four classes use threads (for a caller whose other threads need the cores, e.g. a run reading
and preparing its next steps in the background).

Off (every call to scikit-learn's ``partial_fit``, the same model about half as fast): with
the dask config key ``dask_kernels.sgd_fast`` False, or under a scikit-learn outside
:data:`SUPPORTED`; either is logged once, on the ``dask_kernels`` logger. The key
``dask_kernels.sgd_fast_in_place`` False makes every step a gathered copy (:func:`takes_rows`).
"""

from __future__ import annotations

import functools
import logging
import numbers
import re
import sys
import threading
from typing import Any

import numpy as np

from .._config import switch
from ..maps._parallel import _pool
from . import _sgd_kernels as K
from ._gather import StepRows

#: scikit-learn versions ``[low, high)`` as (major, minor) whose ``_plain_sgd`` the kernels
#: replicate: pyproject.toml's range, checked bitwise by tests/learn/test_sgd_fast.py at its
#: lowest and highest release; any other version takes scikit-learn's own ``partial_fit``.
SUPPORTED = ((1, 6), (1, 10))
#: Classes advanced together by one kernel call (four dot-product chains per row).
GROUP = 4

_log = logging.getLogger("dask_kernels")

_LOSSES = {"log_loss": (K.LOG_LOSS, 0.0), "hinge": (K.HINGE, 1.0), "perceptron": (K.HINGE, 0.0),
           "squared_hinge": (K.SQUARED_HINGE, 1.0), "modified_huber": (K.MODIFIED_HUBER, 0.0)}
_RATES = {"constant": K.CONSTANT, "optimal": K.OPTIMAL, "invscaling": K.INVSCALING}
_MAX_INT = np.iinfo(np.int32).max
_RESET = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 1e-6}  # WeightVector's wscale threshold


def supported(version: str) -> bool:
    """Whether scikit-learn ``version`` (e.g. "1.6.1", "1.10.dev0") is in :data:`SUPPORTED`."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return m is not None and SUPPORTED[0] <= (int(m[1]), int(m[2])) < SUPPORTED[1]


@functools.cache
def _off(reason: str) -> None:
    """Say once per process (per reason) that the fast path is off."""
    _log.log(logging.WARNING if "scikit-learn" in reason else logging.INFO,
             "dask_kernels: the SGD fast path is off (%s): SGDClassifier trains through scikit-learn's own "
             "partial_fit: the same model, more slowly", reason)


def enabled() -> bool:
    """The fast path is on: the config key ``dask_kernels.sgd_fast`` and a supported
    scikit-learn (when not, that is logged once)."""
    import sklearn

    if not switch("sgd_fast"):
        _off("dask config dask_kernels.sgd_fast is False")
        return False
    if not supported(sklearn.__version__):
        lo, hi = SUPPORTED
        _off(f"scikit-learn {sklearn.__version__} is outside the versions it replicates, "
             f">={lo[0]}.{lo[1]},<{hi[0]}.{hi[1]}")
        return False
    return True


def _params_ok(estimator: Any) -> bool:
    """The estimator's type and parameters are replicated (not its fitted state)."""
    # not imported yet: the estimator is no SGDClassifier (importing it would cost the default
    # SoftmaxSGD's training sklearn.linear_model, model_selection and metrics)
    linear_model = sys.modules.get("sklearn.linear_model")
    if linear_model is None or type(estimator) is not linear_model.SGDClassifier or not enabled():
        return False
    p = estimator.__dict__
    return not (p.get("loss") not in _LOSSES or p.get("penalty") not in ("l2", None)
                or p.get("learning_rate") not in _RATES or p.get("average", True)
                or p.get("class_weight") is not None or p.get("early_stopping") is not False
                or p.get("verbose") != 0)


def _first_call(estimator: Any) -> bool:
    """``estimator`` has no fitted attributes: its first ``partial_fit`` call sets them up
    (:func:`_prime`)."""
    return "coef_" not in estimator.__dict__ and "classes_" not in estimator.__dict__


def takes_rows(estimator: Any) -> bool:
    """Whether steps for ``estimator`` may be prepared as :class:`._gather.StepRows` (read in
    place by :func:`partial_fit`): an estimator :func:`applies` to by its parameters, fitted or
    before its first call (a call it then does not apply to gathers them: the same model, the
    old cost)."""
    return switch("sgd_fast_in_place") and _params_ok(estimator) and (isinstance(estimator.__dict__.get("coef_"), np.ndarray)
                                               or _first_call(estimator))


def applies(estimator: Any, X: Any, y: Any, sample_weight: Any = None, classes: Any = None) -> bool:
    """True if :func:`partial_fit` replicates ``estimator.partial_fit(X, y, classes=classes,
    sample_weight=sample_weight)`` bitwise (see the module docstring; ``X`` a
    :class:`._gather.StepRows`: on its gathered rows)."""
    if sample_weight is not None or not _params_ok(estimator):
        return False
    if _first_call(estimator):  # primed by partial_fit (scikit-learn needs the classes then)
        return classes is not None and _rows_ok(X, None) and _labels_ok(X, y)
    p = estimator.__dict__
    coef, intercept, fitted = p.get("coef_"), p.get("intercept_"), p.get("classes_")
    if not (isinstance(coef, np.ndarray) and isinstance(intercept, np.ndarray) and isinstance(fitted, np.ndarray)
            and "t_" in p and "feature_names_in_" not in p and coef.ndim == 2 and coef.flags.c_contiguous
            and coef.flags.writeable and intercept.flags.writeable
            and coef.dtype in _RESET and len(fitted) >= 2
            and coef.shape[0] == (1 if len(fitted) == 2 else len(fitted)) and intercept.shape == (coef.shape[0],)):
        return False
    if not (_rows_ok(X, coef.dtype) and X.shape[1] == coef.shape[1] == p.get("n_features_in_")
            and _labels_ok(X, y)):
        return False
    if classes is not None:
        from sklearn.utils.multiclass import unique_labels

        # the classes fit_incremental passes every call equal classes_ (sorted, distinct: then
        # unique_labels gives them back; 0.4 ms a call), anything else is checked as
        # scikit-learn checks it
        if not (np.array_equal(classes, fitted) or np.array_equal(fitted, unique_labels(classes))):
            return False  # scikit-learn raises
    return True


def _rows_ok(X: Any, dtype: np.dtype | None) -> bool:
    """Dense C-ordered float rows in ``dtype`` (None: float32 or float64, as a first call
    takes them), or a :class:`._gather.StepRows` of them; at least one."""
    if isinstance(X, StepRows):
        src, at = X.src, X.at
        if not (isinstance(src, np.ndarray) and src.ndim == 2 and src.dtype in _RESET and src.flags.c_contiguous
                and at.ndim == 1 and at.size >= 1 and 0 <= at.min() and at.max() < src.shape[0]):
            return False
    elif not (isinstance(X, np.ndarray) and X.ndim == 2 and X.flags.c_contiguous):
        return False
    return (X.dtype in _RESET if dtype is None else X.dtype == dtype) and X.shape[0] >= 1


def _labels_ok(X: Any, y: Any) -> bool:
    return isinstance(y, np.ndarray) and y.shape == (X.shape[0],) and y.dtype.kind in "biufU"


def _prime(estimator: Any, X: np.ndarray | StepRows, y: np.ndarray, classes: Any) -> bool:
    """Set up a first call's attributes as scikit-learn's first ``partial_fit`` sets them
    before it trains (``classes_``, ``n_features_in_``, the loss, zero ``coef_`` and
    ``intercept_`` in the rows' dtype, ``t_ = 1``), so the kernels make the first call too.

    They are taken from a clone (its own seed: the estimator's random state is not drawn from)
    fitted on one row, then the learned values are reset to the untrained ones; False (nothing
    set) if the clone's call fails: scikit-learn then makes the call and raises what it raises."""
    from sklearn.base import clone

    probe = clone(estimator).set_params(random_state=0)
    row = np.ascontiguousarray((X.src[X.at[:1]] if isinstance(X, StepRows) else X[:1]), dtype=X.dtype)
    try:
        probe.partial_fit(row, y[:1], classes=classes)
    except Exception:  # noqa: BLE001 - scikit-learn's own call raises it again, on the estimator
        return False
    params = estimator.get_params(deep=False)
    coef = probe.coef_
    if not (isinstance(coef, np.ndarray) and coef.ndim == 2 and coef.dtype == X.dtype):
        return False
    learned = ("coef_", "intercept_", "t_", "n_iter_")
    estimator.__dict__.update((k, v) for k, v in vars(probe).items() if k not in params and k not in learned)
    estimator.coef_ = np.zeros(coef.shape, dtype=coef.dtype)  # _allocate_parameter_mem's
    estimator.intercept_ = np.zeros(coef.shape[0], dtype=coef.dtype)
    estimator.t_ = 1.0
    return True


_LOCAL = threading.local()


def _legacy(seed: int) -> np.random.RandomState:
    """The draws of ``RandomState(seed)`` (what ``check_random_state`` makes of an int) from a
    generator of this thread reseeded: legacy seeding gives the same state without the
    ~0.4 ms of building one (five per call for four classes)."""
    rs = getattr(_LOCAL, "rs", None)
    if rs is None:
        rs = _LOCAL.rs = np.random.RandomState()
    rs.seed(seed)
    return rs


def _seeds(estimator: Any, n_fits: int) -> list[int]:
    """The shuffle seed of each binary fit, drawn as ``_fit_binary``/``_fit_multiclass`` and
    ``make_dataset`` draw them (the same calls on generators in the same states)."""
    from sklearn.utils import check_random_state

    seed = estimator.random_state
    rs = _legacy(seed) if isinstance(seed, numbers.Integral) else check_random_state(seed)
    if n_fits == 1:
        rs.randint(1, _MAX_INT)  # make_dataset's dataset seed (unused by the shuffle)
        return [int(rs.randint(_MAX_INT))]
    seeds = []
    for s in rs.randint(_MAX_INT, size=n_fits):
        r = _legacy(s)
        r.randint(1, _MAX_INT)
        seeds.append(int(r.randint(_MAX_INT)))
    return seeds


def _rng_state(estimator: Any) -> Any:
    """The generator ``partial_fit`` draws from and its state, if it outlives the call."""
    from sklearn.utils import check_random_state

    rs = estimator.random_state
    if rs is None:
        rs = check_random_state(None)  # numpy's global RandomState
    return (rs, rs.get_state()) if isinstance(rs, np.random.RandomState) else None


def _validate(estimator: Any) -> None:
    """scikit-learn's per-call parameter validation (``_fit_context``)."""
    import sklearn

    from .._compat import validate_parameter_constraints

    if not sklearn.get_config()["skip_parameter_validation"]:
        validate_parameter_constraints(estimator._parameter_constraints, estimator.get_params(deep=False),
                                       caller_name=type(estimator).__name__)


def partial_fit(estimator: Any, X: np.ndarray | StepRows, y: np.ndarray, classes: Any = None, *,
                threads: int = 1, finite: bool = False, whole_groups: bool = False) -> Any:
    """``estimator.partial_fit(X, y, classes=classes)``, bitwise, where :func:`applies`
    (the caller checks it; ``X`` a :class:`._gather.StepRows`: on its gathered rows);
    ``finite``: X is known finite (else it is checked, as scikit-learn does); ``whole_groups``:
    see the module docstring (the same model either way); an estimator
    not yet fitted is set up as scikit-learn's first call sets it up (:func:`_prime`), and
    left as it was if scikit-learn then makes the call. Returns the estimator."""
    _validate(estimator)
    pristine = dict(estimator.__dict__) if _first_call(estimator) else None
    if pristine is not None and not _prime(estimator, X, y, classes):
        return _sklearn(estimator, X, y, classes, pristine)
    coef, fitted = estimator.coef_, estimator.classes_
    src, at = (X.src, X.at) if isinstance(X, StepRows) else (X, np.empty(0, np.int64))
    if (not finite and not np.isfinite(src[at] if at.size else src).all()
            or y.dtype.kind == "f" and not np.isfinite(y).all()
            or not np.isin(y, fitted).all()):  # a label outside classes_ would train as a negative
        return _sklearn(estimator, X, y, classes, pristine)  # scikit-learn raises
    n, n_fits = X.shape[0], coef.shape[0]
    saved = _rng_state(estimator)
    seeds = _seeds(estimator, n_fits)
    loss, threshold = _LOSSES[estimator.loss]
    neg = 0.0 if loss == K.LOG_LOSS else -1.0
    alpha, rate = float(estimator.alpha), _RATES[estimator.learning_rate]
    optimal_init = 0.0
    if rate == K.OPTIMAL:  # _plain_sgd's, in the same operations
        typw = np.sqrt(1.0 / np.sqrt(alpha))
        initial_eta0 = typw / max(1.0, K.dloss(loss, threshold, 1.0, -typw))
        optimal_init = 1.0 / (initial_eta0 * alpha)
    backup = coef.copy()
    b = estimator.intercept_.astype(np.float64)
    rest = (loss, threshold, rate, float(estimator.eta0), alpha, float(estimator.power_t), float(optimal_init),
            float(estimator.t_), estimator.penalty == "l2", bool(estimator.fit_intercept), _RESET[coef.dtype])

    def fit_group(cg: tuple[int, int]) -> int:
        """Classes c..c+g-1; their labels and row orders are made here, a group at a time, so a
        call holds at most threads x GROUP of them (as scikit-learn holds one per thread)."""
        c, g = cg
        Y = np.ones((g, n), dtype=coef.dtype)
        for k in range(g):  # fit c + k: class 1 of a binary model, class c + k of one-vs-rest
            Y[k][y != fitted[1 if n_fits == 1 else c + k]] = neg
        order = (np.stack([K.shuffled_rows(n, seeds[c + k]) for k in range(g)]) if estimator.shuffle
                 else np.empty((0, 0), np.int32))
        return K.ovr_epoch(src, Y, coef, b, order, at, c, g, *rest)

    size = GROUP if whole_groups else min(GROUP, -(-n_fits // max(threads, 1)))  # else smaller, one per thread
    groups = [(c, min(size, n_fits - c)) for c in range(0, n_fits, size)]
    if threads > 1 and len(groups) > 1:
        status = list(_pool(threads).map(fit_group, groups))
    else:
        status = [fit_group(cg) for cg in groups]
    if any(s != K.OK for s in status):
        coef[...] = backup
        if saved is not None:
            saved[0].set_state(saved[1])
        return _sklearn(estimator, X, y, classes, pristine)
    if n_fits == 1:
        estimator.intercept_ = np.atleast_1d(float(b[0]))
    else:
        estimator.intercept_[:] = b
    estimator.t_ += 1 * n
    estimator.n_iter_ = 1
    return estimator


def _sklearn(estimator: Any, X: np.ndarray | StepRows, y: np.ndarray, classes: Any,
             pristine: dict | None = None) -> Any:
    """scikit-learn's own ``partial_fit`` (on the gathered rows of a ``StepRows``); on the
    estimator as it was before :func:`_prime` if it was primed (``pristine``)."""
    if pristine is not None:
        estimator.__dict__.clear()
        estimator.__dict__.update(pristine)
    return estimator.partial_fit(X.gather() if isinstance(X, StepRows) else X, y, classes=classes)
