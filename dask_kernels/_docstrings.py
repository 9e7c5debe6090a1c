"""Docstring text that several public objects share, written once.

A docstring names a piece by a line that holds only ``%(name)s``; :func:`fill_doc` replaces the
line with the piece, indented as the line was. Sphinx (autodoc and numpydoc), ``help()`` and
doctest all read ``__doc__`` at run time, so each of them sees the full text. An unknown name
is a ``KeyError`` at import time.
"""

from __future__ import annotations

import re
import textwrap
from typing import TypeVar

T = TypeVar("T")

#: name -> text (numpydoc, unindented). Parameters first, then attributes, then references.
PIECES = {
    # -- parameters of the feature maps ---------------------------------------------------------
    "n_components": """\
n_components : int, default=100
    Output width k, exactly; at most 2**20 (``dask_kernels.maps._bounds``).""",
    "seed": """\
seed : int, default=0
    Seed of the counter-based random numbers (0 <= seed < 2**64): the same seed gives the same
    output in every process.""",
    "n_jobs": """\
n_jobs : int or None, default=None
    Threads of :meth:`transform` over row blocks of in-memory input: None is every usable
    CPU when called from the main thread and one otherwise (never nested inside Dask tasks
    or your own pool), -1 every CPU, -2 all but one. The output is bitwise identical for
    any value, but for RFF and NRFF with a frequency table of 2**23 values or more, whose
    product then runs on ``n_jobs`` BLAS threads: equal to the rounding of that product. It
    is not part of :meth:`spec` (it changes speed, not features).""",
    "feature_ids": """\
feature_ids : array-like of int or None, default=None
    Compute the features with these ids (distinct integers in ``[0, 2**63)``, exactly
    ``n_components`` of them) instead of ``0 .. n_components-1``. Lists longer than 256 ids
    are kept beside the spec (a sidecar), not in it.""",
    "input_scale": """\
scale : {"auto", "auto_standard", "minmax", "maxabs", "standard"} or None, default=None
    Per-feature input scaling learned in ``fit`` from all training rows, GCWS's rules (a
    Gaussian kernel on raw columns is decided by the column of the largest units): "minmax"
    maps each column's training range onto [-1, 1] (dense input: fitting it on sparse input is
    refused, as scikit-learn's ``MinMaxScaler`` does); "maxabs" divides each column by its
    largest ``|x|`` (zeros stay zeros, sparse stays sparse); "standard" centres each column on
    its mean and divides it by its standard deviation (dense input, as ``StandardScaler``);
    "auto" is "minmax" for dense input
    with more than half of its entries nonzero, else "maxabs", and no scaling for input of more
    than 2**20 features (the statistics would not fit the spec); "auto_standard" is the same
    with "standard" in place of
    "minmax". A constant column gets factor 1. With ``gamma="scale"`` the
    bandwidth is learned from the scaled rows. :meth:`validate_block` returns the scaled rows
    (so :meth:`transform` of in-memory rows holds a scaled copy of them, in ``dtype``); raw
    input may then reach ``2**1022`` (``max_abs_input``), and scaled values beyond
    ``max_abs_features`` are clipped to it. None: no scaling (specs without ``scale`` are read
    so). The statistics are exact column extremes (or, for "standard", exact column sums), so
    the spec is the same bits for any chunking; a dask array or partitioned sparse input is
    read once to compute them.""",
    # -- attributes of the random Fourier maps --------------------------------------------------
    "fourier_attributes": """\
n_features_in_ : int
n_output_features_ : int
    ``n_components``.
output_dtype_ : numpy.dtype
scale_ : dict or None
    The fitted scaling (``scale`` given): ``{"rule": "minmax", "min": [...], "max": [...]}`` or
    ``{"rule": "maxabs", "max_abs": [...]}`` or ``{"rule": "standard", "mean": [...], "std": [...]}``;
    None without scaling.""",
    # -- references -----------------------------------------------------------------------------
    "core_references": """\
References
----------
.. [1] P. Li, "CoRE Kernels", UAI 2014.""",
    "selection_references": """\
References
----------
.. [1] A. May, "Kernel approximation methods for speech recognition", PhD thesis, Columbia
   University, 2017, section 5.1, Algorithm 1.""",
}

_MARKER = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*$", re.MULTILINE)


def fill_doc(obj: T) -> T:
    """Replace every ``%(name)s`` line of ``obj.__doc__`` with ``PIECES[name]`` (a decorator).

    Examples
    --------
    >>> @fill_doc
    ... def f():
    ...     '''Parameters
    ...     ----------
    ...     %(seed)s
    ...     '''
    >>> print(f.__doc__.splitlines()[2])
        seed : int, default=0
    """
    if obj.__doc__:  # None under python -OO
        obj.__doc__ = _MARKER.sub(lambda m: textwrap.indent(PIECES[m.group(2)], m.group(1)), obj.__doc__)
    return obj
