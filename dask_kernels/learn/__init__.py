"""Out-of-core training from feature stores or raw input featurized on the fly.

Names are imported on first use (:mod:`dask_kernels._lazy`): loading a saved model to predict
does not import the training loop and its Numba kernels.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_LAZY = {
    "fit_incremental": ".incremental", "erp": ".metrics", "KernelModel": ".model", "load_model": ".model",
    "ArraySource": ".sources", "BlockSource": ".sources", "PartitionSource": ".sources", "StoreSource": ".sources",
    "as_source": ".sources",
}

if TYPE_CHECKING:  # the same names for type checkers and IDEs
    from .incremental import fit_incremental
    from .metrics import erp
    from .model import KernelModel, load_model
    from .sources import ArraySource, BlockSource, PartitionSource, StoreSource, as_source

__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)

__all__ = ["ArraySource", "BlockSource", "KernelModel", "PartitionSource", "StoreSource", "as_source", "erp",
           "fit_incremental", "load_model"]
