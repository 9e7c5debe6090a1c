"""The read layers of :func:`~dask_kernels.io.parquet.read_parquet` found again in a graph.

An array of ``read_parquet`` carries its partitions (file, row groups, rows, file identity) in
its read layer; :func:`_reader_layer` finds that layer, and the functions here use it: to read a
partition's rows and labels in one task for a consumer of both (:func:`row_label_pairs`,
:func:`read_together`), and to name the file and the row in that file behind a global row
(:func:`row_source`, :func:`name_input_error`).
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np

from .._compat import Blockwise, HighLevelGraph, blockwise
from .parquet import _call, _hash, _options_json, _PartReader, _read_layer


class _JointReader:
    """Reads one partition's feature columns and label column in one pass over its row groups
    (one open and one read instead of one per array): returns ``(rows, labels)``."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __call__(self, url, groups, n, identity):
        tables = self.x.tables(url, groups, n, identity, dict.fromkeys((*self.x.columns, *self.y.columns)),
                               self.y.dictionary())
        return self.x.rows(tables, n, url, groups, identity), self.y.rows(tables, n, url, groups, identity)


def _reader_layer(A):
    """``(layer name, reader, parts in block order, keys)`` of the one read_parquet layer in the
    graph of dask array ``A``, or None."""

    found = []
    for name, layer in A.dask.layers.items():
        if not (name.startswith("parquet-") and isinstance(layer, Blockwise) and len(layer.indices) == 2
                and layer.task.func is _call and len(layer.io_deps) == 1):
            continue
        reader = layer.indices[0][0]
        if type(reader) is _PartReader:
            mapping = next(iter(layer.io_deps.values())).mapping
            keys = sorted(mapping, key=lambda k: k[0])
            found.append((name, reader, [mapping[k] for k in keys], [(name, *k) for k in keys]))
    return found[0] if len(found) == 1 else None


def _same_parts(a, b):
    return len(a) == len(b) and all(
        (u, g, n, i.path, i.size, i.mtime) == (u2, g2, n2, i2.path, i2.size, i2.mtime)
        for (u, g, n, i), (u2, g2, n2, i2) in zip(a, b))


def _joint_layers(X, y):
    """``(X's read layer, y's read layer, joint reader)`` when X's rows and y's labels come from
    :func:`read_parquet` over the same partitions (see :func:`_reader_layer`), else None."""
    if not (isinstance(X, da.Array) and isinstance(y, da.Array)):
        return None
    lx, ly = _reader_layer(X), _reader_layer(y)
    if lx is None or ly is None or lx[1].column or not ly[1].column or not _same_parts(lx[2], ly[2]) \
            or _options_json(lx[1].storage_options) != _options_json(ly[1].storage_options):
        return None
    return lx, ly, _JointReader(lx[1], ly[1])


def row_label_pairs(X: Any, y: Any) -> Any:
    """A dask array of ``X``'s blocks (``(n_blocks, 1)`` of them) whose block i is the tuple
    ``(rows, labels)`` of partition i, read by one task; None unless ``X`` and ``y`` are
    themselves :func:`read_parquet`'s rows and label over the same partitions.

    For a consumer of both (``featurize``'s write tasks): one task reading both, fused into the
    task that consumes the pair, where :func:`read_together` leaves a task for the joint read and
    one for each of X and y taking its item (with the label's reshaping and the write, five tasks
    a block instead of one).
    """

    found = _joint_layers(X, y)
    if found is None or found[0][0] != X.name or found[1][0] != y.name:
        return None
    lx, ly, reader = found
    name = f"parquet-pairs-{_hash(lx[0], ly[0])}"
    layer = _read_layer(reader, name, lx[2], 2)
    return da.Array(HighLevelGraph.from_collections(name, layer, dependencies=[]), name, (X.chunks[0], (1,)),
                    meta=np.empty((0, 0), object))


def read_together(X: Any, y: Any) -> tuple[Any, Any]:
    """``(X, y)`` with each Parquet partition read once for both, when X's rows and y's labels
    come from :func:`read_parquet` over the same partitions (anything else is returned as it is).

    Separately, a partition's rows and its label are two tasks that each open the file and read
    its row groups; computed together (as :func:`~dask_kernels.featurize` does) one task reading
    the feature columns and the label column is enough. Only the read layers are replaced: keys,
    chunks and everything computed from them stay the same. Computing ``y`` alone from the result
    would read the feature columns too, so only call this where both are computed.
    """
    import operator

    found = _joint_layers(X, y)
    if found is None:
        return X, y
    lx, ly, reader = found
    joint = f"parquet-joint-{_hash(lx[0], ly[0])}"
    shared = _read_layer(reader, joint, lx[2], 1)

    def rebuilt(A, layer, which):  # A's read layer becomes item ``which`` of the joint read
        name, ndim = layer[0], A.ndim
        layers, deps = dict(A.dask.layers), {k: set(v) for k, v in A.dask.dependencies.items()}
        layers[name] = blockwise(operator.getitem, name, "ij"[:ndim], joint, "i", which, None,
                                 numblocks={joint: (len(lx[2]),)}, new_axes={"j": 1} if ndim == 2 else None)
        layers[joint], deps[name], deps[joint] = shared, {joint}, set()
        return da.Array(HighLevelGraph(layers, deps), A.name, A.chunks, meta=A._meta)

    return rebuilt(X, lx, 0), rebuilt(y, ly, 1)


def row_source(X: Any, row: int) -> tuple[str, int] | None:
    """``(file, row in that file)`` of global row ``row`` of ``X``, when ``X`` is an array of
    :func:`read_parquet` itself (not a slice or anything computed from it); otherwise None.

    A file's partitions are consecutive in ``X`` and start at its first row group, so the rows of
    its earlier partitions are the rows before this one in the file.
    """
    found = _reader_layer(X) if isinstance(X, da.Array) else None
    if found is None or found[0] != X.name or not 0 <= row < X.shape[0]:
        return None
    start, before = 0, {}
    for url, _, n, _ in found[2]:
        if row < start + n:
            return url, before.get(url, 0) + row - start
        start += n
        before[url] = before.get(url, 0) + n
    return None


def name_input_error(error: Exception, X: Any) -> Exception:
    """``error`` naming the Parquet file and its row, when it is an input value error of a global
    row of ``X`` that :func:`row_source` can place (else ``error`` itself). A dataset of several
    files: "row 4 of d/part-1.parquet (row 1004 of the input)"; one file: "row 4 of t.parquet"."""
    from ..blocks import InputValueError

    if not isinstance(error, InputValueError) or error.row is None:
        return error
    source = row_source(X, error.row)
    if source is None:
        return error
    url, r = source
    return error.at(f"row {r} of {url}" + (f" (row {error.row} of the input)" if r != error.row else ""))
