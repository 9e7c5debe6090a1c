"""scikit-learn's estimator API, implemented without importing scikit-learn.

Importing any module of scikit-learn runs ``sklearn/__init__``, which imports ``sklearn.base``
and with it SciPy's statistics and pandas: about 1.1 CPU seconds, half of what ``dask-kernels
predict`` or ``score`` costs on 10,000 rows. The package's estimators (the feature maps,
:class:`~dask_kernels.SoftmaxSGD`, :class:`~dask_kernels.KernelModel`) therefore derive from
:class:`Estimator` and the mixins below, which implement scikit-learn's documented protocol for
estimators of other libraries (``get_params``/``set_params``, ``__sklearn_tags__``,
``fit_transform``, ``set_output``, ``score``) and declare their parameters with
:mod:`dask_kernels._params`. They work with ``clone``, ``Pipeline``, ``GridSearchCV`` and
``check_estimator`` as before, while a process that builds, loads, fits on plain arrays and
applies them imports no scikit-learn.

What only scikit-learn has is imported where it is asked for: its tag objects (by
``__sklearn_tags__``, which scikit-learn calls), its errors (an unfitted estimator, an invalid
parameter), its input validation for anything but plain arrays, its output containers and its
HTML display. The helpers below (:func:`clone`, :func:`check_is_fitted`, :func:`is_classifier`,
:func:`validate_data`, ...) answer as scikit-learn's functions of the same names do, for this
package's estimators and plain input, and hand anything else to them.
"""

from __future__ import annotations

import copy
import functools
import inspect
import numbers
import sys
import types
from collections import defaultdict
from typing import Any

import numpy as np

from ._params import declared_constraints, validate_params

__all__ = ["ClassifierMixin", "Estimator", "TransformerMixin", "available_if", "check_is_fitted", "check_random_state",
           "clone", "column_or_1d", "estimator_type", "is_classifier", "is_fitted", "is_regressor", "validate_data"]


class Estimator:
    """Base of the package's estimators: scikit-learn's ``BaseEstimator`` API.

    Parameters are the keyword arguments of ``__init__``, stored unchanged as attributes of the
    same names; fitted attributes end with ``_``. ``_parameter_constraints`` (declared with
    :class:`dask_kernels._params.ParameterConstraints`) is what :meth:`_validate_params` checks.

    Examples
    --------
    >>> class Scale(Estimator):
    ...     def __init__(self, *, factor=1.0, offset=0.0):
    ...         self.factor, self.offset = factor, offset
    >>> s = Scale(factor=2.0)
    >>> s, s.get_params()
    (Scale(factor=2.0), {'factor': 2.0, 'offset': 0.0})
    >>> s.set_params(offset=1.0)
    Scale(factor=2.0, offset=1.0)
    """

    #: scikit-learn's ``estimator_type`` tag ("classifier", "regressor" or None), known without
    #: building its tags (:func:`is_classifier`)
    _estimator_type: str | None = None

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The names of the constructor's parameters, sorted."""
        if cls.__init__ is object.__init__:
            return []
        params = [p for p in inspect.signature(cls.__init__).parameters.values()
                  if p.name != "self" and p.kind != p.VAR_KEYWORD]
        if any(p.kind == p.VAR_POSITIONAL for p in params):
            raise RuntimeError(f"{cls.__name__}: an estimator's parameters are named in the signature of its "
                               "__init__ (no *args)")
        return sorted(p.name for p in params)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameter names mapped to their values; with ``deep``, also those of parameters that
        are estimators, as ``<parameter>__<name>``."""
        out = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params: Any) -> Estimator:
        """Set parameters, of this estimator or (``<parameter>__<name>``) of those that are
        estimators. Returns self."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested = defaultdict(dict)
        for key, value in params.items():
            key, delim, sub_key = key.partition("__")
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {self}. "
                                 f"Valid parameters are: {self._get_param_names()!r}.")
            if delim:
                nested[key][sub_key] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def _validate_params(self) -> None:
        """Check the parameters against ``_parameter_constraints`` (scikit-learn's
        ``InvalidParameterError`` for an invalid one)."""
        validate_params(declared_constraints(type(self)), self.get_params(deep=False), type(self).__name__)

    def __repr__(self) -> str:
        """``Name(p=value, ...)`` with the parameters that differ from their defaults, as
        scikit-learn prints estimators, wrapped at 80 columns."""
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        items = [f"{k}={v!r}" for k, v in self.get_params(deep=False).items() if _changed(v, defaults.get(k))]
        start = type(self).__name__ + "("
        lines = [start]
        for i, item in enumerate(items):
            item += ", " if i < len(items) - 1 else ""
            if len(lines[-1]) + len(item.rstrip()) > 80 and len(lines[-1]) > len(start):
                lines[-1] = lines[-1].rstrip()
                lines.append(" " * len(start))
            lines[-1] += item
        return "\n".join(lines) + ")"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        """Jupyter's display: the text and, as scikit-learn configures it, its HTML diagram
        (scikit-learn imported to draw it)."""
        import sklearn
        from sklearn.utils import estimator_html_repr

        out = {"text/plain": repr(self)}
        if sklearn.get_config()["display"] == "diagram":
            out["text/html"] = estimator_html_repr(self)
        return out

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False))


def _changed(value: Any, default: Any) -> bool:
    """Whether a parameter differs from its default, as scikit-learn's repr decides (by repr;
    NaN equals NaN)."""
    if default is inspect.Parameter.empty:
        return True
    if isinstance(value, float) and isinstance(default, float) and np.isnan(value) and np.isnan(default):
        return False
    return repr(value) != repr(default)


class TransformerMixin:
    """scikit-learn's ``TransformerMixin``: ``fit_transform``, ``set_output``, transformer tags.

    A subclass's ``transform`` returns ``self._output(result, X)``: the result as it is, or in the
    container ``set_output`` or scikit-learn's global ``transform_output`` asks for (a pandas
    DataFrame named by ``get_feature_names_out``).
    """

    #: what scikit-learn's set_output machinery wraps (its ``_SetOutputMixin`` convention)
    _sklearn_auto_wrap_output_keys = {"transform"}

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> Any:
        """``fit(X, y, **fit_params)``, then ``transform(X)``."""
        fitted = self.fit(X, **fit_params) if y is None else self.fit(X, y, **fit_params)
        return fitted.transform(X)

    def set_output(self, *, transform: str | None = None) -> TransformerMixin:
        """The container of ``transform``'s result: "default" (as computed), "pandas" or "polars"
        (a DataFrame named by ``get_feature_names_out``); None leaves it unchanged."""
        if transform is not None:
            self.__dict__.setdefault("_sklearn_output_config", {})["transform"] = transform
        return self

    def _output(self, result: Any, X: Any) -> Any:
        # without scikit-learn imported no global config can ask for a container
        if "_sklearn_output_config" not in vars(self) and "sklearn" not in sys.modules:
            return result
        from ._compat import wrap_data_with_container

        return wrap_data_with_container(result, X, self)

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import TransformerTags

        tags = super().__sklearn_tags__()
        tags.transformer_tags = TransformerTags()
        return tags


class ClassifierMixin:
    """scikit-learn's ``ClassifierMixin``: the classifier tags and ``score`` (accuracy)."""

    _estimator_type = "classifier"

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy of ``predict(X)`` against ``y`` (scikit-learn's ``accuracy_score``)."""
        from sklearn.metrics import accuracy_score

        return accuracy_score(y, self.predict(X), sample_weight=sample_weight)

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import ClassifierTags

        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags()
        tags.target_tags.required = True
        return tags


class available_if:  # noqa: N801 - a decorator, named as scikit-learn's
    """scikit-learn's ``available_if``: a method that exists only when ``check(self)`` passes.

    Reading the method otherwise raises AttributeError, so ``hasattr`` is False and scikit-learn
    (``cross_val_predict``, ``CalibratedClassifierCV``, soft voting) sees what the estimator can
    do. ``check`` returns True or raises AttributeError with its own message; a False return
    raises a generic one.

    Examples
    --------
    >>> class Model:
    ...     def __init__(self, loss):
    ...         self.loss = loss
    ...     @available_if(lambda self: self.loss == "log_loss")
    ...     def predict_proba(self, X):
    ...         return X
    >>> hasattr(Model("log_loss"), "predict_proba"), hasattr(Model("hinge"), "predict_proba")
    (True, False)
    """

    def __init__(self, check):
        self.check = check

    def __call__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)
        return self

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.fn
        if not self.check(obj):
            raise AttributeError(f"this {type(obj).__name__} has no attribute {self.fn.__name__!r}")
        return types.MethodType(self.fn, obj)


# -- scikit-learn's functions, for this package's estimators ----------------------------------
def clone(estimator: Any) -> Any:
    """scikit-learn's ``clone``: a new unfitted estimator with the same parameters (cloned if
    estimators, else deep copies). Estimators of other libraries are cloned by scikit-learn."""
    if not isinstance(estimator, Estimator):
        from sklearn.base import clone as sklearn_clone

        return sklearn_clone(estimator)
    params = {k: clone(v) if hasattr(v, "get_params") and not isinstance(v, type) else copy.deepcopy(v)
              for k, v in estimator.get_params(deep=False).items()}
    new = type(estimator)(**params)
    if "_sklearn_output_config" in vars(estimator):
        new._sklearn_output_config = copy.deepcopy(estimator._sklearn_output_config)
    return new


def is_fitted(estimator: Any) -> bool:
    """Whether ``estimator`` is fitted, as scikit-learn decides: its ``__sklearn_is_fitted__``,
    else any attribute ending with ``_``."""
    if hasattr(estimator, "__sklearn_is_fitted__"):
        return bool(estimator.__sklearn_is_fitted__())
    return any(k.endswith("_") and not k.startswith("__") for k in vars(estimator))


def check_is_fitted(estimator: Any) -> None:
    """scikit-learn's ``check_is_fitted(estimator)``: raise its ``NotFittedError`` (a ValueError
    and AttributeError) unless :func:`is_fitted`."""
    if not is_fitted(estimator):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' with "
                             "appropriate arguments before using this estimator.")


def estimator_type(estimator: Any) -> str | None:
    """scikit-learn's ``estimator_type`` tag of an estimator instance: "classifier",
    "regressor", ... or None (this package's estimators answer without building their tags)."""
    if isinstance(estimator, Estimator):
        return estimator._estimator_type
    from sklearn.utils import get_tags

    return get_tags(estimator).estimator_type


def is_classifier(estimator: Any) -> bool:
    """scikit-learn's ``is_classifier``: whether ``estimator``'s type tag is "classifier"."""
    return estimator_type(estimator) == "classifier"


def is_regressor(estimator: Any) -> bool:
    """scikit-learn's ``is_regressor``: whether ``estimator``'s type tag is "regressor"."""
    return estimator_type(estimator) == "regressor"


def check_random_state(seed: Any) -> np.random.RandomState:
    """scikit-learn's ``check_random_state``: a RandomState seeded with an int, or the given one
    (None, numpy's global one: from scikit-learn)."""
    if isinstance(seed, numbers.Integral):
        return np.random.RandomState(seed)
    if isinstance(seed, np.random.RandomState):
        return seed
    from sklearn.utils import check_random_state as sklearn_check_random_state

    return sklearn_check_random_state(seed)


def column_or_1d(y: Any, *, warn: bool = False) -> np.ndarray:
    """scikit-learn's ``column_or_1d``: labels as a 1-D array (a C-ordered 1-D numeric ndarray is
    returned as it is, as scikit-learn would)."""
    if type(y) is np.ndarray and y.ndim == 1 and y.flags.c_contiguous and y.dtype.kind in "biuf":
        return y
    from sklearn.utils.validation import column_or_1d as sklearn_column_or_1d

    return sklearn_column_or_1d(y, warn=warn)


def validate_data(estimator: Any, X: Any, *, reset: bool, accept_sparse: Any, dtype: tuple) -> Any:
    """scikit-learn's ``validate_data(estimator, X, reset=..., accept_sparse=..., dtype=...,
    ensure_all_finite=False)``: the checked rows, with ``n_features_in_`` and
    ``feature_names_in_`` set (``reset``) or compared.

    A 2-D ndarray of one of the ``dtype`` with rows and columns (and, unless ``reset``, the fitted
    width and no fitted feature names) is what scikit-learn returns unchanged: it is answered
    here. Anything else (lists, DataFrames, sparse matrices, conversions, errors and warnings)
    goes to scikit-learn.
    """
    plain = type(X) is np.ndarray and X.ndim == 2 and X.shape[0] >= 1 and X.shape[1] >= 1 and X.dtype in dtype
    if plain and reset:
        estimator.n_features_in_ = X.shape[1]
        estimator.__dict__.pop("feature_names_in_", None)
        return X
    if plain and "feature_names_in_" not in vars(estimator) and getattr(estimator, "n_features_in_", None) == X.shape[1]:
        return X
    from sklearn.utils.validation import validate_data as sklearn_validate_data

    return sklearn_validate_data(estimator, X, reset=reset, accept_sparse=accept_sparse, dtype=list(dtype),
                                 ensure_all_finite=False)
