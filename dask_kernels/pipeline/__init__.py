"""Featurize row-partitioned input on Dask into resumable Zarr v3 feature stores."""

from .featurize import featurize, rebuild_map, run_tasks, transform_rows
from .store import FeatureStore, open_store

__all__ = ["FeatureStore", "featurize", "open_store", "rebuild_map", "run_tasks", "transform_rows"]
