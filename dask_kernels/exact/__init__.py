"""Exact kernels, for validating the feature maps and for small data."""

from .core import core_kernel
from .gmm import gmm_kernel, minmax_kernel
from .rbf import cosine_rbf_kernel, laplacian_kernel, rbf_kernel
from .sparse import sparse_rbf_kernel

__all__ = ["core_kernel", "cosine_rbf_kernel", "gmm_kernel", "laplacian_kernel", "minmax_kernel", "rbf_kernel",
           "sparse_rbf_kernel"]
