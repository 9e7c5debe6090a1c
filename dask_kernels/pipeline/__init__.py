"""Featurize row-partitioned input on Dask into resumable Zarr v3 feature stores.

Names are imported on first use (:mod:`dask_kernels._lazy`): a command that only reads a store
or a saved model does not import the featurizing graph (dask.array) and its kernels.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_LAZY = {
    "featurize": ".featurize", "run_tasks": ".featurize", "LeaseLostError": ".leases", "StoreError": ".location",
    "FeatureStore": ".store", "StoreIntegrityError": ".store", "open_store": ".store",
    "rebuild_map": ".tasks", "transform_rows": ".tasks",
}

if TYPE_CHECKING:  # the same names for type checkers and IDEs
    from .featurize import featurize, run_tasks
    from .leases import LeaseLostError
    from .location import StoreError
    from .store import FeatureStore, StoreIntegrityError, open_store
    from .tasks import rebuild_map, transform_rows

__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)

__all__ = ["FeatureStore", "LeaseLostError", "StoreError", "StoreIntegrityError", "featurize", "open_store",
           "rebuild_map", "run_tasks", "transform_rows"]
