"""Featurize row-partitioned input on Dask into resumable Zarr v3 feature stores."""

from .featurize import featurize, run_tasks
from .leases import LeaseLostError
from .location import StoreError
from .store import FeatureStore, StoreIntegrityError, open_store
from .tasks import rebuild_map, transform_rows

__all__ = ["FeatureStore", "LeaseLostError", "StoreError", "StoreIntegrityError", "featurize", "open_store",
           "rebuild_map", "run_tasks", "transform_rows"]
