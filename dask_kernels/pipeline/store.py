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

Appended segments (``featurize(..., mode="append")``) are stores of their own under
``segments/``; format 4 (sharded or not) lists each with its identity (job fingerprint, lease,
rows, a digest of its done records) under ``segments_sha256``, so an edited list or a swapped
or rewritten segment is refused on open naming it. Earlier formats list names only (read as
listed; the next append upgrades the store to format 4).

Safety rules, in the order featurize applies them:

* a store path that is a symbolic link, or lies inside a saved model or another store (its own
  segments excepted), is refused;
* a store path must be absent, an empty folder or a dask_kernels store; anything else is
  refused, with or without ``overwrite=True``, and left as it was; ``overwrite=True`` also
  refuses a store holding entries a store does not consist of (``layout.OWN_FILE``), and
  deletes only a store's own entries;
* a local store is created whole under a temporary name in the same folder and renamed into
  place, so a killed creation never leaves a half-made store at the path; an fsspec URL (object
  stores have no rename) gets its attributes first, so a half-made store is still recognised as
  ours and replaced by the next run;
* the *lease* (a random id written at creation) names the store's owner: a job checks it before
  every block write, before every done record and at completion, so a job whose store was
  replaced (another job with ``overwrite=True``) stops instead of writing into the new store.
  Runs of the same job resume the same store under the same lease and write identical bytes.

Labels given as class names (strings) are stored as int32 codes into the sorted list of the
names, kept in the job fingerprint (``fingerprint["classes"]``, so covered by its hash); such a
store is format 5 (sharded or not, with segments or not) so that versions that do not know it
refuse it instead of reading codes as labels. Each appended segment keeps its own names (a new
segment may bring a new class); reading gives the names back.

The names of the input's columns, when known (``featurize(feature_names=...)``, a dask
DataFrame, a table read by the command line), are kept the same way
(``fingerprint["feature_names"]``). No format change: a version that does not know them reads
the features as they are, by position, which is what they are.

Format 1 stores (done as one byte per block, no checksums) still open for reading, unverified;
featurize does not resume them (``overwrite=True`` replaces them).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Iterable, Iterator

import dask.array as da
import numpy as np

from .._compat import zarr_sync
from ..blocks import block_bounds
from ..labels import check_classes, decode
from ._digest import digest
from .fingerprint import check_feature_names
from .layout import COLUMNS, open_checked
from .location import StoreError, StoreIntegrityError, check_chunk_file, open_group
from .records import DONE, FIELD, RECORD_FIELDS, read_records, record_ok
from .segments import records_digest, segment_path

def _name(entry):
    """A listed segment's name (format 4 lists entries, earlier formats names)."""
    return entry["name"] if isinstance(entry, dict) else entry


class BlockReader:
    """Reads block i of one array and checks it against its done record (picklable)."""

    def __init__(self, path, storage_options, info):
        self.path, self.storage_options, self.info = path, storage_options, info

    @property
    def _key(self):
        return (self.path, json.dumps(self.storage_options or {}, sort_keys=True), self.info["fingerprint_sha256"],
                self.info.get("lease"))

    @property
    def _group(self):
        return _reader_group(*self._key)

    def record(self, i):
        """Block i's done record, shape (1, fields): zeros if its chunk fails its checksum."""
        done = _reader_array(*self._key, "done")
        check_chunk_file(done, i, f"{self.path}: array 'done', block {i}")
        try:
            return np.asarray(done[i:i + 1])
        except ValueError:
            return np.zeros((1, len(RECORD_FIELDS)), np.uint64)

    def read(self, name, i, verify=True, record=None):
        """Block i of array ``name``, checked against its done record if ``verify`` (the
        :meth:`record` given, read once for all the block's arrays, or read here)."""
        a, b = block_bounds(i, self.info["block_rows"], self.info["n_rows"])
        where = f"{self.path}: array {name!r}, block {i} (rows {a}..{b - 1})"
        arr = _reader_array(*self._key, name)
        check_chunk_file(arr, i, where)
        try:
            block = np.asarray(arr[a:b])
        except ValueError as e:
            if "checksum" not in str(e):
                raise
            raise StoreIntegrityError(f"{where}: the chunk's CRC32C does not match (damaged chunk); re-run "
                                      "featurize with the same arguments to rewrite it") from None
        except (RuntimeError, OSError, EOFError) as e:  # a decompressor's (zstd, gzip): it names nothing
            codecs = ", ".join(c.to_dict()["name"] for c in arr.metadata.codecs)
            raise StoreIntegrityError(f"{where}: the chunk cannot be decoded with the codecs its zarr.json names "
                                      f"([{codecs}]): {type(e).__name__}: {e}; the chunk is damaged or the metadata "
                                      "was edited: re-run featurize with the same arguments, or with overwrite=True"
                                      ) from None
        if verify and self.info["format"] >= 2:
            rec = self.record(i) if record is None else record
            if not record_ok(rec, self.info, [i], check=False)[0]:
                raise StoreIntegrityError(f"{where}: the block's done record is missing or invalid (block not "
                                          "written, or its record was damaged); re-run featurize with the same "
                                          "arguments to write it")
            if rec[0, FIELD["state"]] == DONE and int(rec[0, FIELD[name]]) != digest(block):
                cause = "damaged, missing or swapped chunk"
                if not _chunk_exists(self._group, name, i):
                    cause = "its chunk file is missing"
                raise StoreIntegrityError(f"{where}: content does not match the block's done record ({cause}); "
                                          "re-run featurize with the same arguments to rewrite it")
        if name == "labels" and self.classes is not None:  # checked as stored (codes), returned as names
            block = decode(block, self.classes, where)
        return block

    @functools.cached_property
    def classes(self):
        """The class names the stored label codes index (format 5), else None."""
        names = self.info["fingerprint"].get("classes")
        return None if names is None else check_classes(names, self.path)

    def dtype(self, name, stored):
        """The dtype of array ``name``'s blocks as :meth:`read` returns them."""
        classes = self.classes if name == "labels" else None
        return stored if classes is None else classes.dtype


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


@functools.lru_cache(maxsize=64)
def _reader_array(path, options_json, sha, lease, name):
    """Array ``name`` of :func:`_reader_group`'s group (looking it up again costs ~0.3 ms per read)."""
    return _reader_group(path, options_json, sha, lease)[name]


def _read_block(reader, name, i, verify):
    return reader.read(name, i, verify)


def _array_key(name, tag):
    return f"dk-store-{name}-{tag}"


def is_stored_array(arr, name: str) -> bool:
    """True when ``arr`` is a store's own ``name`` array as :func:`open_store` made it (one
    chunk per stored block), not mapped, sliced or joined with appended segments: its key
    is the store's."""
    return str(getattr(arr, "name", "")).startswith(_array_key(name, ""))


def _verified_array(reader, name, arr, tag, verify):
    from .._compat import HighLevelGraph

    key = _array_key(name, tag)
    n_blocks, block_rows, n_rows = reader.info["n_blocks"], reader.info["block_rows"], reader.info["n_rows"]
    rest = (0,) * (arr.ndim - 1)
    dsk = {(key, i) + rest: (_read_block, reader, name, i, verify) for i in range(n_blocks)}
    sizes = tuple(b - a for a, b in (block_bounds(i, block_rows, n_rows) for i in range(n_blocks)))
    chunks = (sizes,) + tuple((s,) for s in arr.shape[1:])
    if not n_blocks:
        return da.empty(arr.shape, dtype=reader.dtype(name, arr.dtype))
    meta = np.empty((0,) * arr.ndim, dtype=reader.dtype(name, arr.dtype))
    return da.Array(HighLevelGraph.from_collections(key, dsk, dependencies=[]), key, chunks, meta=meta)


class FeatureStore:
    """An opened feature store (see the module docstring for the layout).

    Attributes
    ----------
    path : str
    features : dask.array.Array of shape (n_rows, width), chunked exactly as stored.
    labels, qid, row_ids : dask.array.Array of shape (n_rows,) or None
        Labels as given to featurize: numbers, or class names (a ``<U`` array; stored as
        codes, see :mod:`dask_kernels.labels`).
    classes : ndarray of str or None
        The sorted class names of a store whose labels are class names (every segment's).
    feature_names : list of str or None
        Names of the input's columns, in order (``featurize(feature_names=...)``, a dask
        DataFrame's columns, or the table ``dask-kernels featurize`` read), else None.
    spec : dict
        Spec of the map that wrote the store; ``feature_map`` rebuilds it.
    complete : bool
        Whether every block was written and the completion marker set.
    n_rows, n_blocks, block_rows : int
    fingerprint : dict
    format : int
        Store format (1: older stores, read without verification; 2: current; 3: sharded;
        4: with appended segments, each checked against the store's list).
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
        listed = self.info.get("segments", [])
        self.segments = [FeatureStore(segment_path(path, _name(s)), storage_options, verify) for s in listed]
        for seg, entry in zip(self.segments, listed):
            if isinstance(entry, dict):  # format 4: the segment must be the one that was appended
                self._check_segment(seg, entry)
        self._own_blocks = self.n_blocks
        self.classes = self._reader.classes
        self.feature_names = check_feature_names(self.fingerprint.get("feature_names"),
                                                 self.spec.get("n_features_in"), f"{path}: fingerprint")
        if self.segments:
            self._join_segments()

    def _check_segment(self, seg, entry):
        where = f"{self.path}: segment {entry['name']} ({seg.path})"
        fix = ("restore the segment that was appended, or re-run the append that wrote it (same input) to "
               "rewrite it")
        if seg.info["fingerprint_sha256"] != entry["fingerprint_sha256"] or seg.n_rows != entry["n_rows"]:
            raise StoreIntegrityError(f"{where} holds another job's rows than the segment the store lists "
                                      f"(swapped or replaced segment); {fix}")
        if seg.lease != entry["lease"]:
            raise StoreIntegrityError(f"{where} is not the store that was appended (another store's segment, "
                                      f"or a segment written again: its lease differs); {fix}")
        if self.verify and records_digest(seg.group) != entry["records"]:
            raise StoreIntegrityError(f"{where}: its done records changed since it was appended (damaged, "
                                      f"swapped or rewritten segment); {fix}")

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
        if self.classes is not None:  # a segment may add classes
            self.classes = np.unique(np.concatenate([self.classes] + [s.classes for s in self.segments]))
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
        return da.from_array(arr, chunks=arr.chunks, name=_array_key(name, tag), meta=meta)

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
        reader = where._reader
        record = reader.record(j) if where.verify else None  # read once for every array of the block
        return {name: reader.read(name, j, where.verify, record)
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
