"""What the tasks of :func:`~dask_kernels.pipeline.featurize` run on a worker.

Every task receives the map's spec as JSON text and, for a map that has one, its kernel plan
(:mod:`dask_kernels.maps._plan`: the fitted numbers and which kernel); it runs the plan, or
rebuilds the map from the spec, once per process (keyed by the spec's text), so the task graph
never carries parameter matrices and its size does not depend on the number of features k or
the input dimension d. The tasks: a block of the lazy array (:func:`transform_chunk`,
:func:`transform_part`), the writing of store blocks with their done records
(:func:`write_blocks`, :func:`write_dense_chunk`), and the check of a resumed store's block
(:func:`verify_block`). This module imports neither scikit-learn nor the map classes: a worker
running its tasks with a plan never does.
"""

from __future__ import annotations

import collections
import functools
import json
import threading
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..blocks import InputValueError
from ..labels import check_finite
from ._digest import csr_digest, digest
from .leases import check_lease
from .location import open_group
from .records import make_record
from .store import BlockReader, StoreIntegrityError


@functools.lru_cache(maxsize=16)
def rebuild_map(spec_json: str) -> Any:
    """The map of a spec, rebuilt once per process (keyed by the JSON text)."""
    from ..maps import from_spec

    return from_spec(spec_json)


_REBUILT = collections.OrderedDict()
_LOCK = threading.Lock()


def rebuild_with_arrays(spec_json: str, arrays: Any, maxsize: int = 8) -> Any:
    """The map of ``spec_json`` with its sidecar arrays, rebuilt and verified once per process.

    Keyed by the spec text, which records the arrays' hash, so a different fit is a different key.
    """
    with _LOCK:
        fmap = _REBUILT.get(spec_json)
        if fmap is not None:
            _REBUILT.move_to_end(spec_json)
            return fmap
    from ..maps import from_spec

    fmap = from_spec(spec_json, arrays=arrays)
    with _LOCK:
        _REBUILT[spec_json] = fmap
        while len(_REBUILT) > maxsize:
            _REBUILT.popitem(last=False)
    return fmap


@functools.lru_cache(maxsize=16)
def _plan_slot(spec_json):
    return []  # [the first kernel plan of this spec the process received]: its tables are built once


def _map(spec_json, arrays=None, plan=None):
    """What computes a task's blocks: the map's kernel plan (the first this process received for
    the spec), else rebuild_map, or for a map with fitted arrays (one shared key of the graph)
    its sidecar twin."""
    if plan is not None:
        slot = _plan_slot(spec_json)
        if not slot:
            slot.append(plan)
        return slot[0]
    return rebuild_map(spec_json) if arrays is None else rebuild_with_arrays(spec_json, arrays)


def transform_rows(fmap: Any, X: Any, row_offset: int) -> np.ndarray:
    """Validate one block of rows and return ``fmap.transform_block`` of it (``fmap``: a map or
    its kernel plan).

    Errors name global rows: ``row_offset`` is the global number of ``X[0]``.
    """
    X = fmap.validate_block(X, row_offset=row_offset)
    out = fmap.transform_block(X, row_offset=row_offset)
    if sp.issparse(out):
        out = out.toarray()
    return np.asarray(out, dtype=fmap.output_dtype_)


# -- lazy ----------------------------------------------------------------------------------------
def transform_chunk(x: Any, spec_json: str, arrays: Any = None, plan: Any = None,
                    block_info: list[dict] | None = None) -> np.ndarray:
    """``map_blocks`` task of the lazy array over dense rows: one block's features."""
    row_offset = block_info[0]["array-location"][0][0] if block_info else 0
    if row_offset == row_offset:
        return transform_rows(_map(spec_json, arrays, plan), x, row_offset)
    # rows of unknown chunk sizes (a dask DataFrame's partitions): no global row number to give
    try:
        return transform_rows(_map(spec_json, arrays, plan), x, 0)
    except InputValueError as e:
        raise e.at(f"row {e.row} of partition {block_info[0]['chunk-location'][0]}") from None


def transform_part(part: tuple, spec_json: str, row_offset: int, arrays: Any = None, plan: Any = None) -> np.ndarray:
    """Task of the lazy array over sparse partitions: one partition's features."""
    return transform_rows(_map(spec_json, arrays, plan), part[0], row_offset)


# -- store writer --------------------------------------------------------------------------------
def _assemble(pieces):
    """Rows of one store block from (X, y, qid, row_ids, lo, hi) slices of input partitions."""
    xs = [p[0][p[4]:p[5]] for p in pieces]
    X = sp.vstack(xs, format="csr") if sp.issparse(xs[0]) else np.concatenate(xs) if len(xs) > 1 else xs[0]
    cols = []
    for c in (1, 2, 3):
        vals = [p[c][p[4]:p[5]] if p[c] is not None else None for p in pieces]
        cols.append(None if vals[0] is None else np.concatenate(vals))
    return X, cols[0], cols[1], cols[2]


@functools.lru_cache(maxsize=8)
def _store_arrays(path, storage_options_json, run):
    """The store's arrays, opened once per process and run (a later run reopens them)."""
    g = open_group(path, "r+", json.loads(storage_options_json))
    # write_empty_chunks: skip Zarr's "is this chunk all fill_value?" scan before each write,
    # which cost more than the write itself (~4 ms of a 1.3 MB block); feature blocks are
    # never empty, and a stored all-zero chunk reads back the same.
    return {name: g[name].with_config({"write_empty_chunks": True}) for name in g.array_keys()}


def _job_arrays(job):
    """:func:`_store_arrays` of the store a job writes."""
    return _store_arrays(job["path"], json.dumps(job["storage_options"], sort_keys=True), job["run"])


def _input_digest(X):
    """64-bit digest of a block of input rows as read (recorded in the block's done record)."""
    return csr_digest(X) if sp.issparse(X) else digest(np.asarray(X))


def _block_arrays(job, i, pieces, g):
    """``(arrays, input digest)`` of store block i (``arrays``: name -> block as written), or None
    when the block's recorded input digest equals its input's (see ``job["expect"]``)."""
    start = i * job["block_rows"]
    stop = min(start + job["block_rows"], job["n_rows"])
    X, y, qid, row_ids = _assemble(pieces)
    if X.shape[0] != stop - start:
        raise RuntimeError(f"block {i}: got {X.shape[0]} rows, expected {stop - start}")
    in_digest = _input_digest(X) if job["checks"] else 0
    recorded = job.get("expect_columns", {}).get(i, {})
    if job["expect"].get(i) == in_digest and all(
            recorded.get(name) == digest(np.ascontiguousarray(col, dtype=g[name].dtype))
            for name, col in (("labels", y), ("qid", qid), ("row_ids", row_ids)) if name in job["columns"]):
        return None  # input rows (and the labels they carry) unchanged since the block was written: keep it
    arrays = {"features": transform_rows(_map(job["spec_json"], job.get("arrays"), job.get("plan")), X, start)}
    for name, col in (("labels", y), ("qid", qid), ("row_ids", row_ids)):
        if name in job["columns"]:
            arrays[name] = np.ascontiguousarray(col, dtype=g[name].dtype)
    if "labels" in arrays:
        check_finite(arrays["labels"], start)
    return arrays, in_digest


def write_blocks(job: dict, blocks: list[tuple[int, list]]) -> int:
    """Featurize consecutive store blocks ``[(i, pieces), ...]`` (one block, or every block of one
    shard: a shard is one object, written whole by one task) and write them, then their done
    records. Returns the number of blocks written (0: every block's input rows were unchanged)."""
    g = _job_arrays(job)
    got = [_block_arrays(job, i, p, g) for i, p in blocks]
    if all(r is None for r in got):
        return 0
    if any(r is None for r in got):  # part of a shard changed: the shard is rewritten whole
        again = dict(job, expect={})
        got = [r if r is not None else _block_arrays(again, i, p, g) for r, (i, p) in zip(got, blocks)]
    return _write(job, [i for i, _ in blocks], got, g)


def _write(job, ids, got, g):
    """Write consecutive store blocks ``ids`` (``got``: their ``(arrays, input digest)``), then their
    done records; the lease is checked before each. Returns the number of blocks written."""
    checks, path, options = job["checks"], job["path"], job["storage_options"]
    if checks and job["input_check"] is not None:
        job["input_check"].check()  # still the file the job started on: no mix of old and new rows
    first, last = ids[0], ids[-1]
    start, stop = first * job["block_rows"], min((last + 1) * job["block_rows"], job["n_rows"])
    if checks:
        check_lease(path, options, job["lease"], f"about to write block {first}"
                    + (f"..{last}" if last > first else ""))
    for name in got[0][0]:
        parts = [arrays[name] for arrays, _ in got]
        g[name][start:stop] = parts[0] if len(parts) == 1 else np.concatenate(parts)
    records = np.concatenate([
        make_record(i, arrays["features"].shape[0], job["lease"], job["key"], arrays, in_digest, checked=checks)
        for i, (arrays, in_digest) in zip(ids, got)])
    if checks:
        check_lease(path, options, job["lease"], f"writing block {first}" + (f"..{last}" if last > first else ""))
    g["done"][first:last + 1] = records
    return len(ids)


def _pieces(x, cols, names, first, rows=None):
    """``[(i, pieces), ...]`` of the store blocks in ``x``, ``rows`` rows each (all of ``x``
    by default), of consecutive blocks from ``first``.
    ``x`` is the rows, or the pair ``(rows, labels)`` of a joint read (the labels then come
    first in ``names`` and are not in ``cols``; see :func:`~dask_kernels.io._layers.row_label_pairs`)."""
    if isinstance(x, tuple):
        x, labels = x
        cols = (labels[:, None], *cols)
    rows = max(1, x.shape[0]) if rows is None else rows
    col = dict(zip(names, (c[:, 0] for c in cols)))
    return [(first + j, [(x, col.get("labels"), None, col.get("row_ids"), a, min(a + rows, x.shape[0]))])
            for j, a in enumerate(range(0, x.shape[0], rows))]


def write_dense_chunk(x: np.ndarray, *cols: np.ndarray, job: dict, names: tuple[str, ...],
                      block_info: list[dict] | None = None) -> np.ndarray:
    """map_blocks form of :func:`write_blocks` for dense rows (``x``: the rows of one block, or
    of one shard): dask fuses it with the read of the rows into one task (no hand-over)."""
    s = block_info[0]["chunk-location"][0]
    n = write_blocks(job, _pieces(x, cols, names, s * job["shard_blocks"], job["block_rows"]))
    return np.full((1, 1), n, dtype=np.int64)


def featurize_dense_chunk(x: np.ndarray, *cols: np.ndarray, job: dict, names: tuple[str, ...],
                          block_info: list[dict] | None = None) -> tuple[int, dict, int]:
    """map_blocks task of a sharded store's block of dense rows (fused with their read): its
    ``(i, arrays, input digest)`` for :func:`write_shard`. A shard's blocks are featurized by
    tasks of one block each (as many as an unsharded store's, so the workers finish together)
    and only its writing is one task. A tuple, not an array: dask sizes it by its arrays (a
    worker's memory accounting sees the block), and nothing concatenates it."""
    i = block_info[0]["chunk-location"][0]
    g = _job_arrays(job)
    [(_, pieces)] = _pieces(x, cols, names, i)
    return (i, *_block_arrays(job, i, pieces, g))  # job["expect"] is empty: never None


def write_shard(job: dict, featurized: list[tuple[int, dict, int]]) -> np.ndarray:
    """Write one shard whole from its blocks' :func:`featurize_dense_chunk` results, then their
    done records (one writer per shard). Returns a (1, 1) count of blocks written."""
    g = _job_arrays(job)
    n = _write(job, [i for i, _, _ in featurized], [(arrays, d) for _, arrays, d in featurized], g)
    return np.full((1, 1), n, dtype=np.int64)


def verify_block(reader: BlockReader, i: int, names: list[str]) -> bool:
    """True if every array's block i matches its done record (False: rewrite it)."""
    try:
        for name in names:
            reader.read(name, i, True)
    except StoreIntegrityError:
        return False
    return True


