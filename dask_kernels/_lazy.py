"""Module attributes imported on first use (PEP 562), so importing a module stays cheap."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any


def lazy_getattr(namespace: dict, names: Iterable[str], load: Callable[[], ModuleType]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``names`` from the module ``load()`` returns, each looked
    up once (then set in ``namespace``, the module's globals).

    Examples
    --------
    >>> import math
    >>> ns = {"__name__": "demo"}
    >>> getter = lazy_getattr(ns, ["pi"], lambda: math)
    >>> getter("pi") == math.pi and ns["pi"] == math.pi
    True
    """
    names = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(load(), name)
        namespace[name] = value  # imported once
        return value

    return __getattr__
