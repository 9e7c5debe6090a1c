"""Featurize row-partitioned input on Dask into resumable Zarr v3 feature stores."""

from .._lazy import lazy_attributes

# Imported on first use: a command that only opens a store or a saved model (``train``, ``info``,
# ``score``) needs ``location`` or ``store``, not ``featurize`` with dask.array.
_LAZY = {"featurize": ".featurize", "run_tasks": ".featurize", "LeaseLostError": ".leases",
         "StoreError": ".location", "FeatureStore": ".store", "StoreIntegrityError": ".store",
         "open_store": ".store", "rebuild_map": ".tasks", "transform_rows": ".tasks"}
__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)

__all__ = ["FeatureStore", "LeaseLostError", "StoreError", "StoreIntegrityError", "featurize", "open_store",
           "rebuild_map", "run_tasks", "transform_rows"]
