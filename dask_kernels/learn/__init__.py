"""Out-of-core training from feature stores or raw input featurized on the fly."""

from .incremental import fit_incremental
from .metrics import erp
from .model import KernelModel, load_model
from .sources import ArraySource, BlockSource, PartitionSource, StoreSource, as_source

__all__ = ["ArraySource", "BlockSource", "KernelModel", "PartitionSource", "StoreSource", "as_source", "erp",
           "fit_incremental", "load_model"]
