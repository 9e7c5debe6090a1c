"""dask_kernels: linearized-kernel features on Dask, stored in Zarr, learned out of core."""

from importlib.metadata import PackageNotFoundError, version

from .exact import gmm_kernel, minmax_kernel
from .learn import KernelModel, fit_incremental, load_model
from .maps import FeatureMap, from_spec, registered_maps
from .maps.gcws import GCWS, expand_codes
from .rng import RNG_SCHEME

try:
    __version__ = version("dask-kernels")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+source"

__all__ = [
    "FeatureMap",
    "GCWS",
    "KernelModel",
    "RNG_SCHEME",
    "expand_codes",
    "fit_incremental",
    "from_spec",
    "gmm_kernel",
    "load_model",
    "minmax_kernel",
    "registered_maps",
    "__version__",
]
