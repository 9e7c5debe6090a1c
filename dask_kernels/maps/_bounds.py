"""The bounds on map parameters: what a map may cost in memory and time per row, stated once.

A parameter is refused, with a ``ValueError`` naming it, its value and its bound, before any
table or output is allocated: by scikit-learn's parameter validation in ``fit`` (the
``n_components`` intervals below), by :meth:`FeatureMap._check_width` once the input width is
known (``fit``, which ``featurize`` runs on the first block of an unfitted map before it
creates a store, and :func:`~dask_kernels.maps.from_spec` with the spec's ``n_features_in``),
and by the command line's argument check. Without
them ``n_components=10**12`` or an svmlight file whose largest index is 2**31 fail only inside
an allocation of terabytes, or run for minutes on two rows.

Input width itself is bounded by :data:`dask_kernels.blocks.MAX_FEATURES_IN` (2**31, column
indices in int32); the bounds here are those of the maps' own work.
"""

from __future__ import annotations

import numbers

from .._params import Interval

#: Output width per row, ``n_components`` of every map but Nystroem (hashes of GCWS and CoRE,
#: features of RFF, NRFF and Fastfood): a row of 2**20 float32 features is 4 MiB, a stored
#: block of 256 such rows 1 GiB; DartMinHash's bucket arithmetic also stops at 2**20 hashes.
MAX_COMPONENTS = 2**20
#: Nystroem's landmarks: fitting builds the m x m kernel matrix and its eigenvectors in float64
#: (2 GiB each at m = 2**14) and the eigendecomposition costs O(m**3) (m**3 = 4.4e12 at 2**14).
MAX_LANDMARKS = 2**14
#: Bytes of a parameter table a map builds in each process: RFF's and NRFF's dense projection
#: matrix, d x k filled in float64 (then cast to the map's dtype) for the BLAS product; the
#: sparse frequencies of ``RFF(density<1)`` (an int64 index and a float64 value per nonzero);
#: GCWS's table when forced with ``table=True``.
MAX_TABLE_BYTES = 2**31
#: Fastfood's padded input width d (a power of two): every row is zero-padded to d values and
#: costs two Hadamard transforms of length d per block of d features, whatever its nonzeros:
#: about 36 ms per row at d = 2**20 (0.7 ms at 2**16; measured on a loaded machine), about 20
#: times more at 2**24.
#: With ``n_components <= MAX_COMPONENTS`` its ``ceil(k / d)`` blocks hold at most
#: ``k + d <= 2**21`` table entries.
MAX_PADDED_DIM = 2**20
#: Features Fastfood computes per row: whole blocks of d, those its feature ids touch, times d
#: (also its table entries). Ids ``0 .. k-1`` within the bounds above compute
#: ``ceil(k / d) d < k + d``; ids scattered over many blocks are refused beyond this.
MAX_FASTFOOD_BLOCK_FEATURES = MAX_COMPONENTS + MAX_PADDED_DIM
#: Input width of a GCWS map with a center: the center is a dense vector written into the spec
#: (JSON) and sparse rows are densified to subtract it, 8 MiB per row at 2**20 features.
MAX_CENTERED_FEATURES = 2**20


def components_interval(bound: int = MAX_COMPONENTS) -> list:
    """The ``_parameter_constraints`` entry of ``n_components``: an integer in ``[1, bound]``."""
    return [Interval(numbers.Integral, 1, bound, closed="both")]


def refuse_above(value: int, bound: int, message: str) -> None:
    """Raise ``ValueError(message)`` when ``value > bound``; ``message`` names the parameter, says
    why the bound is there and what to do, and is formatted with ``{value:,}`` and ``{bound:,}``."""
    if value > bound:
        raise ValueError(message.format(value=int(value), bound=int(bound)))


def check_projection(owner: str, n_features: int, n_components: int) -> None:
    """Refuse a dense d x k projection matrix of more than :data:`MAX_TABLE_BYTES` (float64)."""
    d, k = int(n_features), int(n_components)
    refuse_above(8 * d * k, MAX_TABLE_BYTES,
                 f"{owner}: n_features_in={d:,} x n_components={k:,} needs a dense projection matrix of "
                 "{value:,} bytes (built in float64), more than the bound of {bound:,}; lower n_components "
                 "(--n-components on the command line), or "
                 "for wide sparse input use RFF(density=...) (sparse frequencies), Fastfood or GCWS")
