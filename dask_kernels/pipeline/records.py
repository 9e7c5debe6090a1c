"""Done records (one per block: lease, job, row count and a digest of each array's block and of
its input rows) and the store's completion marker."""

from __future__ import annotations

import warnings

import numpy as np

from ._digest import digest
from .fingerprint import job_key
from .leases import check_lease, lease_key
from .location import check_chunk_file, open_group

#: Fields of a block's done record (one uint64 each).
RECORD_FIELDS = ("state", "block", "rows", "lease", "job", "features", "labels", "qid", "row_ids", "input")
FIELD = {name: i for i, name in enumerate(RECORD_FIELDS)}
#: ``state`` of a record: digests recorded / written with integrity checks off (benchmarks only)
DONE, DONE_UNCHECKED = 1, 2


def make_record(i, rows, lease, key, arrays, input_digest, checked=True):
    """Done record of block i: ``arrays`` maps array name -> the block as written."""
    rec = np.zeros(len(RECORD_FIELDS), dtype=np.uint64)
    rec[FIELD["state"]] = DONE if checked else DONE_UNCHECKED
    rec[FIELD["block"]], rec[FIELD["rows"]] = i, rows
    rec[FIELD["lease"]], rec[FIELD["job"]] = lease_key(lease), key
    if checked:
        for name, block in arrays.items():
            rec[FIELD[name]] = digest(block)
        rec[FIELD["input"]] = input_digest or 0
    return rec[None, :]


def read_records(group):
    """All done records; a record whose chunk fails its checksum reads as zeros (not done)."""
    done = group["done"]
    per_object = done.shards[0] if done.shards is not None else 1
    for i in range(0, done.shape[0], per_object):  # one stat per file, before any is read
        check_chunk_file(done, i, f"array 'done', block {i}")
    try:
        return np.asarray(done[:])
    except ValueError:
        out = np.zeros(done.shape, dtype=done.dtype)
        for i in range(done.shape[0]):
            try:
                out[i] = done[i]
            except ValueError:
                pass
        return out


def record_ok(records, info, blocks, check=True):
    """Which of ``records`` (rows of the done array, for ``blocks``) say their block is done."""
    records = np.asarray(records).reshape(len(blocks), -1)
    if int(info.get("format", 1)) == 1:
        return records[:, 0] == 1
    if records.shape[1] != len(RECORD_FIELDS):
        return np.zeros(len(blocks), dtype=bool)
    n_rows, block_rows = int(info["n_rows"]), int(info["block_rows"])
    blocks = np.asarray(blocks, dtype=np.int64)
    rows = np.minimum((blocks + 1) * block_rows, n_rows) - blocks * block_rows
    states = (DONE, DONE_UNCHECKED) if not check else (DONE,)
    return (np.isin(records[:, FIELD["state"]], states) & (records[:, FIELD["block"]] == blocks.astype(np.uint64))
            & (records[:, FIELD["rows"]] == rows.astype(np.uint64))
            & (records[:, FIELD["lease"]] == np.uint64(lease_key(info["lease"])))
            & (records[:, FIELD["job"]] == np.uint64(job_key(info["fingerprint"]))))


def set_incomplete(path, storage_options, lease):
    """Clear the completion marker before blocks of a finished store are rewritten."""
    check_lease(path, storage_options, lease, "reopening the store")
    g = open_group(path, "r+", storage_options)
    if g.attrs.get("complete") is not False:
        g.attrs["complete"] = False


def mark_complete(path, storage_options, lease, check, info=None):
    """Check the lease and every done record, write the completion marker (last), consolidate.

    ``info``: the job's attributes, when they replace the stored fingerprint (input changed).
    """
    import zarr

    if check:
        check_lease(path, storage_options, lease, "completing the store")
    g = open_group(path, "r+", storage_options)
    records = read_records(g)
    stored = g.attrs["dask_kernels"]
    bad = np.flatnonzero(~record_ok(records, stored, np.arange(records.shape[0]), check))
    if bad.size:
        raise RuntimeError(f"{path}: blocks {bad[:10].tolist()} are not written")
    if info is not None:
        g.attrs.update({"dask_kernels": dict(stored, **info), "complete": True})
    else:
        g.attrs["complete"] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "consolidated metadata is not part of the v3 spec yet"
        zarr.consolidate_metadata(g.store, path=g.path or None)
