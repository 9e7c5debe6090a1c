"""The package's one way of importing a module's attributes on first use (PEP 562).

Where importing eagerly would cost a process something it may never use (scikit-learn and
SciPy's statistics in a Dask worker that only runs a map's kernels, every layer in a command
that needs one), a module declares a table ``_LAZY = {name: module}`` and sets
``__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)``. The table is a plain dict literal
so that ``tests/test_imports.py`` reads it as import edges when it checks the package for import
cycles.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(namespace: dict, table: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list]]:
    """A module's ``__getattr__`` and ``__dir__`` serving each name of ``table`` from its module.

    Parameters
    ----------
    namespace : dict
        The module's ``globals()``; a name, once imported, is set there (imported once).
    table : mapping of str to str
        Attribute name -> module defining it, absolute (``"sklearn.utils"``) or relative to the
        module's package (``".maps.rff"``).

    Examples
    --------
    >>> ns = {"__name__": "demo", "__package__": None}
    >>> getattr_, dir_ = lazy_attributes(ns, {"pi": "math"})
    >>> import math
    >>> getattr_("pi") == math.pi and ns["pi"] == math.pi
    True
    >>> "pi" in dir_()
    True
    """
    table = dict(table)

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(module, namespace["__package__"]), name)
        except AttributeError as e:  # raised while importing: not "no such name" (which
            # `from package import name` would report, hiding the cause)
            raise ImportError(f"{namespace['__name__']}.{name}: importing {module} failed: {e}") from e
        namespace[name] = value
        return value

    def __dir__() -> list:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
