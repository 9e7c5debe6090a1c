"""Constructor-parameter constraints, checked without importing scikit-learn.

The package's estimators declare their parameters' valid values as scikit-learn's do
(``_parameter_constraints``: ``Interval``, ``StrOptions``, ``HasMethods``, ``None``, a type, or
the strings ``"boolean"``, ``"random_state"``, ``"array-like"``), with the objects of this module:
they have the same constructors as scikit-learn's but are plain classes, so defining an estimator
imports no scikit-learn (any of its modules costs about 1.1 CPU seconds, half of a small command;
see :mod:`dask_kernels._estimator`).

:func:`validate_params` accepts a valid value here. Only an invalid one goes to scikit-learn's
``validate_parameter_constraints``, which raises its ``InvalidParameterError`` with its message,
so errors are exactly scikit-learn's. A class declares its constraints with
:class:`ParameterConstraints`: reading ``_parameter_constraints`` then gives scikit-learn's own
constraint objects (what its ``check_estimator`` inspects), while :func:`declared_constraints`
gives the objects of this module.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["HasMethods", "Interval", "ParameterConstraints", "StrOptions", "declared_constraints",
           "validate_params"]


class Interval:
    """scikit-learn's ``Interval(type, left, right, *, closed)``: an int or real in a range
    (None: unbounded on that side)."""

    def __init__(self, type: type, left: float | None, right: float | None, *, closed: str) -> None:
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"closed must be 'left', 'right', 'both' or 'neither', got {closed!r}")
        self.type, self.left, self.right, self.closed = type, left, right, closed

    def is_satisfied_by(self, value: Any) -> bool:
        if not isinstance(value, self.type):
            return False
        if not isinstance(value, numbers.Integral) and np.isnan(value):
            return False
        left = -np.inf if self.left is None else self.left  # an open unbounded side excludes infinity
        right = np.inf if self.right is None else self.right
        if value < left if self.closed in ("left", "both") else value <= left:
            return False
        return value <= right if self.closed in ("right", "both") else value < right

    def sklearn(self) -> Any:
        from ._compat import Interval as SklearnInterval

        return SklearnInterval(self.type, self.left, self.right, closed=self.closed)


class StrOptions:
    """scikit-learn's ``StrOptions(options)``: one of a set of strings."""

    def __init__(self, options: set[str]) -> None:
        self.options = options

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.options

    def sklearn(self) -> Any:
        from ._compat import StrOptions as SklearnStrOptions

        return SklearnStrOptions(self.options)


class HasMethods:
    """scikit-learn's ``HasMethods(methods)``: an object with these methods."""

    def __init__(self, methods: str | list[str]) -> None:
        self.methods = [methods] if isinstance(methods, str) else list(methods)

    def is_satisfied_by(self, value: Any) -> bool:
        return all(callable(getattr(value, m, None)) for m in self.methods)

    def sklearn(self) -> Any:
        from ._compat import HasMethods as SklearnHasMethods

        return SklearnHasMethods(self.methods)


def _satisfied(constraint: Any, value: Any) -> bool:
    """Whether ``value`` meets ``constraint`` as scikit-learn decides; False for a constraint
    this module does not know (scikit-learn then decides)."""
    if constraint is None:
        return value is None
    if isinstance(constraint, (Interval, StrOptions, HasMethods)):
        return constraint.is_satisfied_by(value)
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    if constraint == "boolean":
        return isinstance(value, (bool, np.bool_))
    if constraint == "random_state":
        return (value is None or isinstance(value, np.random.RandomState)
                or Interval(numbers.Integral, 0, 2**32 - 1, closed="both").is_satisfied_by(value))
    if constraint == "array-like":  # the plain ones; scikit-learn judges any other object
        return isinstance(value, (list, tuple, np.ndarray))
    return False


def validate_params(constraints: Mapping[str, Any], params: Mapping[str, Any], caller: str) -> None:
    """scikit-learn's ``validate_parameter_constraints(constraints, params, caller)``.

    Parameters without a constraint (or with ``"no_validation"``) are not checked. A value that
    meets none of its constraints here is handed to scikit-learn, which raises its
    ``InvalidParameterError`` (a ValueError and TypeError) naming the parameter and ``caller``.

    Examples
    --------
    >>> import numbers
    >>> validate_params({"k": [Interval(numbers.Integral, 1, None, closed="left")]}, {"k": 3}, "T")
    >>> try:
    ...     validate_params({"k": [Interval(numbers.Integral, 1, None, closed="left")]}, {"k": 0}, "T")
    ... except ValueError as e:
    ...     print(e)
    The 'k' parameter of T must be an int in the range [1, inf). Got 0 instead.
    """
    bad = {name: value for name, value in params.items()
           if name in constraints and constraints[name] != "no_validation"
           and not any(_satisfied(c, value) for c in constraints[name])}
    if bad:
        from ._compat import validate_parameter_constraints

        validate_parameter_constraints(_sklearn_constraints({k: constraints[k] for k in bad}), bad, caller_name=caller)


def _sklearn_constraints(constraints: Mapping[str, Any]) -> dict:
    return {name: cs if cs == "no_validation" else [c.sklearn() if hasattr(c, "sklearn") else c for c in cs]
            for name, cs in constraints.items()}


class ParameterConstraints:
    """A class's ``_parameter_constraints``: declared with this module's objects, read as
    scikit-learn's (a descriptor).

    ``cls._parameter_constraints`` (what scikit-learn's ``check_estimator`` reads) builds
    scikit-learn's constraint objects, importing it; :func:`declared_constraints` returns the
    declared ones, which :func:`validate_params` checks without it.

    Examples
    --------
    >>> class T:
    ...     _parameter_constraints = ParameterConstraints({"on": ["boolean"]})
    >>> declared_constraints(T)
    {'on': ['boolean']}
    """

    def __init__(self, constraints: Mapping[str, Any]) -> None:
        self.declared = dict(constraints)

    def __get__(self, instance: Any, owner: type) -> dict:
        return _sklearn_constraints(self.declared)


def declared_constraints(cls: type) -> Mapping[str, Any]:
    """The constraints ``cls`` declares: this module's objects when declared with
    :class:`ParameterConstraints`; a plain ``_parameter_constraints`` dict (a subclass written as
    for scikit-learn) as it is; ``{}`` without any."""
    for klass in cls.__mro__:
        if "_parameter_constraints" in vars(klass):
            value = vars(klass)["_parameter_constraints"]
            return value.declared if isinstance(value, ParameterConstraints) else value
    return {}
