"""Feature maps, one module per method.

Each :class:`FeatureMap` subclass with a ``method`` name registers itself when its class is
defined, and :mod:`dask_kernels.maps.spec` lists every map module of the package (imported when
its method is named), so :func:`from_spec` and :func:`registered_maps` know all of them whatever
was imported before: adding a method means adding its module and its line in the two tables
there. The pipeline, the stores,
the learner and the command line find maps through those two functions.

The package itself imports nothing until one of its names is used (:mod:`dask_kernels._lazy`):
a Dask worker that only runs a map's kernels (``_*`` modules such as
:mod:`dask_kernels.maps._gcws_kernels`) imports them without the map classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from .base import FeatureMap
    from .spec import from_spec, load_map, registered_maps, save_map

_LAZY = {"FeatureMap": ".base", "from_spec": ".spec", "load_map": ".spec", "registered_maps": ".spec",
         "save_map": ".spec"}

__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)

__all__ = ["FeatureMap", "from_spec", "load_map", "registered_maps", "save_map"]
