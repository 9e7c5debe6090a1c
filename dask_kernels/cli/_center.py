"""``--param center=mean`` at the command line: the mean of every input row, in one pass.

A map's own ``fit`` sees one block (``featurize`` and ``fit_incremental`` fit an unfitted map on
the first block of rows), so ``center="mean"`` would centre on that block only. The command line
computes the column means of the whole input on the cluster (one task per partition, merged in a
tree) and passes them as the explicit ``center`` vector, so the stored spec records the centre
used. The sums are exact (:mod:`dask_kernels.maps._exactsum`): the centre is the correctly
rounded mean of the rows, the same bits for any partitioning or block size.
"""

import numpy as np


def _block_column_sums(X, row_offset, n_features):
    from dask_kernels.blocks import validate_block
    from dask_kernels.maps._exactsum import block_sums

    X = validate_block(X, n_features, dtypes=(np.float64, np.float32), max_abs=None, accept_sparse=True,
                       row_offset=row_offset)  # NaN or infinity: an error naming the row and column
    return block_sums(X, by_column=True)


def column_means(X):
    """Column means of an array, a dask array or :class:`~dask_kernels.io.SparsePartitions` (one
    pass): each the correctly rounded float64 of the exact mean, whatever the chunking."""
    from dask_kernels.maps._exactsum import exact_mean, merge_sums
    from dask_kernels.maps._partitioned import is_dask, is_partitions, n_features_of, reduce_blocks

    n = int(X.shape[0])
    if n == 0:
        raise ValueError("center=mean: the input has no rows")
    if is_dask(X) or is_partitions(X):
        sums, n, _ = reduce_blocks(X, _block_column_sums, merge_sums, n_features_of(X))
    else:
        sums = _block_column_sums(X, 0, X.shape[1])
    return exact_mean(sums, n)


def resolve_center(fmap, X):
    """``fmap`` with ``center="mean"`` replaced by the full-data mean of ``X``; others unchanged."""
    params = fmap.get_params()
    if isinstance(params.get("center"), str) and params["center"] == "mean":
        fmap = fmap.set_params(center=column_means(X).tolist())
    return fmap
