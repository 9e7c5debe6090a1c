"""The store's layout (formats, arrays, attributes) and its validation when a store is opened:
nothing read from disk is used before it is checked."""

from __future__ import annotations

import json
import os
import re

import numpy as np

from ..labels import check_classes
from .fingerprint import differences, fingerprint_hash
from .location import SEGMENT_NAME, StoreError, link_problem, local_path, open_group
from .records import RECORD_FIELDS

STORE_FORMAT = 2
#: format of sharded stores: format 2 plus ``shard_blocks`` (older versions must not resume
#: them: they would write blocks of one shard from several tasks at once)
SHARDED_FORMAT = 3
#: format of a store with appended segments: each listed with its identity (see
#: :data:`SEGMENT_ENTRY`), the list covered by ``segments_sha256``; sharded or not
#: (``shard_blocks``). An append turns a format 2 or 3 store into one (versions that list
#: segments by name only must not append to it, nor read it without checking the list).
SEGMENTS_FORMAT = 4
#: format of a store whose labels are class names: ``labels`` holds int32 codes into the
#: sorted names ``fingerprint["classes"]`` (covered by ``fingerprint_sha256``); otherwise a
#: format 2, 3 or 4 store (``shard_blocks``, ``segments`` as there). Versions that do not
#: know it must not read the codes as numeric labels.
CLASSES_FORMAT = 5
READABLE_FORMATS = (1, 2, 3, 4, 5)

#: most segments one store lists (a nightly append for 27 years)
MAX_SEGMENTS = 10_000
#: What a format 4 store records of each segment: its name, its job (fingerprint hash), its
#: lease (the store it is), its rows and a 64-bit digest of its done records (16 hex digits).
SEGMENT_ENTRY = ("name", "fingerprint_sha256", "lease", "n_rows", "records")
COLUMNS = ("labels", "qid", "row_ids")

#: The files and folders a store of ours consists of (paths relative to the store, "/"-separated):
#: zarr.json of the group and of each array, chunk keys ``c/<i>/<j>``, the map's fitted arrays
#: (subgroup ``fitted``) and appended segments (``segments/seg-<16 hex digits>/``, stores of
#: their own). ``overwrite=True`` replaces a store only if it holds nothing else.
_SEG = r"(?:segments/seg-[0-9a-f]{16}/)?"
_NODE = r"(?:features|labels|qid|row_ids|done|fitted|fitted/[A-Za-z0-9_.-]+)"
OWN_FILE = re.compile(rf"^(?:segments/zarr\.json|{_SEG}(?:{_NODE}/)?zarr\.json|{_SEG}{_NODE}/c(?:/[0-9]+)*)$")
OWN_FOLDER = re.compile(rf"^(?:segments|segments/seg-[0-9a-f]{{16}}|{_SEG}{_NODE}(?:/c(?:/[0-9]+)*)?)$")

#: Largest number of blocks in one shard (one object, written whole by one task).
MAX_SHARD_BLOCKS = 4096


def _need(info, key, path, kind, check=None, what=None):
    if key not in info:
        raise StoreError(f"{path}: attribute dask_kernels[{key!r}] is missing; the store is damaged")
    v = info[key]
    if not isinstance(v, kind) or isinstance(v, bool) or (check is not None and not check(v)):
        raise StoreError(f"{path}: attribute dask_kernels[{key!r}] = {str(v)[:80]!r} is not {what}; "
                         "the store is damaged or was edited")
    return v


def validate_info(info, path):
    """Check the ``dask_kernels`` attributes of a store before anything uses them; returns them."""
    if not isinstance(info, dict):
        raise StoreError(f"{path}: attribute 'dask_kernels' is not a JSON object; the store is damaged")
    fmt = info.get("format")
    if fmt not in READABLE_FORMATS or isinstance(fmt, bool):
        raise StoreError(f"{path}: store format {fmt!r} (attribute dask_kernels['format']) is not one this "
                         f"version of dask_kernels reads ({', '.join(map(str, READABLE_FORMATS))}); it was "
                         f"written by dask_kernels {info.get('package_version', '?')}")
    n_rows = _need(info, "n_rows", path, int, lambda v: v >= 0, "an integer >= 0")
    block_rows = _need(info, "block_rows", path, int, lambda v: v >= 1, "an integer >= 1")
    _need(info, "n_blocks", path, int, lambda v: v == -(-n_rows // block_rows),
          f"ceil(n_rows / block_rows) = {-(-n_rows // block_rows)}")
    spec = _need(info, "spec", path, dict, lambda v: isinstance(v.get("method"), str), "a spec with a 'method'")
    fp = _need(info, "fingerprint", path, dict, lambda v: isinstance(v.get("spec"), dict),
               "a job fingerprint with a spec")
    sha = _need(info, "fingerprint_sha256", path, str, lambda v: len(v) == 64, "a SHA-256 hex digest")
    if spec != fp["spec"]:
        diff = differences(fp["spec"], spec)
        raise StoreError(f"{path}: the stored spec does not match the job fingerprint it was written under "
                         f"(edited?): {'; '.join(diff)} (fingerprint vs spec); refusing to use it")
    if fingerprint_hash(fp) != sha:
        raise StoreError(f"{path}: attribute dask_kernels['fingerprint'] does not match "
                         "dask_kernels['fingerprint_sha256'] (edited?); refusing to use it")
    if fmt >= 2:
        _need(info, "lease", path, str, lambda v: len(v) >= 16 and all(c in "0123456789abcdef" for c in v[:16]),
              "a lease id")
        _need(info, "width", path, int, lambda v: v >= 0, "an integer >= 0")
        dtype = _need(info, "dtype", path, str, None, "a dtype")
        try:
            np.dtype(dtype)
        except TypeError:
            _need(info, "dtype", path, str, lambda v: False, "a NumPy dtype")
        if fmt == SEGMENTS_FORMAT or (fmt > SEGMENTS_FORMAT and "segments" in info):
            _validate_segments(info, path)
        elif fmt < SEGMENTS_FORMAT and "segments" in info:  # listed by name only (stores appended to by earlier versions)
            _need(info, "segments", path, list, lambda v: len(v) <= MAX_SEGMENTS and all(
                isinstance(s, str) and SEGMENT_NAME.match(s) for s in v) and len(set(v)) == len(v),
                f"a list of at most {MAX_SEGMENTS} distinct segment names 'seg-<16 hex digits>'")
        if fmt == SHARDED_FORMAT or "shard_blocks" in info:
            _need(info, "shard_blocks", path, int, lambda v: 1 <= v <= MAX_SHARD_BLOCKS,
                  f"an integer in [1, {MAX_SHARD_BLOCKS}]")
    if (fmt == CLASSES_FORMAT) != ("classes" in fp):
        raise StoreError(f"{path}: store format {fmt} {'needs' if fmt == CLASSES_FORMAT else 'has no'} class names "
                         "(dask_kernels['fingerprint']['classes']); the store is damaged or was edited")
    if "classes" in fp:
        try:
            check_classes(fp["classes"], f"{path}: attribute dask_kernels['fingerprint']['classes']")
        except ValueError as e:
            raise StoreError(f"{e}; the store is damaged or was edited") from None
    return info


def _entry_ok(e):
    return (isinstance(e, dict) and tuple(sorted(e)) == tuple(sorted(SEGMENT_ENTRY))
            and isinstance(e["name"], str) and SEGMENT_NAME.match(e["name"]) is not None
            and isinstance(e["fingerprint_sha256"], str) and len(e["fingerprint_sha256"]) == 64
            and isinstance(e["lease"], str) and len(e["lease"]) >= 16
            and isinstance(e["n_rows"], int) and not isinstance(e["n_rows"], bool) and e["n_rows"] >= 0
            and isinstance(e["records"], str) and len(e["records"]) == 16)


def segments_hash(entries):
    """``segments_sha256``: SHA-256 of the canonical JSON of a format 4 store's segment list."""
    return fingerprint_hash({"segments": entries})


def _validate_segments(info, path):
    entries = _need(info, "segments", path, list, lambda v: len(v) <= MAX_SEGMENTS and all(map(_entry_ok, v))
                    and len({e["name"] for e in v}) == len(v),
                    f"a list of at most {MAX_SEGMENTS} distinct segment entries {{{', '.join(SEGMENT_ENTRY)}}}")
    sha = _need(info, "segments_sha256", path, str, lambda v: len(v) == 64, "a SHA-256 hex digest")
    if segments_hash(entries) != sha:
        raise StoreError(f"{path}: attribute dask_kernels['segments'] (the list of appended segments, "
                         f"{len(entries)} now) does not match dask_kernels['segments_sha256'] (edited?); "
                         "refusing to use it: the store would show other rows than were appended to it")


#: Most codecs one array's record (``dask_kernels["arrays"]``) lists: bytes, compressors, a CRC32C,
#: or one sharding codec holding those.
MAX_CODECS = 16
#: The dtypes each column may have in a store written before ``dask_kernels["arrays"]`` recorded
#: them (numeric labels as given; class names as int32 codes; qid int64; row ids integers).
COLUMN_KINDS = {"labels": "biuf", "qid": "iu", "row_ids": "iu"}


def array_record(arr):
    """``{"dtype", "codecs"}`` of a Zarr array as its metadata (zarr.json) says: what creation
    records in ``dask_kernels["arrays"]`` and opening compares."""
    codecs = json.loads(json.dumps([c.to_dict() for c in arr.metadata.codecs]))  # as JSON has them: lists
    return {"dtype": arr.dtype.str, "codecs": codecs}


def _codec_names(codecs):
    """"bytes, zstd, crc32c"; a sharding codec with the codecs inside: "sharding_indexed(bytes, ...)"."""
    def name(c):
        if not isinstance(c, dict):
            return "?"
        inner = c.get("configuration", {}).get("codecs") if isinstance(c.get("configuration"), dict) else None
        return str(c.get("name")) + (f"({_codec_names(inner)})" if isinstance(inner, list) else "")

    return ", ".join(map(name, codecs))


def _record_ok(r):
    return (isinstance(r, dict) and sorted(r) == ["codecs", "dtype"] and isinstance(r["dtype"], str)
            and isinstance(r["codecs"], list) and len(r["codecs"]) <= MAX_CODECS)


def _validate_records(group, info, path, keys):
    """Each array's dtype and codecs against those recorded at creation (``dask_kernels["arrays"]``):
    a zarr.json edited to another dtype reads the same bytes as other numbers, and one edited to
    other codecs fails deep in a decompressor naming nothing."""
    fix = "its metadata (zarr.json) was edited: restore it, or re-run featurize with overwrite=True"
    records = _need(info, "arrays", path, dict,
                    lambda v: sorted(v) == sorted(keys) and all(map(_record_ok, v.values())),
                    f"a record {{dtype, codecs}} of each of the store's arrays ({', '.join(sorted(keys))})")
    for name in sorted(keys):
        got, want = array_record(group[name]), records[name]
        if got["dtype"] != want["dtype"]:
            raise StoreError(f"{path}: array {name!r} has dtype {np.dtype(got['dtype'])} in its zarr.json, the store "
                             f"was written with {want['dtype']!r} (dask_kernels['arrays']); {fix}")
        # by name: each zarr version serializes its codecs' configurations (and their defaults) its
        # own way, and a configuration edited to decode other bytes fails the blocks' digests
        if _codec_names(got["codecs"]) != _codec_names(want["codecs"]):
            raise StoreError(f"{path}: array {name!r} has codecs [{_codec_names(got['codecs'])}] in its zarr.json, "
                             f"the store was written with [{_codec_names(want['codecs'])}] (dask_kernels['arrays']) "
                             f"and its chunks cannot be decoded otherwise; {fix}")


def _validate_kinds(group, info, path, keys):
    """What a store written before ``dask_kernels["arrays"]`` can be checked against: the dtypes
    featurize writes for each array."""
    classes = "classes" in info["fingerprint"]
    for name in sorted(keys & set(COLUMNS)):
        dtype = group[name].dtype
        want = ("int32" if classes else None) if name == "labels" else None
        if (dtype != np.dtype(want)) if want else dtype.kind not in COLUMN_KINDS[name]:
            what = want or {"biuf": "numbers", "iu": "integers"}[COLUMN_KINDS[name]]
            raise StoreError(f"{path}: array {name!r} has dtype {dtype}, featurize writes {what} there; the store's "
                             "metadata (zarr.json) is damaged or was edited")
    if info["format"] >= 2 and group["done"].dtype != np.uint64:
        raise StoreError(f"{path}: array 'done' has dtype {group['done'].dtype}, featurize writes uint64 there; "
                         "the store's metadata (zarr.json) is damaged or was edited")


def validate_arrays(group, info, path):
    """Check the arrays' shapes, chunks, dtypes and codecs against the attributes."""
    n_rows, block_rows, n_blocks = info["n_rows"], info["block_rows"], info["n_blocks"]
    keys = set(group.array_keys())
    for name in ("features", "done"):
        if name not in keys:
            raise StoreError(f"{path}: array {name!r} is missing; the store is damaged")
    for name in sorted(keys - {"features", "done", *COLUMNS}):  # e.g. "labels" under a damaged name
        raise StoreError(f"{path}: unknown array {name!r}; the store's metadata (zarr.json) is damaged or was edited")
    f = group["features"]
    width = info.get("width", f.shape[1] if f.ndim == 2 else -1)
    if f.ndim != 2 or f.shape != (n_rows, width) or tuple(f.chunks) != (block_rows, width):
        raise StoreError(f"{path}: array 'features' has shape {f.shape} and chunks {f.chunks}, the attributes "
                         f"say ({n_rows}, {width}) in blocks of {block_rows} rows")
    if "dtype" in info and f.dtype != np.dtype(info["dtype"]):
        raise StoreError(f"{path}: array 'features' has dtype {f.dtype}, attribute dask_kernels['dtype'] says "
                         f"{np.dtype(info['dtype'])}")
    if "arrays" in info:
        _validate_records(group, info, path, keys)
    else:
        _validate_kinds(group, info, path, keys)
    for name in COLUMNS:
        if name in keys:
            c = group[name]
            if c.shape != (n_rows,) or tuple(c.chunks) != (block_rows,):
                raise StoreError(f"{path}: array {name!r} has shape {c.shape} and chunks {c.chunks}, expected "
                                 f"({n_rows},) in blocks of {block_rows}")
    d = group["done"]
    want = (n_blocks,) if info["format"] == 1 else (n_blocks, len(RECORD_FIELDS))
    if d.shape != want:
        raise StoreError(f"{path}: array 'done' has shape {d.shape}, expected {want}")
    if info["format"] != 1 and tuple(d.chunks) != (1, len(RECORD_FIELDS)):  # one record per chunk, as written
        raise StoreError(f"{path}: array 'done' has chunks {d.chunks}, expected (1, {len(RECORD_FIELDS)}); the "
                         "store's metadata (zarr.json) is damaged or was edited")
    k = int(info.get("shard_blocks", 1))
    for name in keys & {"features", "done", *COLUMNS}:
        shards = group[name].shards
        rows = (block_rows if name != "done" else 1) * k
        if (shards is None) != (k == 1) or (shards is not None and shards[0] != rows):
            raise StoreError(f"{path}: array {name!r} has shards {shards}, attribute dask_kernels['shard_blocks'] "
                             f"= {k} says {'none' if k == 1 else rows} rows per shard")


def _not_found(path):
    problem = link_problem(path)
    if problem is not None:  # a link to where nothing is: say so, not just "nothing here"
        return FileNotFoundError(f"{problem}: no feature store there")
    return FileNotFoundError(f"no feature store at {path}")


def open_checked(path, storage_options=None, mode="r", consolidated=None):
    """Open the group and return ``(group, validated dask_kernels attributes)``."""
    try:
        g = open_group(path, mode, storage_options, consolidated=consolidated)
    except (FileNotFoundError, ValueError, TypeError, KeyError, OverflowError) as e:  # JSONDecodeError: ValueError
        # zarr also says "not found" for a zarr.json it cannot make sense of; Overflow: a fill_value beyond the dtype
        lp = local_path(path)
        if isinstance(e, FileNotFoundError) if lp is None else not os.path.isfile(os.path.join(lp, "zarr.json")):
            raise _not_found(path) from None
        raise StoreError(f"{path}: cannot read the store's metadata (zarr.json): {type(e).__name__}: {e}") from None
    info = g.attrs.get("dask_kernels")
    if info is None:
        raise StoreError(f"{path} is a Zarr group but not a dask_kernels feature store")
    info = validate_info(info, path)
    try:
        validate_arrays(g, info, path)
    except StoreError:
        raise
    except (ValueError, TypeError, KeyError, OverflowError) as e:  # an array's own zarr.json, read here first
        raise StoreError(f"{path}: cannot read an array's metadata (its zarr.json): {type(e).__name__}: {e}; the "
                         "store is damaged or was edited") from None
    return g, info
