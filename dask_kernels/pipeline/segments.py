"""Segments: rows appended to a store (``featurize(..., mode="append")``), each a store of its own
inside it, listed in the store's attributes once complete, with its identity (format 4, see
:data:`~dask_kernels.pipeline.layout.SEGMENT_ENTRY`): a store opens a listed segment only if it
is still the one that was appended."""

from __future__ import annotations

from ._digest import digest
from .layout import MAX_SEGMENTS, SEGMENTS_FORMAT, open_checked, segments_hash
from .leases import check_lease
from .location import StoreError, open_group
from .records import read_records


def segment_path(path, name, storage_options=None, create=False):
    """Path of segment ``name`` of the store at ``path`` (a store of its own, inside it).
    ``create``: create the ``segments`` Zarr group that holds them if absent."""
    folder = str(path).rstrip("/") + "/segments"
    if create:
        g = open_group(path, "r", storage_options)
        if "segments" not in g.group_keys():
            open_group(folder, "a", storage_options)
    return folder + "/" + name


def segment_entry(path, name, storage_options=None):
    """What the store at ``path`` records of its (finished) segment ``name``: its identity."""
    g, info = open_checked(segment_path(path, name), storage_options, consolidated=False)
    return {"name": name, "fingerprint_sha256": info["fingerprint_sha256"], "lease": info["lease"],
            "n_rows": info["n_rows"], "records": records_digest(g)}


def records_digest(group):
    """16 hex digits: the digest of a store's done records (its leases, jobs and block digests)."""
    return f"{digest(read_records(group)):016x}"


def add_segment(path, storage_options, lease, name):
    """List a finished segment in the store's attributes (after its rows: the store never lists
    a segment that is not complete), with its identity; a store that listed segments by name
    only (earlier versions) gets its list upgraded so (format 4). Appends are meant to run one
    at a time per store; a re-run of an append records its segment as it is now."""
    check_lease(path, storage_options, lease, "adding a segment")
    g = open_group(path, "r+", storage_options)
    info = dict(g.attrs["dask_kernels"])
    entries = [e if isinstance(e, dict) else segment_entry(path, e, storage_options)
               for e in info.get("segments", [])]
    entry = segment_entry(path, name, storage_options)
    names = [e["name"] for e in entries]
    if name in names:
        entries[names.index(name)] = entry
    elif len(entries) >= MAX_SEGMENTS:
        raise StoreError(f"{path}: the store already has {MAX_SEGMENTS} segments; start a new store")
    else:
        entries.append(entry)
    new = dict(info, format=max(SEGMENTS_FORMAT, info["format"]), segments=entries, segments_sha256=segments_hash(entries))
    if new != info:
        g.attrs["dask_kernels"] = new
