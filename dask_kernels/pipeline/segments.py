"""Segments: rows appended to a store (``featurize(..., mode="append")``), each a store of its own
inside it, listed in the store's attributes once complete."""

from __future__ import annotations

import re

from .leases import check_lease
from .location import StoreError, open_group

#: most segments one store lists (a nightly append for 27 years)
MAX_SEGMENTS = 10_000
SEGMENT_NAME = re.compile(r"^seg-[0-9a-f]{16}$")


def segment_path(path, name, storage_options=None, create=False):
    """Path of segment ``name`` of the store at ``path`` (a store of its own, inside it).
    ``create``: create the ``segments`` Zarr group that holds them if absent."""
    folder = str(path).rstrip("/") + "/segments"
    if create:
        g = open_group(path, "r", storage_options)
        if "segments" not in g.group_keys():
            open_group(folder, "a", storage_options)
    return folder + "/" + name


def add_segment(path, storage_options, lease, name):
    """List a finished segment in the store's attributes (after its rows: the store never lists
    a segment that is not complete). Appends are meant to run one at a time per store."""
    check_lease(path, storage_options, lease, "adding a segment")
    g = open_group(path, "r+", storage_options)
    info = dict(g.attrs["dask_kernels"])
    segments = list(info.get("segments", []))
    if name not in segments:
        if len(segments) >= MAX_SEGMENTS:
            raise StoreError(f"{path}: the store already has {MAX_SEGMENTS} segments; start a new store")
        info["segments"] = segments + [name]
        g.attrs["dask_kernels"] = info
