"""Feature maps, one module per method.

Every module in this package is imported here, and each :class:`FeatureMap` subclass with a
``method`` name registers itself, so adding a method means adding one module: the pipeline,
the stores, the learner and the command line find it through :func:`from_spec` and
:func:`registered_maps`.
"""

import importlib
import pkgutil

from .base import FeatureMap, from_spec, registered_maps

for _info in pkgutil.iter_modules(__path__):
    if _info.name != "base" and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["FeatureMap", "from_spec", "registered_maps"]
