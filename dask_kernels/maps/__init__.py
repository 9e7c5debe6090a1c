"""Feature maps, one module per method.

Every module in this package is imported with :mod:`dask_kernels.maps.base` (at its end), and
each :class:`FeatureMap` subclass with a ``method`` name registers itself, so adding a method
means adding one module: the pipeline, the stores, the learner and the command line find it
through :func:`from_spec` and :func:`registered_maps`.

The package itself imports nothing until one of those names is used (PEP 562): a Dask worker
that only runs a map's kernels (``_*`` modules such as :mod:`dask_kernels.maps._gcws_kernels`)
imports them without scikit-learn, which the map classes are built on.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from .base import FeatureMap, from_spec, registered_maps

__all__ = ["FeatureMap", "from_spec", "registered_maps"]


# .base imports and registers every map
__getattr__ = lazy_getattr(globals(), __all__, lambda: importlib.import_module(".base", __name__))
