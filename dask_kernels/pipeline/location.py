"""What is at a store path: the Zarr group, its fsspec file system, and whether it is ours.

A path is absent, an empty folder, one of our stores, or something else (refused): see
:mod:`dask_kernels.pipeline.store` for the layout and the safety rules.
"""

from __future__ import annotations

import functools
import json
import os


class StoreError(ValueError):
    """A store that cannot be used as it is (not ours, malformed attributes, edited spec)."""


def _storage_kwargs(storage_options):
    return {"storage_options": storage_options} if storage_options else {}


def open_group(path, mode, storage_options=None, consolidated=False, **kwargs):
    import zarr

    if str(path).startswith("file://"):  # fsspec's local files do not create parent folders by default
        storage_options = {"auto_mkdir": True, **(storage_options or {})}

    return zarr.open_group(path, mode=mode, use_consolidated=consolidated, zarr_format=3,
                           **_storage_kwargs(storage_options), **kwargs)


@functools.lru_cache(maxsize=32)
def _fs(path, options_json):
    import fsspec

    return fsspec.core.url_to_fs(path, **json.loads(options_json))


def filesystem(path, storage_options=None):
    """``(fsspec filesystem, path within it)`` of a store path or URL (cached per process)."""
    return _fs(str(path), json.dumps(storage_options or {}, sort_keys=True))


def local_path(path):
    """The local file system path of a store, or None for other fsspec URLs."""
    s = str(path)
    if s.startswith("file://"):
        return s[len("file://"):]
    return None if "://" in s else s


# -- what is at a path ---------------------------------------------------------------------------
def inspect_path(path, storage_options=None):
    """``(kind, detail)``: kind is "absent", "empty", "ours" (detail: zarr.json) or "foreign"
    (detail: what it is)."""
    fs, p = filesystem(path, storage_options)
    fs.invalidate_cache(p)  # object store listings are cached; other jobs may have written since
    if not fs.exists(p):
        return "absent", None
    if not fs.isdir(p):
        return "foreign", "it is a file"
    names = sorted(os.path.basename(str(n).rstrip("/")) for n in fs.ls(p, detail=False))
    if not names:
        return "empty", None
    if "zarr.json" in names:
        try:
            meta = json.loads(fs.cat_file(p.rstrip("/") + "/zarr.json"))
        except (ValueError, UnicodeDecodeError):
            return "foreign", "its zarr.json is not valid JSON"
        attrs = meta.get("attributes") if isinstance(meta, dict) else None
        if meta.get("node_type") == "group" and isinstance(attrs, dict) and isinstance(attrs.get("dask_kernels"), dict):
            return "ours", meta
        return "foreign", "it is a Zarr v3 group or array without dask_kernels attributes"
    if ".zgroup" in names or ".zarray" in names:
        return "foreign", "it is a Zarr v2 group or array"
    shown = ", ".join(repr(n) for n in names[:3]) + (", ..." if len(names) > 3 else "")
    return "foreign", f"it holds {len(names)} entries that dask_kernels did not write ({shown})"


def refuse_foreign(path, detail):
    raise StoreError(f"{path} exists and is not a dask_kernels feature store ({detail}); refusing to write "
                     "there, with or without overwrite=True (overwrite replaces only a feature store). Choose "
                     "another path, or move its contents away yourself.")
