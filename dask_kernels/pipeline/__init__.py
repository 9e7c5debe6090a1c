"""Featurize row-partitioned input on Dask into resumable Zarr v3 feature stores."""

from .featurize import featurize, rebuild_map, run_tasks, transform_rows
from .leases import LeaseLostError
from .location import StoreError
from .store import FeatureStore, StoreIntegrityError, open_store

__all__ = ["FeatureStore", "LeaseLostError", "StoreError", "StoreIntegrityError", "featurize", "open_store",
           "rebuild_map", "run_tasks", "transform_rows"]
