"""Exact kernels, for validating the feature maps and for small data."""

from .gmm import gmm_kernel, minmax_kernel

__all__ = ["gmm_kernel", "minmax_kernel"]
