"""Zarr v3 feature stores: layout, safe creation, leases, integrity records and the reader.

Layout of one store (a Zarr v3 group), format 2::

    features   (n_rows, width)  stored dtype (codes or floats), chunks (block_rows, width)
    labels     (n_rows,)        when the input had labels, chunks (block_rows,)
    qid        (n_rows,)        when the input had query ids
    row_ids    (n_rows,)        when the caller gave row ids
    done       (n_blocks, 10)   uint64, one chunk (one record) per block, see RECORD_FIELDS

    attrs["dask_kernels"] = {format, spec, rng_scheme, fingerprint, fingerprint_sha256,
                             package_version, n_rows, block_rows, n_blocks, width, dtype, lease}
    attrs["complete"]     = False until every block is done (written last), then metadata is
                            consolidated.

Block i is rows ``[i * block_rows, min((i + 1) * block_rows, n_rows))``: exactly one chunk of
every array, written by exactly one task, which writes its done record after its data.

Sharded stores (``attrs["dask_kernels"]["shard_blocks"] = k > 1``) keep that chunk grid but put
``k`` consecutive blocks of each array (and their ``k`` done records) in one Zarr v3 shard: one
object instead of ``k``. One task featurizes and writes a whole shard (several blocks), then its
records; checksums, digests and done records stay per block. Every
chunk ends with a CRC32C (Zarr's ``crc32c`` codec, after compression), and the done record holds
the store's lease, the job key, the block number and row count, a digest of each array's block
and of the block's input rows. A block counts as done only if its record is complete and
matches; reading a block re-computes the digests, so a damaged (bit flip), missing (deleted
chunk) or swapped chunk is an error naming the array, block and rows, and a re-run of the job
rewrites it.

Safety rules, in the order featurize applies them:

* a store path must be absent, an empty folder or a dask_kernels store; anything else is
  refused, with or without ``overwrite=True``, and left as it was;
* a local store is created whole under a temporary name in the same folder and renamed into
  place, so a killed creation never leaves a half-made store at the path; an fsspec URL (object
  stores have no rename) gets its attributes first, so a half-made store is still recognised as
  ours and replaced by the next run;
* the *lease* (a random id written at creation) names the store's owner: a job checks it before
  every block write, before every done record and at completion, so a job whose store was
  replaced (another job with ``overwrite=True``) stops instead of writing into the new store.
  Runs of the same job resume the same store under the same lease and write identical bytes.

Format 1 stores (done as one byte per block, no checksums) still open for reading, unverified;
featurize does not resume them (``overwrite=True`` replaces them).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator

import dask.array as da
import numpy as np

from .._compat import zarr_sync
from ..blocks import block_bounds
from ._digest import digest
from .fingerprint import differences, fingerprint_hash, job_key

STORE_FORMAT = 2
#: format of sharded stores: format 2 plus ``shard_blocks`` (older versions must not resume
#: them: they would write blocks of one shard from several tasks at once)
SHARDED_FORMAT = 3
READABLE_FORMATS = (1, 2, 3)
COLUMNS = ("labels", "qid", "row_ids")
#: Fields of a block's done record (one uint64 each).
RECORD_FIELDS = ("state", "block", "rows", "lease", "job", "features", "labels", "qid", "row_ids", "input")
FIELD = {name: i for i, name in enumerate(RECORD_FIELDS)}
#: ``state`` of a record: digests recorded / written with integrity checks off (benchmarks only)
DONE, DONE_UNCHECKED = 1, 2

#: Largest number of blocks in one shard (one object, written whole by one task).
MAX_SHARD_BLOCKS = 4096

#: Integrity checks (chunk checksums, digests, input re-checks, leases) on new runs. Private
#: switch for benchmarks/bench_pipeline.py, which measures what they cost.
_INTEGRITY = True


class StoreError(ValueError):
    """A store that cannot be used as it is (not ours, malformed attributes, edited spec)."""


class StoreIntegrityError(StoreError):
    """A stored block does not match its done record (damaged, missing or swapped chunk)."""


class LeaseLostError(RuntimeError):
    """The store this job was writing was replaced by another job."""


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


# -- creation ------------------------------------------------------------------------------------
def _codecs(compressors, checksums):
    from zarr.codecs import Crc32cCodec, ZstdCodec

    if isinstance(compressors, str) and compressors == "auto":
        base = [ZstdCodec(level=0, checksum=False)]  # Zarr's own default for v3
    elif compressors is None:
        base = []
    elif isinstance(compressors, (list, tuple)):
        base = list(compressors)
    else:
        base = [compressors]
    return tuple(base + ([Crc32cCodec()] if checksums else [])) or None


def _build(path, storage_options, *, n_rows, block_rows, width, dtype, columns, compressors, info, checksums,
           shard_blocks=1):
    n_blocks = -(-n_rows // block_rows)
    k = int(shard_blocks)
    meta = dict(info, format=STORE_FORMAT if k == 1 else SHARDED_FORMAT, n_rows=int(n_rows),
                block_rows=int(block_rows), n_blocks=int(n_blocks), width=int(width), dtype=np.dtype(dtype).str)
    if k > 1:
        meta["shard_blocks"] = k
    attrs = {"dask_kernels": meta, "complete": False}
    # attributes first: a creation killed half-way (fsspec URLs) is still recognisably ours
    g = open_group(path, "w", storage_options, attributes=attrs)
    codecs = _codecs(compressors, checksums)

    def shards(rows, *rest):  # one object holds k blocks (each still its own checksummed chunk)
        return {"shards": (rows * k,) + rest} if k > 1 else {}

    g.create_array("features", shape=(n_rows, width), chunks=(block_rows, width), dtype=dtype,
                   compressors=codecs, fill_value=0, dimension_names=("row", "feature"), **shards(block_rows, width))
    for name, col_dtype in columns.items():
        g.create_array(name, shape=(n_rows,), chunks=(block_rows,), dtype=col_dtype, compressors=codecs,
                       fill_value=0, dimension_names=("row",), **shards(block_rows))
    g.create_array("done", shape=(n_blocks, len(RECORD_FIELDS)), chunks=(1, len(RECORD_FIELDS)), dtype="uint64",
                   fill_value=0, compressors=_codecs(None, checksums), dimension_names=("block", "field"),
                   **shards(1, len(RECORD_FIELDS)))
    return g


def create_store(path, *, storage_options, replace, **build):
    """Create a store at ``path``, which must be absent, empty, or (``replace``) our store.

    Local paths: built under a temporary name in the same folder, then renamed into place (an
    existing store of ours is first renamed aside, and deleted only once the new one is in place).
    """
    kind, detail = inspect_path(path, storage_options)
    if kind == "foreign":
        refuse_foreign(path, detail)
    if kind == "ours" and not replace:
        raise StoreError(f"{path}: a feature store appeared there while this job was starting; re-run to "
                         "resume it")
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
        shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)


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
        shutil.rmtree(p, ignore_errors=True)


# -- leases --------------------------------------------------------------------------------------
def lease_key(lease):
    return int(str(lease)[:16], 16)


def read_lease(path, storage_options=None):
    """The lease in the store's zarr.json now, or None if there is no store of ours there."""
    fs, p = filesystem(path, storage_options)
    for attempt in range(5):
        try:
            meta = json.loads(fs.cat_file(p.rstrip("/") + "/zarr.json"))
            return meta["attributes"]["dask_kernels"].get("lease")
        except FileNotFoundError:
            pass  # another job is swapping its store in: look again
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        time.sleep(0.02 * (attempt + 1))
    return None


def check_lease(path, storage_options, lease, doing):
    """Raise :class:`LeaseLostError` unless the store at ``path`` still holds ``lease``."""
    now = read_lease(path, storage_options)
    if now != lease:
        raise LeaseLostError(
            f"{path}: this job's feature store was replaced by another job (overwrite=True?) while this "
            f"job was {doing}; stopping without writing into the other job's store (lease now "
            f"{now or 'none'}, this job's {lease}). Re-run the job if its store is still wanted.")


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


# -- segments (appended rows) --------------------------------------------------------------------
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


# -- records -------------------------------------------------------------------------------------
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


# -- validation of what is read from disk --------------------------------------------------------
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
        if "segments" in info:
            _need(info, "segments", path, list, lambda v: len(v) <= MAX_SEGMENTS and all(
                isinstance(s, str) and SEGMENT_NAME.match(s) for s in v) and len(set(v)) == len(v),
                f"a list of at most {MAX_SEGMENTS} distinct segment names 'seg-<16 hex digits>'")
        if fmt >= SHARDED_FORMAT:
            _need(info, "shard_blocks", path, int, lambda v: 1 <= v <= MAX_SHARD_BLOCKS,
                  f"an integer in [1, {MAX_SHARD_BLOCKS}]")
    return info


def validate_arrays(group, info, path):
    """Check the arrays' shapes, chunks and dtypes against the attributes."""
    n_rows, block_rows, n_blocks = info["n_rows"], info["block_rows"], info["n_blocks"]
    keys = set(group.array_keys())
    for name in ("features", "done"):
        if name not in keys:
            raise StoreError(f"{path}: array {name!r} is missing; the store is damaged")
    f = group["features"]
    width = info.get("width", f.shape[1] if f.ndim == 2 else -1)
    if f.ndim != 2 or f.shape != (n_rows, width) or tuple(f.chunks) != (block_rows, width):
        raise StoreError(f"{path}: array 'features' has shape {f.shape} and chunks {f.chunks}, the attributes "
                         f"say ({n_rows}, {width}) in blocks of {block_rows} rows")
    if "dtype" in info and f.dtype != np.dtype(info["dtype"]):
        raise StoreError(f"{path}: array 'features' has dtype {f.dtype}, attribute dask_kernels['dtype'] says "
                         f"{np.dtype(info['dtype'])}")
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
    k = int(info.get("shard_blocks", 1))
    for name in keys & {"features", "done", *COLUMNS}:
        shards = group[name].shards
        rows = (block_rows if name != "done" else 1) * k
        if (shards is None) != (k == 1) or (shards is not None and shards[0] != rows):
            raise StoreError(f"{path}: array {name!r} has shards {shards}, attribute dask_kernels['shard_blocks'] "
                             f"= {k} says {'none' if k == 1 else rows} rows per shard")


def open_checked(path, storage_options=None, mode="r", consolidated=None):
    """Open the group and return ``(group, validated dask_kernels attributes)``."""
    try:
        g = open_group(path, mode, storage_options, consolidated=consolidated)
    except FileNotFoundError:
        raise FileNotFoundError(f"no feature store at {path}") from None
    except (ValueError, TypeError, KeyError) as e:  # JSONDecodeError is a ValueError
        if local_path(path) is not None and not os.path.exists(local_path(path)):
            raise FileNotFoundError(f"no feature store at {path}") from None
        raise StoreError(f"{path}: cannot read the store's metadata (zarr.json): {type(e).__name__}: {e}") from None
    info = g.attrs.get("dask_kernels")
    if info is None:
        raise StoreError(f"{path} is a Zarr group but not a dask_kernels feature store")
    info = validate_info(info, path)
    validate_arrays(g, info, path)
    return g, info


# -- verified reads ------------------------------------------------------------------------------
class BlockReader:
    """Reads block i of one array and checks it against its done record (picklable)."""

    def __init__(self, path, storage_options, info):
        self.path, self.storage_options, self.info = path, storage_options, info

    @property
    def _group(self):
        return _reader_group(self.path, json.dumps(self.storage_options or {}, sort_keys=True),
                             self.info["fingerprint_sha256"], self.info.get("lease"))

    def read(self, name, i, verify=True):
        a, b = block_bounds(i, self.info["block_rows"], self.info["n_rows"])
        where = f"{self.path}: array {name!r}, block {i} (rows {a}..{b - 1})"
        g = self._group
        try:
            block = np.asarray(g[name][a:b])
        except ValueError as e:
            if "checksum" not in str(e):
                raise
            raise StoreIntegrityError(f"{where}: the chunk's CRC32C does not match (damaged chunk); re-run "
                                      "featurize with the same arguments to rewrite it") from None
        if verify and self.info["format"] >= 2:
            try:
                rec = np.asarray(g["done"][i:i + 1])
            except ValueError:
                rec = np.zeros((1, len(RECORD_FIELDS)), np.uint64)
            if not record_ok(rec, self.info, [i], check=False)[0]:
                raise StoreIntegrityError(f"{where}: the block's done record is missing or invalid (block not "
                                          "written, or its record was damaged); re-run featurize with the same "
                                          "arguments to write it")
            if rec[0, FIELD["state"]] == DONE and int(rec[0, FIELD[name]]) != digest(block):
                cause = "damaged, missing or swapped chunk"
                if not _chunk_exists(g, name, i):
                    cause = "its chunk file is missing"
                raise StoreIntegrityError(f"{where}: content does not match the block's done record ({cause}); "
                                          "re-run featurize with the same arguments to rewrite it")
        return block


def _chunk_exists(group, name, i):
    try:
        arr = group[name]
        if arr.shards is not None:  # the object is the shard that holds block i
            i //= arr.shards[0] // arr.chunks[0]
        key = arr.metadata.encode_chunk_key((i,) + (0,) * (arr.ndim - 1))
        return bool(zarr_sync(group.store.exists(f"{arr.path}/{key}")))
    except Exception:  # noqa: BLE001 - only refines a message
        return True


@functools.lru_cache(maxsize=8)
def _reader_group(path, options_json, sha, lease):  # keyed by what identifies one store
    return open_group(path, "r", json.loads(options_json), consolidated=None)


def _read_block(reader, name, i, verify):
    return reader.read(name, i, verify)


def _verified_array(reader, name, arr, tag, verify):
    from dask.highlevelgraph import HighLevelGraph

    key = f"dk-store-{name}-{tag}"
    n_blocks, block_rows, n_rows = reader.info["n_blocks"], reader.info["block_rows"], reader.info["n_rows"]
    rest = (0,) * (arr.ndim - 1)
    dsk = {(key, i) + rest: (_read_block, reader, name, i, verify) for i in range(n_blocks)}
    sizes = tuple(b - a for a, b in (block_bounds(i, block_rows, n_rows) for i in range(n_blocks)))
    chunks = (sizes,) + tuple((s,) for s in arr.shape[1:])
    if not n_blocks:
        return da.empty(arr.shape, dtype=arr.dtype)
    meta = np.empty((0,) * arr.ndim, dtype=arr.dtype)
    return da.Array(HighLevelGraph.from_collections(key, dsk, dependencies=[]), key, chunks, meta=meta)


class FeatureStore:
    """An opened feature store (see the module docstring for the layout).

    Attributes
    ----------
    path : str
    features : dask.array.Array of shape (n_rows, width), chunked exactly as stored.
    labels, qid, row_ids : dask.array.Array of shape (n_rows,) or None
    spec : dict
        Spec of the map that wrote the store; ``feature_map`` rebuilds it.
    complete : bool
        Whether every block was written and the completion marker set.
    n_rows, n_blocks, block_rows : int
    fingerprint : dict
    format : int
        Store format (1: older stores, read without verification; 2: current; 3: sharded).
    segments : list of FeatureStore
        Rows appended with ``featurize(..., mode="append")``, in order; ``features``, ``labels``,
        ``n_rows``, ``n_blocks``, ``blocks()``, ``read_block`` and ``done`` cover the store's own
        rows followed by every segment's.
    run_stats : dict or None
        Set by :func:`~dask_kernels.featurize`: ``{"computed": blocks written by this run,
        "skipped": blocks already done}``.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from dask_kernels import GCWS, featurize
    >>> X = np.random.default_rng(0).random((100, 8))
    >>> path = os.path.join(tempfile.mkdtemp(), "f.zarr")
    >>> _ = featurize(X, GCWS(n_components=16).fit(X), store=path, block_rows=40, progress=False)
    >>> store = open_store(path)
    >>> store.complete, store.features.shape, store.features.dtype
    (True, (100, 16), dtype('uint8'))
    >>> list(store.blocks())
    [(0, 40), (40, 80), (80, 100)]
    """

    def __init__(self, path: str, storage_options: dict | None = None, verify: bool = True) -> None:
        self.path = path
        self.storage_options = storage_options
        g, info = open_checked(path, storage_options)
        self.group = g
        self.info = dict(info)
        self.format = int(info["format"])
        self.complete = g.attrs.get("complete", False) is True
        self.spec = self.info["spec"]
        self.fingerprint = self.info["fingerprint"]
        self.n_rows = int(self.info["n_rows"])
        self.block_rows = int(self.info["block_rows"])
        self.n_blocks = int(self.info["n_blocks"])
        self.package_version = self.info.get("package_version")
        self.lease = self.info.get("lease")
        self.verify = bool(verify) and self.format >= 2
        self.run_stats = None
        tag = self.info["fingerprint_sha256"][:16] + ("-" + self.lease[:8] if self.lease else "")
        if not self.complete:  # contents still change: never let dask reuse a cached result
            tag += "-" + uuid.uuid4().hex[:8]
        self._reader = BlockReader(path, storage_options, self.info)
        keys = set(g.array_keys())
        for name in ("features",) + COLUMNS:
            arr = g[name] if name in keys else None
            setattr(self, name, None if arr is None else self._array(name, arr, tag))
        self.segments = [FeatureStore(segment_path(path, s), storage_options, verify)
                         for s in self.info.get("segments", [])]
        self._own_blocks = self.n_blocks
        if self.segments:
            self._join_segments()

    def _join_segments(self):
        """Appended segments: their rows follow the first ones, block numbers run on."""
        for seg in self.segments:
            if seg.spec != self.spec:
                raise StoreError(f"{seg.path}: segment written by another map than its store {self.path}; the store "
                                 "is damaged or was edited")
            for name in ("features",) + COLUMNS:
                if (getattr(seg, name) is None) != (getattr(self, name) is None):
                    raise StoreError(f"{seg.path}: segment has {'no ' if getattr(seg, name) is None else ''}array "
                                     f"{name!r}, unlike its store {self.path}")
        for name in ("features",) + COLUMNS:
            if getattr(self, name) is not None:
                setattr(self, name, da.concatenate([getattr(self, name)] + [getattr(s, name) for s in self.segments]))
        self.complete = self.complete and all(s.complete for s in self.segments)
        self.n_rows += sum(s.n_rows for s in self.segments)
        self.n_blocks += sum(s.n_blocks for s in self.segments)

    def _locate(self, i):
        """``(store or segment, its block number, its first global row)`` of global block i."""
        if not 0 <= i < self.n_blocks:
            raise IndexError(f"{self.path}: block {i} out of range ({self.n_blocks} blocks)")
        if i < self._own_blocks:
            return self, i, 0
        i -= self._own_blocks
        row = self.info["n_rows"]
        for seg in self.segments:
            if i < seg.n_blocks:
                return seg, i, row
            i -= seg.n_blocks
            row += seg.n_rows

    def _array(self, name, arr, tag):
        if self.format >= 2:
            return _verified_array(self._reader, name, arr, tag, self.verify)
        meta = np.empty((0,) * arr.ndim, dtype=arr.dtype)
        return da.from_array(arr, chunks=arr.chunks, name=f"dk-store-{name}-{tag}", meta=meta)

    @property
    def feature_map(self):
        """The feature map that wrote the store, rebuilt from its spec."""
        from ..maps import from_spec
        from ..sidecar import store_arrays

        return from_spec(self.spec, arrays=store_arrays(self.group))  # nystroem: fitted arrays

    @property
    def done(self):
        """Boolean mask of finished blocks (their done records are complete and match)."""
        own = record_ok(read_records(self.group), self.info, np.arange(self._own_blocks), check=False)
        return np.concatenate([own] + [s.done for s in self.segments])

    def read_block(self, i: int) -> dict[str, np.ndarray]:
        """``{array name: block i}``, each checked against the block's done record."""
        where, j, _ = self._locate(i)
        return {name: where._reader.read(name, j, where.verify)
                for name in ("features",) + COLUMNS if getattr(where, name) is not None}

    def verify_blocks(self, blocks: Iterable[int] | None = None) -> dict[int, str]:
        """Read blocks (all by default) and return ``{block: error message}`` for the bad ones."""
        bad = {}
        for i in range(self.n_blocks) if blocks is None else blocks:
            try:
                self.read_block(i)
            except StoreIntegrityError as e:
                bad[i] = str(e)
        return bad

    def blocks(self) -> Iterator[tuple[int, int]]:
        """Iterate over ``(start, stop)`` row bounds of the stored blocks, in order."""
        yield from (block_bounds(i, self.block_rows, self.info["n_rows"]) for i in range(self._own_blocks))
        row = self.info["n_rows"]
        for seg in self.segments:
            yield from ((row + a, row + b) for a, b in seg.blocks())
            row += seg.n_rows

    def __repr__(self):
        return (f"FeatureStore({self.path!r}, method={self.spec['method']!r}, n_rows={self.n_rows}, "
                f"width={self.features.shape[1]}, dtype={self.features.dtype}, n_blocks={self.n_blocks}, "
                f"complete={self.complete})")


def open_store(path: str, *, storage_options: dict | None = None, verify: bool = True) -> FeatureStore:
    """Open a feature store written by :func:`~dask_kernels.featurize`.

    Opening validates the store's attributes (format, sizes, spec against the job fingerprint)
    and the arrays' shapes; it reads no data.

    Parameters
    ----------
    path : str
        Local path or fsspec URL of the store.
    storage_options : dict, optional
    verify : bool, default True
        Check every block read (``features``, ``labels``, ...) against its done record: a
        damaged, missing or swapped chunk raises :class:`StoreIntegrityError` naming the array,
        block and rows. Costs a 64-bit hash of the block's bytes (about 1 ms per 16 MiB) and one
        small read per block. Format 1 stores are read unverified.

    Returns
    -------
    FeatureStore
        Opening an unfinished store works; its ``complete`` is False.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from dask_kernels import GCWS, featurize
    >>> X = np.random.default_rng(0).random((50, 8))
    >>> path = os.path.join(tempfile.mkdtemp(), "f.zarr")
    >>> _ = featurize(X[:40], GCWS(n_components=16).fit(X), store=path, progress=False)
    >>> store = open_store(path)
    >>> new = store.feature_map.transform(X[40:])        # new rows, featurized consistently
    >>> new.shape
    (10, 16)
    """
    return FeatureStore(path, storage_options, verify=verify)
