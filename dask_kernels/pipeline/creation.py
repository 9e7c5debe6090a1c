"""Safe creation of a store: only where nothing but an empty folder or a store of ours is, built
whole under a temporary name and renamed into place (local paths), attributes first (URLs)."""

from __future__ import annotations

import os
import shutil
import time
import uuid
import warnings

import numpy as np

from .layout import CLASSES_FORMAT, OWN_FILE, OWN_FOLDER, SHARDED_FORMAT, STORE_FORMAT, array_record
from .location import StoreError, filesystem, inspect_path, local_path, open_group, refuse_foreign
from .records import RECORD_FIELDS


def _codecs(compressors, checksums, dtype=None):
    """The codecs of an array of ``dtype``: ``compressors`` ("auto": :func:`auto_compressors`)
    followed by a CRC32C when ``checksums``."""
    from zarr.codecs import Crc32cCodec

    if isinstance(compressors, str) and compressors == "auto":
        base = auto_compressors(dtype)
    elif compressors is None:
        base = []
    elif isinstance(compressors, (list, tuple)):
        base = list(compressors)
    else:
        base = [compressors]
    return tuple(base + ([Crc32cCodec()] if checksums else [])) or None


def auto_compressors(dtype=None) -> list:
    """The compressors of ``compressors="auto"`` for an array of ``dtype``: none for floats,
    Zstandard (Zarr's own default for v3) for anything else.

    Feature floats (RFF, NRFF, Fastfood, Nystroem) are nearly incompressible: Zstandard saved
    10% of a float32 NRFF store's bytes but took 33-45 ms to decompress each 10 MB block (3 ms
    raw, measured on 2 loaded cores), the largest cost of training from the store. Codes,
    labels and ids still compress. Only new stores: the codecs are recorded in each array's
    metadata, so stores written with Zstandard read as before, and a resumed store keeps its own.

    Examples
    --------
    >>> from dask_kernels.pipeline.creation import auto_compressors
    >>> auto_compressors("float32"), [type(c).__name__ for c in auto_compressors("uint8")]
    ([], ['ZstdCodec'])
    """
    from zarr.codecs import ZstdCodec

    if dtype is not None and np.dtype(dtype).kind == "f":
        return []
    return [ZstdCodec(level=0, checksum=False)]


def _build(path, storage_options, *, n_rows, block_rows, width, dtype, columns, compressors, info, checksums,
           shard_blocks=1):
    n_blocks = -(-n_rows // block_rows)
    k = int(shard_blocks)
    fmt = CLASSES_FORMAT if "classes" in info["fingerprint"] else STORE_FORMAT if k == 1 else SHARDED_FORMAT
    meta = dict(info, format=fmt, n_rows=int(n_rows),
                block_rows=int(block_rows), n_blocks=int(n_blocks), width=int(width), dtype=np.dtype(dtype).str)
    if k > 1:
        meta["shard_blocks"] = k
    attrs = {"dask_kernels": meta, "complete": False}
    # attributes first: a creation killed half-way (fsspec URLs) is still recognisably ours
    g = open_group(path, "w", storage_options, attributes=attrs)

    def shards(rows, *rest):  # one object holds k blocks (each still its own checksummed chunk)
        return {"shards": (rows * k,) + rest} if k > 1 else {}

    g.create_array("features", shape=(n_rows, width), chunks=(block_rows, width), dtype=dtype,
                   compressors=_codecs(compressors, checksums, dtype), fill_value=0, dimension_names=("row", "feature"),
                   **shards(block_rows, width))
    for name, col_dtype in columns.items():
        g.create_array(name, shape=(n_rows,), chunks=(block_rows,), dtype=col_dtype,
                       compressors=_codecs(compressors, checksums, col_dtype),
                       fill_value=0, dimension_names=("row",), **shards(block_rows))
    g.create_array("done", shape=(n_blocks, len(RECORD_FIELDS)), chunks=(1, len(RECORD_FIELDS)), dtype="uint64",
                   fill_value=0, compressors=_codecs(None, checksums), dimension_names=("block", "field"),
                   **shards(1, len(RECORD_FIELDS)))
    # each array's dtype and codecs as written: opening refuses a zarr.json edited to read it otherwise
    g.attrs["dask_kernels"] = dict(meta, arrays={name: array_record(g[name]) for name in sorted(g.array_keys())})
    return g


def _walk(local, base=""):
    """``(relative path, DirEntry, ours)`` of everything in a local store folder, a folder (its
    path ending in "/") after its contents. Links are never followed, and a folder that is not
    ours is not looked into."""
    with os.scandir(local) as it:
        entries = list(it)
    for e in entries:
        rel, link = base + e.name, e.is_symlink()
        is_dir = not link and e.is_dir(follow_symlinks=False)
        ours = not link and (OWN_FOLDER if is_dir else OWN_FILE).match(rel) is not None
        if is_dir and ours:
            yield from _walk(e.path, rel + "/")
        yield rel + "/" * is_dir, e, ours


def stray_entries(path, storage_options=None, limit=5):
    """Up to ``limit`` entries (paths relative to the store) that a store of ours does not consist
    of: anything but the files and folders of :data:`~dask_kernels.pipeline.layout.OWN_FILE` and
    ``OWN_FOLDER``, and any symbolic link."""
    local = local_path(path)
    if local is not None:
        strays = (rel for rel, _, ours in _walk(local) if not ours)
    else:  # object stores: only files (objects); folders are their keys' prefixes
        fs, p = filesystem(path, storage_options)
        p = p.rstrip("/")
        strays = (rel for rel in (str(f)[len(p):].lstrip("/") for f in fs.find(p, withdirs=False))
                  if not OWN_FILE.match(rel))
    return [rel for _, rel in zip(range(limit), strays)]


def refuse_strays(path, storage_options=None):
    """Refuse to replace a store that holds anything but its own entries (a user's file or
    folder kept inside it, say a model saved there): ``overwrite`` replaces the store whole."""
    strays = stray_entries(path, storage_options)
    if strays:
        raise StoreError(f"{path} is a feature store that also holds entries dask_kernels did not write "
                         f"({', '.join(repr(s) for s in strays)}); overwrite=True replaces only a store that "
                         "holds nothing else. Move them out of the store first, or write to another path.")


def remove_own(local, quiet=False):
    """Delete a local store folder's own files and folders (never following links); whatever
    else is in it stays, and so does the folder (with a warning unless ``quiet``)."""
    for rel, e, ours in _walk(local):
        if ours and rel.endswith("/"):
            try:
                os.rmdir(e.path)
            except OSError:
                pass  # holds something else: kept
        elif ours:
            os.unlink(e.path)
    try:
        os.rmdir(local)
    except OSError:
        if os.path.isdir(local) and not quiet:
            warnings.warn(f"left {local}: it holds entries dask_kernels did not write "
                          f"({', '.join(repr(e) for e in stray_entries(local))})", stacklevel=3)


def create_store(path, *, storage_options, replace, **build):
    """Create a store at ``path``, which must be absent, empty, or (``replace``) our store
    holding nothing but its own entries.

    Local paths: built under a temporary name in the same folder, then renamed into place (an
    existing store of ours is first renamed aside, and its own entries deleted only once the new
    one is in place).
    """
    kind, detail = inspect_path(path, storage_options)
    if kind == "foreign":
        refuse_foreign(path, detail)
    if kind == "ours" and not replace:
        raise StoreError(f"{path}: a feature store appeared there while this job was starting; re-run to "
                         "resume it")
    if kind == "ours":
        refuse_strays(path, storage_options)
    local = local_path(path)
    if local is None:
        if kind == "ours":
            fs, p = filesystem(path, storage_options)
            fs.rm(p, recursive=True)
        _build(path, storage_options, **build)
        return
    local = os.path.abspath(local)
    parent, base = os.path.split(local)
    os.makedirs(parent, exist_ok=True)
    _remove_stale_temporaries(parent, base)
    tag = uuid.uuid4().hex[:12]
    tmp, old = os.path.join(parent, f".{base}.dk-new-{tag}"), os.path.join(parent, f".{base}.dk-old-{tag}")
    try:
        _build(tmp, None, **build)
        if kind == "ours":
            os.rename(local, old)
        try:
            os.rename(tmp, local)  # replaces an empty folder; fails on a non-empty one
        except OSError:
            if os.path.exists(old):
                os.rename(old, local)
            raise StoreError(f"{path}: something was written there while this job created its store; "
                             "nothing was replaced") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # ours: made under a name of ours above
    if os.path.lexists(old):
        remove_own(old)


#: a temporary creation folder this old (s) was left by a killed job, not one still creating
STALE_SECONDS = 600


def _remove_stale_temporaries(parent, base):
    """Delete what killed creations of this store left beside it: folders named like our
    temporaries, holding a store of ours (or nothing yet), untouched for STALE_SECONDS."""
    prefixes = (f".{base}.dk-new-", f".{base}.dk-old-")
    for name in os.listdir(parent):
        p = os.path.join(parent, name)
        if not name.startswith(prefixes) or not os.path.isdir(p) or os.path.islink(p):
            continue
        try:
            if time.time() - os.stat(p).st_mtime < STALE_SECONDS:
                continue
            if os.listdir(p) and inspect_path(p)[0] != "ours":
                continue
        except OSError:
            continue
        remove_own(p, quiet=True)
