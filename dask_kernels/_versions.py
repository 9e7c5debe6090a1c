"""The library versions a saved model records, and what loading it under other versions says.

A saved model's ``model.json`` holds ``"versions"``: the versions of the libraries that define
what the model computes (:data:`RECORDED`). Loading it where any of them differs warns with
:class:`SavedVersionWarning` naming each difference, and an estimator class the installed
scikit-learn no longer has (``PassiveAggressiveClassifier`` and ``PassiveAggressiveRegressor``
are deprecated in 1.8) is a clear error naming the version that saved it.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

#: Distributions whose versions a saved model records: the package (the map's features), the
#: estimator's library (what its arrays mean) and NumPy (the arrays' arithmetic).
RECORDED = ("dask-kernels", "numpy", "scikit-learn")

#: Longest version string read from a model file.
_MAX_LEN = 64


class SavedVersionWarning(UserWarning):
    """A saved model is loaded under other library versions than those that wrote it."""


def versions() -> dict[str, str]:
    """The installed versions of :data:`RECORDED` (what a saved model records).

    Examples
    --------
    >>> from dask_kernels._versions import versions
    >>> sorted(versions())
    ['dask-kernels', 'numpy', 'scikit-learn']
    """
    found = {}
    for name in RECORDED:
        try:
            found[name] = version(name)
        except PackageNotFoundError:  # the package run from a source tree, not installed
            found[name] = "unknown"
    return found


def check_saved(saved: Any, where: str) -> dict[str, str]:
    """Validate a model file's ``versions`` entry (None: a model saved before they were
    recorded) and warn if the installed versions differ; return it as a dict.

    Raises
    ------
    ValueError
        Naming ``where`` if the entry is not an object of short strings.
    """
    if saved is None:
        return {}
    if not isinstance(saved, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and len(k) <= _MAX_LEN and len(v) <= _MAX_LEN
            for k, v in saved.items()) or len(saved) > 4 * len(RECORDED):
        raise ValueError(f"{where}: versions must be an object of library names to version strings")
    here = versions()
    differ = [f"{name} {saved[name]} (installed: {here[name]})" for name in RECORDED
              if name in saved and saved[name] != here[name]]
    if differ:
        warnings.warn(f"{where}: the model was saved with {', '.join(differ)}; its predictions may differ "
                      f"from those it gave when saved", SavedVersionWarning, stacklevel=3)
    return dict(saved)


def estimator_class(module: str, name: str, saved: Mapping[str, str], where: str) -> type:
    """Class ``name`` of ``module``, or ValueError naming ``where`` when the installed library
    does not have it (a class removed from a later scikit-learn), and the version that saved it."""
    cls = getattr(importlib.import_module(module), name, None)
    if cls is None:
        library = "scikit-learn" if module.startswith("sklearn") else "dask-kernels"
        here = versions()[library]
        then = f" (the model was saved with {library} {saved[library]})" if library in saved else ""
        raise ValueError(f"{where}: estimator.class {name} is not in {library} {here} installed here{then}: "
                         f"load it where {library} has {name}")
    return cls
