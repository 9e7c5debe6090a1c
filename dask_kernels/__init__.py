"""dask_kernels: linearized-kernel features on Dask, stored in Zarr, learned out of core."""

from ._version import __version__
from .exact import core_kernel, cosine_rbf_kernel, gmm_kernel, laplacian_kernel, minmax_kernel, rbf_kernel
from .io import SparsePartitions, from_dataframe, read_csv, read_npy, read_parquet, read_svmlight, read_zarr
from .learn import KernelModel, fit_incremental, load_model
from .learn.softmax import SoftmaxSGD
from .maps import FeatureMap, from_spec, registered_maps
from .maps.core import CoRE
from .maps.fastfood import Fastfood
from .maps.gcws import GCWS, expand_codes
from .maps.nrff import NRFF
from .maps.nystroem import Nystroem
from .maps.rff import RFF
from .pipeline import FeatureStore, featurize, open_store
from .rng import RNG_SCHEME
from .select import RandomFeatureSelector, select_features

__all__ = [
    "CoRE",
    "FeatureMap",
    "FeatureStore",
    "Fastfood",
    "GCWS",
    "KernelModel",
    "NRFF",
    "Nystroem",
    "RFF",
    "RNG_SCHEME",
    "RandomFeatureSelector",
    "SoftmaxSGD",
    "SparsePartitions",
    "core_kernel",
    "cosine_rbf_kernel",
    "expand_codes",
    "featurize",
    "fit_incremental",
    "from_dataframe",
    "from_spec",
    "gmm_kernel",
    "laplacian_kernel",
    "load_model",
    "minmax_kernel",
    "open_store",
    "read_csv",
    "read_npy",
    "read_parquet",
    "read_svmlight",
    "read_zarr",
    "rbf_kernel",
    "registered_maps",
    "select_features",
    "__version__",
]
