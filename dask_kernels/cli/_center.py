"""``--param center=mean`` at the command line: the mean of every input row, in one pass.

A map's own ``fit`` sees one block (``featurize`` and ``fit_incremental`` fit an unfitted map on
the first block of rows), so ``center="mean"`` would centre on that block only. The command line
computes the column means of the whole input on the cluster (one task per partition, summed)
and passes them as the explicit ``center`` vector, so the stored spec records the centre used.
"""

import dask
import numpy as np


def _partition_sums(part, scale):
    X = part[0]
    s = np.asarray(X.sum(axis=0), dtype=np.float64).ravel()
    scaled = np.asarray((X * scale).sum(axis=0), dtype=np.float64).ravel()  # if the plain sum overflows
    return s, scaled


def column_means(X):
    """Column means of a dask array or :class:`~dask_kernels.io.SparsePartitions` (one pass).

    Sums that overflow float64 fall back to summing ``x / n_rows`` (as GCWS's own fit does).
    """
    n = int(X.shape[0])
    if n == 0:
        raise ValueError("center=mean: the input has no rows")
    scale = 1.0 / n
    if hasattr(X, "to_delayed") and hasattr(X, "row_counts"):  # SparsePartitions
        parts = dask.compute(*[dask.delayed(_partition_sums)(p, scale) for p in X.to_delayed()])
        total = np.sum([p[0] for p in parts], axis=0)
        scaled = np.sum([p[1] for p in parts], axis=0)
    else:
        total, scaled = dask.compute(X.sum(axis=0, dtype=np.float64), (X * scale).sum(axis=0, dtype=np.float64))
    mean = np.asarray(total, dtype=np.float64) / n
    if not np.all(np.isfinite(mean)):
        mean = np.asarray(scaled, dtype=np.float64)
    if not np.all(np.isfinite(mean)):
        col = int(np.flatnonzero(~np.isfinite(mean))[0])
        raise ValueError(f"center=mean: column {col} of the input has non-finite values")
    return mean


def resolve_center(fmap, X):
    """``fmap`` with ``center="mean"`` replaced by the full-data mean of ``X``; others unchanged."""
    params = fmap.get_params()
    if isinstance(params.get("center"), str) and params["center"] == "mean":
        fmap = fmap.set_params(center=column_means(X).tolist())
    return fmap
