"""One pass over partitioned input: a merge tree of per-block results on the active scheduler.

Maps that learn from all rows (Nystroem's landmark sample, GCWS's scale statistics) compute a
small result per block of a dask array or of :class:`~dask_kernels.io.svmlight.SparsePartitions`
and merge them in a tree of fan-in ``MERGE_FAN_IN``, so no process holds more than a few
blocks' results and every block is read once.
"""

from __future__ import annotations

from typing import Any, Callable

import dask
import numpy as np

#: Results merged per tree node.
MERGE_FAN_IN = 8


def dask_rows(X: Any) -> Any:
    """``X`` as the maps' ``fit`` reads partitioned input: a dask DataFrame as the dask array of
    its rows (row counts computed in one pass, as ``featurize`` reads it), anything else as it is."""
    from ..io.tabular import as_rows, is_dataframe

    return as_rows(X)[0] if is_dataframe(X) else X


def is_dask(X: Any) -> bool:
    return hasattr(X, "dask") and hasattr(X, "to_delayed")


def is_partitions(X: Any) -> bool:
    return hasattr(X, "loader") and hasattr(X, "row_counts") and hasattr(X, "to_delayed")


def n_features_of(X: Any) -> int:
    """Width of a dask array or SparsePartitions, without reading it."""
    return int(X.n_features) if is_partitions(X) else int(X.shape[1])


def delayed_blocks(X: Any) -> tuple[list, list, int]:
    """``(blocks, row_offsets, n_features)`` of ``X`` (a dask array or SparsePartitions): one
    delayed block of whole rows each."""
    if is_partitions(X):
        return [p[0] for p in X.to_delayed()], list(X.row_offsets), int(X.n_features)
    if X.ndim != 2:
        raise ValueError(f"expected 2-d rows, got shape {X.shape}")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError("row chunk sizes are unknown; call X.compute_chunk_sizes() first")
    X = X.rechunk({1: -1})
    offsets = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(np.int64).tolist()
    return list(X.to_delayed().ravel()), offsets, int(X.shape[1])


def reduce_blocks(X: Any, part: Callable, merge: Callable, *args: Any) -> tuple[Any, int, int]:
    """``merge(*results)`` over ``part(block, row_offset, *args)`` of every block of ``X`` (a
    dask array or SparsePartitions); returns ``(result, n_rows, n_features)``. ``merge`` receives
    at most ``MERGE_FAN_IN`` results at a time and must not depend on how they are grouped."""
    blocks, offsets, d = delayed_blocks(X)
    level = [dask.delayed(part, pure=True)(b, int(o), *args) for b, o in zip(blocks, offsets)]
    while len(level) > 1:
        level = [dask.delayed(merge, pure=True)(*level[i:i + MERGE_FAN_IN])
                 for i in range(0, len(level), MERGE_FAN_IN)]
    result = level[0].compute() if level else None
    return result, int(X.shape[0]), int(d)
