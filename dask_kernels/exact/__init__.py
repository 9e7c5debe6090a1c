"""Exact kernels, for validating the feature maps and for small data."""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

#: name -> module; imported on first use (:mod:`dask_kernels._lazy`): Nystroem's kernel blocks
#: (:mod:`dask_kernels.exact.pairwise`) then load neither scikit-learn's pairwise metrics nor
#: SciPy's distances, which every command that loads a map used to import
_LAZY = {"core_kernel": ".core", "gmm_kernel": ".gmm", "minmax_kernel": ".gmm", "cosine_rbf_kernel": ".rbf",
         "laplacian_kernel": ".rbf", "rbf_kernel": ".rbf", "sparse_rbf_kernel": ".sparse"}

if TYPE_CHECKING:  # the same names for type checkers and IDEs
    from .core import core_kernel
    from .gmm import gmm_kernel, minmax_kernel
    from .rbf import cosine_rbf_kernel, laplacian_kernel, rbf_kernel
    from .sparse import sparse_rbf_kernel

__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)

__all__ = ["core_kernel", "cosine_rbf_kernel", "gmm_kernel", "laplacian_kernel", "minmax_kernel", "rbf_kernel",
           "sparse_rbf_kernel"]
