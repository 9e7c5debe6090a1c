"""dask_kernels: linearized-kernel features on Dask, stored in Zarr, learned out of core."""

from importlib.metadata import PackageNotFoundError, version

from .exact import gmm_kernel, minmax_kernel
from .maps import FeatureMap, from_spec, registered_maps
from .maps.gcws import GCWS, expand_codes
from .io import SparsePartitions, read_npy, read_svmlight, read_zarr
from .pipeline import FeatureStore, featurize, open_store
from .rng import RNG_SCHEME

try:
    __version__ = version("dask-kernels")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+source"

__all__ = [
    "FeatureMap",
    "FeatureStore",
    "SparsePartitions",
    "featurize",
    "open_store",
    "read_npy",
    "read_svmlight",
    "read_zarr",
    "GCWS",
    "RNG_SCHEME",
    "expand_codes",
    "from_spec",
    "gmm_kernel",
    "minmax_kernel",
    "registered_maps",
    "__version__",
]
