"""dask_kernels: linearized-kernel features on Dask, stored in Zarr, learned out of core.

The public names are imported on first use (:mod:`dask_kernels._lazy`), so ``import
dask_kernels`` and the command line start fast and a process imports only the layers it uses (a
LocalCluster's worker server preloads just what featurizing needs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes
from ._version import __version__

#: public name -> the module that defines it
_LAZY = {
    "core_kernel": ".exact", "cosine_rbf_kernel": ".exact", "gmm_kernel": ".exact", "laplacian_kernel": ".exact",
    "minmax_kernel": ".exact", "rbf_kernel": ".exact",
    "SparsePartitions": ".io", "from_dataframe": ".io", "read_csv": ".io", "read_npy": ".io",
    "read_parquet": ".io", "read_svmlight": ".io", "read_zarr": ".io",
    "KernelModel": ".learn", "fit_incremental": ".learn", "load_model": ".learn",
    "SoftmaxSGD": ".learn.softmax",
    "FeatureMap": ".maps.base", "from_spec": ".maps.spec", "registered_maps": ".maps.spec",
    "CoRE": ".maps.core", "Fastfood": ".maps.fastfood", "GCWS": ".maps.gcws", "expand_codes": ".maps.gcws",
    "NRFF": ".maps.nrff", "Nystroem": ".maps.nystroem", "RFF": ".maps.rff",
    "FeatureStore": ".pipeline", "featurize": ".pipeline", "open_store": ".pipeline",
    "RNG_SCHEME": ".rng",
    "RandomFeatureSelector": ".select", "select_features": ".select",
    "SimilarityIndex": ".similarity", "similarity_join": ".similarity",
}

if TYPE_CHECKING:  # the same names for type checkers and IDEs
    from .exact import core_kernel, cosine_rbf_kernel, gmm_kernel, laplacian_kernel, minmax_kernel, rbf_kernel
    from .io import SparsePartitions, from_dataframe, read_csv, read_npy, read_parquet, read_svmlight, read_zarr
    from .learn import KernelModel, fit_incremental, load_model
    from .learn.softmax import SoftmaxSGD
    from .maps.base import FeatureMap
    from .maps.core import CoRE
    from .maps.fastfood import Fastfood
    from .maps.gcws import GCWS, expand_codes
    from .maps.nrff import NRFF
    from .maps.nystroem import Nystroem
    from .maps.rff import RFF
    from .maps.spec import from_spec, registered_maps
    from .pipeline import FeatureStore, featurize, open_store
    from .rng import RNG_SCHEME
    from .select import RandomFeatureSelector, select_features
    from .similarity import SimilarityIndex, similarity_join


__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)

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
    "SimilarityIndex",
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
    "similarity_join",
    "__version__",
]
