"""What is at a store path: the Zarr group, its fsspec file system, and whether it is ours.

A path is absent, an empty folder, one of our stores, or something else (refused): see
:mod:`dask_kernels.pipeline.store` for the layout and the safety rules.
"""

from __future__ import annotations

import functools
import json
import math
import os
import posixpath
import re

from .._files import file_problem

#: the folder name of an appended segment inside its store (segments/seg-<16 hex digits>)
SEGMENT_NAME = re.compile(r"^seg-[0-9a-f]{16}$")


class StoreError(ValueError):
    """A store that cannot be used as it is (not ours, malformed attributes, edited spec)."""


class StoreIntegrityError(StoreError):
    """A stored block does not match its done record (damaged, missing or swapped chunk)."""


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
def is_store_meta(meta):
    """Whether a parsed zarr.json is the root of one of our stores (a group with our attributes)."""
    if not isinstance(meta, dict):
        return False
    attrs = meta.get("attributes")
    return meta.get("node_type") == "group" and isinstance(attrs, dict) and isinstance(attrs.get("dask_kernels"), dict)


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
        meta, problem = read_marker(fs, p, "zarr.json")
        if problem is not None:
            return "foreign", f"its zarr.json {problem}"
        if is_store_meta(meta):
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


#: A chunk file (or shard) larger than this many times its array's uncompressed bytes, plus
#: ``CHUNK_SLACK``, is refused before it is read: zstd, the CRC32C and a shard's index add far less.
CHUNK_GROWTH, CHUNK_SLACK = 2, 2**16


def _local_root(store):
    """The local folder of a zarr store, or None for a remote one (read without this check)."""
    root = getattr(store, "root", None)  # zarr's LocalStore
    if root is not None:
        return str(root)
    fs = getattr(store, "fs", None)  # FsspecStore: file:// URLs are local files too
    if fs is not None and "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)):
        return store.path
    return None


def check_chunk_file(arr, block, where):
    """Refuse the local file holding ``block`` of ``arr`` (its chunk, or the shard holding it)
    before zarr reads it whole: a FIFO would hang the read, a link to a device (/dev/zero) or
    an oversized file would exhaust memory. One ``stat``; a missing file passes (zarr reads
    fill values, which the block's digest then refuses). Remote stores are not checked: their
    objects are neither pipes nor devices, and a size costs a round trip per block."""
    root = _local_root(arr.store)
    if root is None:
        return
    rows = arr.shards[0] if arr.shards is not None else arr.chunks[0]
    key = arr.metadata.encode_chunk_key((block * arr.chunks[0] // rows,) + (0,) * (arr.ndim - 1))
    file = os.path.join(root, *arr.path.split("/"), *key.split("/"))
    nbytes = rows * math.prod(arr.chunks[1:]) * arr.dtype.itemsize
    try:
        problem = file_problem(file, CHUNK_GROWTH * nbytes + CHUNK_SLACK)
    except (FileNotFoundError, NotADirectoryError):
        return
    if problem is not None:
        raise StoreIntegrityError(f"{where}: its chunk file {file} {problem}; not read. Remove it and re-run "
                                  "featurize with the same arguments to rewrite the block")


# -- symbolic links and nesting ------------------------------------------------------------------
def link_problem(path):
    """What a local store path that is a symbolic link is ("a symbolic link to X" or "a dangling
    symbolic link to X, which does not exist"), or None when it is not a link (or a URL)."""
    local = local_path(path)
    if local is None or not os.path.islink(local):
        return None
    target = os.readlink(local)
    if not os.path.exists(local):
        return f"{path} is a dangling symbolic link (to {target}, which does not exist)"
    return f"{path} is a symbolic link (to {os.path.realpath(local)})"


def refuse_link(path):
    """Refuse to write a store through a symbolic link: ``overwrite`` would replace the link, not
    the store it points to, and a dangling link cannot be created through."""
    problem = link_problem(path)
    if problem is None:
        return
    local = local_path(path)
    if os.path.exists(local):
        fix = f"pass the path it points to ({os.path.realpath(local)}) instead"
    else:
        fix = "remove the link, or pass the path where the store should be"
    raise StoreError(f"{problem}; featurize writes a store only at a real path, never through a link: {fix}")


#: ``format`` of a saved model's model.json (dask_kernels.learn.persist.MODEL_FORMAT) starts so.
MODEL_FORMAT_PREFIX = "dask-kernels-model-"
#: zarr.json or model.json larger than this is not ours (read to tell what a folder is).
MAX_MARKER_BYTES = 256 * 2**20


def read_marker(fs, p, name):
    """``(JSON value, None)`` of file ``name`` of folder ``p`` (zarr.json, model.json: what tells
    what a folder is), or ``(None, why not)``: not a regular file (a FIFO would block the read),
    larger than MAX_MARKER_BYTES, unreadable or not JSON (nested too deep for the parser too)."""
    f = p.rstrip("/") + "/" + name
    try:
        if not fs.isfile(f):
            return None, "is not a regular file"
        if fs.size(f) > MAX_MARKER_BYTES:
            return None, f"is larger than {MAX_MARKER_BYTES:,} bytes"
        return json.loads(fs.cat_file(f)), None
    except OSError as e:
        return None, f"cannot be read ({e})"
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError; RecursionError: [[[[...
        return None, "is not valid JSON"


def _marker(fs, p, name):
    """The JSON object in file ``name`` of folder ``p``, or None."""
    meta, _ = read_marker(fs, p, name)
    return meta if isinstance(meta, dict) else None


def folder_kind(fs, p):
    """"store" (a dask_kernels feature store), "model" (a saved model) or None."""
    if is_store_meta(_marker(fs, p, "zarr.json")):
        return "store"
    meta = _marker(fs, p, "model.json")
    if meta is not None and str(meta.get("format", "")).startswith(MODEL_FORMAT_PREFIX):
        return "model"
    return None


def enclosing(path, storage_options=None):
    """``(kind, folder, rest)`` of the nearest folder above ``path`` that is a feature store
    ("store") or a saved model ("model"), ``rest`` the path below it ("/"-separated), or None.
    Local paths are resolved first (links included), so a folder reached through a link is
    found too."""
    local = local_path(path)
    if local is not None:
        fs, p = filesystem(os.path.realpath(os.path.abspath(local)))
    else:
        fs, p = filesystem(path, storage_options)
    p = full = p.rstrip("/")
    split = os.path.dirname if local is not None else posixpath.dirname
    while True:
        parent = split(p)
        if not parent or parent == p:
            return None
        kind = folder_kind(fs, parent)
        if kind is not None:
            rest = full[len(parent):].strip("/").replace(os.sep, "/")
            url = str(path).rstrip("/")
            if local is None and url.endswith("/" + rest):  # named as the caller named it (with s3://)
                parent = url[:-len(rest) - 1]
            return kind, parent, rest
        p = parent


def refuse_nesting(path, storage_options=None, what="store"):
    """Refuse a feature store (``what="store"``) inside a saved model or inside another store
    (its own segments excepted), and a saved model (``what="model"``) inside a store: replacing
    the outer one would delete the inner one, or refuse to."""
    outer = enclosing(path, storage_options)
    if outer is None:
        return
    kind, folder, rest = outer
    if what == "store" and kind == "store" and rest.startswith("segments/") and \
            SEGMENT_NAME.match(rest[len("segments/"):]):
        return  # an appended segment: a part of its store
    outer_name = "feature store" if kind == "store" else "saved model"
    raise StoreError(f"{path} is inside the {outer_name} {folder}; a {'feature store' if what == 'store' else 'model'} "
                     f"is never written into a {outer_name}'s folder (it is not one of its files, so replacing "
                     f"the {outer_name} would refuse or delete it): choose a path outside {folder}")
