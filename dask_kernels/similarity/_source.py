"""Codes to search, from a feature store, a dask array or a NumPy array, in blocks of rows."""

from __future__ import annotations

import functools
import json
import os
import warnings

import numpy as np

#: Rows per block when the codes come as a NumPy array.
BLOCK_ROWS = 50_000


class Codes:
    """b-bit codes of ``n_rows`` rows, in blocks of rows.

    Attributes
    ----------
    array : dask.array.Array (n_rows, n_hashes), one chunk across the hashes
    bits : int or None
    spec : dict or None (the map's spec, for a store)
    starts : ndarray of int64, the first row of each block and ``n_rows``
    store : (path, storage_options) or None
    """

    def __init__(self, array, bits, spec=None, store=None):
        self.array, self.bits, self.spec, self.store = array, bits, spec, store
        self.starts = np.concatenate([[0], np.cumsum(array.chunks[0])]).astype(np.int64)

    @property
    def n_rows(self):
        return int(self.array.shape[0])

    @property
    def n_hashes(self):
        return int(self.array.shape[1])

    @property
    def n_blocks(self):
        return len(self.array.chunks[0])

    def block(self, i):
        """Block i for a task: a reader of the store's block (read when the task runs, so a task
        holds only the blocks it works on), or the dask array's chunk."""
        if self.store is not None:
            return _StoreBlock(*self.store, i)
        if getattr(self, "_chunks", None) is None:
            self._chunks = self.array.to_delayed().ravel()
        return self._chunks[i]


class _StoreBlock:
    """Block i of a store's features, read (and verified) where it is called."""

    def __init__(self, path, options, i):
        self.path, self.options, self.i = path, options, i

    def __call__(self):
        return _opened(self.path, self.options).read_block(self.i)["features"]

    def __dask_tokenize__(self):
        return ("dk-store-block", self.path, self.options, self.i)


class _StoreAt:
    """Any block of a store's features: ``reader(i)`` is block i's :class:`_StoreBlock`."""

    def __init__(self, path, options):
        self.path, self.options = path, options

    def __call__(self, i):
        return _StoreBlock(self.path, self.options, int(i))

    def __dask_tokenize__(self):
        return ("dk-store-blocks", self.path, self.options)


@functools.lru_cache(maxsize=8)
def _opened(path, options_json):
    from ..pipeline import open_store

    return open_store(path, storage_options=json.loads(options_json))


def load(block):
    """A block's codes: ``block`` itself (an array a task received) or what its reader reads."""
    return block() if callable(block) else np.asarray(block)


def _bits_of_spec(spec, where):
    if spec.get("method") != "gcws":
        raise ValueError(f"{where}: holds {spec.get('method')!r} features; similarity search needs the codes of a "
                         "GCWS map (featurize with --method gcws)")
    return int(spec["params"]["bits"])


def as_codes(source, bits=None, block_rows=BLOCK_ROWS, where="source"):
    """:class:`Codes` of a store (path, URL or :class:`~dask_kernels.FeatureStore`), a dask array
    or a NumPy array of codes. A store knows its ``bits``; arrays need ``bits``."""
    import dask.array as da

    from ..pipeline import FeatureStore, open_store

    if isinstance(source, (str, os.PathLike)):
        source = open_store(os.fspath(source))
    if isinstance(source, FeatureStore):
        b = _bits_of_spec(source.spec, f"{where} {source.path}")
        if bits is not None and int(bits) != b:
            raise ValueError(f"{where} {source.path}: its codes have {b} bits, not bits={bits}")
        if not source.complete:
            raise ValueError(f"{where} {source.path}: the store is not complete; finish its featurize run first")
        if source.spec["params"].get("sampler", "icws") != "dart":
            warnings.warn(f"{where} {source.path}: ICWS codes (sampler='icws') agree more often than the GMM "
                          "similarity predicts (b bits of the split index i* = 2 x feature, + 1 when negative: on "
                          "nonnegative rows their lowest bit is always 0), so code estimates lean high; featurize "
                          "with sampler='dart' (--param sampler=dart) for search, or give the raw rows (X=; "
                          "similar --raw) to keep pairs on exact GMM",
                          UserWarning, stacklevel=3)
        opts = json.dumps(source.storage_options or {}, sort_keys=True)
        return Codes(source.features, b, source.spec, (source.path, opts))
    if bits is None:
        raise ValueError(f"{where}: give bits= (the code width of the GCWS map that made these codes)")
    bits = check_bits(bits, where)
    arr = source if isinstance(source, da.Array) else np.asarray(source)
    if arr.ndim != 2 or arr.dtype.kind != "u" or not arr.shape[1]:
        raise ValueError(f"{where}: expected a 2-D array of unsigned integer codes (rows, hashes), got shape "
                         f"{arr.shape} dtype {arr.dtype}")
    if 8 * arr.dtype.itemsize < bits:
        raise ValueError(f"{where}: {arr.dtype} codes cannot be {bits}-bit codes: give bits= of the GCWS map that "
                         "made them (its bits parameter)")
    if isinstance(arr, da.Array) and np.isnan(arr.shape[0]):  # (a dask DataFrame's to_dask_array())
        raise ValueError(f"{where}: a dask array of unknown chunk sizes: the join numbers rows by their blocks; call "
                         "its compute_chunk_sizes() first")
    if isinstance(arr, np.ndarray):  # in memory: read now; a dask array's codes are checked as its blocks are read
        check_code_range(arr, bits, where)
        arr = da.from_array(arr, chunks=(block_rows, -1))
    return Codes(arr.rechunk({1: -1}), bits)


def check_code_range(codes, bits, where):
    """Refuse ``codes`` holding a code of ``2**bits`` or more (codes of a wider map): their
    estimates would be off by the other chance agreement, without a word."""
    top = int(codes.max()) if codes.size else 0
    if top >> bits:
        raise ValueError(f"{where}: a code of {top} cannot be {bits}-bit codes: give bits= of the GCWS map that made "
                         "them (its bits parameter)")


def check_bits(bits, where="bits"):
    """``bits`` as an int from 1 to 16, or ValueError naming ``where``."""
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 1 <= bits <= 16:
        raise ValueError(f"{where}: bits must be an integer from 1 to 16, got {bits!r}")
    return int(bits)


class Rows:
    """Raw rows aligned with a :class:`Codes`, ``width`` columns, one block per block of codes
    (:meth:`block`)."""

    def __init__(self, blocks, width):
        self._blocks, self.width = blocks, int(width)

    def block(self, i):
        """Block i for a task: a reader of a ``.npy`` file's rows (read where the task runs), or a
        delayed slice of the one shared copy of an in-memory matrix, or a dask array's chunk."""
        return self._blocks[i]


class _NpyBlock:
    """Rows ``start:stop`` of a ``.npy`` file of ``shape`` as float64, read (memory-mapped) where
    it is called."""

    def __init__(self, path, start, stop, hashed=None, shape=None):
        self.path, self.start, self.stop, self.hashed, self.shape = path, start, stop, hashed, shape

    def __call__(self):
        arr = np.load(self.path, mmap_mode="r")
        if self.shape is not None and arr.shape != self.shape:  # the pair kernels would read past its rows
            raise ValueError(f"{self.path}: now of shape {arr.shape}, not {self.shape} as when the join was "
                             "given it: the file changed while the join ran; run it again")
        rows = _checked(arr[self.start:self.stop], self.path, self.start)
        return rows if self.hashed is None else self.hashed(rows)

    def __dask_tokenize__(self):
        st = os.stat(self.path)
        return ("dk-npy-rows", self.path, st.st_size, st.st_mtime_ns, self.start, self.stop, _token(self.hashed))


class _NpyAt:
    """Any block of a ``.npy`` file's rows, cut at ``starts``: ``reader(i)`` is block i's :class:`_NpyBlock`."""

    def __init__(self, path, starts, hashed=None, shape=None):
        self.path, self.starts, self.hashed, self.shape = path, [int(x) for x in starts], hashed, shape

    def __call__(self, i):
        return _NpyBlock(self.path, self.starts[i], self.starts[i + 1], self.hashed, self.shape)

    def __dask_tokenize__(self):
        st = os.stat(self.path)
        return ("dk-npy-blocks", self.path, st.st_size, st.st_mtime_ns, tuple(self.starts), _token(self.hashed))


def _token(hashed):
    """What identifies the rows' preparation: the map's spec (its centering or scaling)."""
    return None if hashed is None else json.dumps(hashed.__self__.spec(), sort_keys=True)


def _hashing(codes):
    """``(n_features, hashed)`` of the map that made a store's codes: its input width (None
    without a spec) and its :meth:`~dask_kernels.GCWS.hashed_rows` when it centers or scales
    (None: the raw rows are what it hashes)."""
    if codes.spec is None:
        return None, None
    from ..maps.spec import from_spec

    fmap = from_spec(codes.spec)
    prepares = getattr(fmap, "center_", None) is not None or getattr(fmap, "scale_", None) is not None
    return int(fmap.n_features_in_), (fmap.hashed_rows if prepares else None)


def _check_width(shape, width, where):
    if width is not None and shape[1] != width:
        raise ValueError(f"{where}: rows of {shape[1]} columns, but the codes' map was fitted on {width}: give the "
                         "raw rows the store was featurized from")


def _slice(X, start, stop):
    return X[start:stop]


def _checked(X, where, row_offset=0):
    """``X`` as float64 rows (dense, or CSR with sorted, unique column indices), refused naming
    the row and column of a NaN or infinity: the exact GMM of a row holding one is a wrong number
    (pairs kept or dropped on it), not an error."""
    from ..blocks import InputValueError, validate_block

    try:
        return validate_block(X, dtypes=(np.float64,), row_offset=row_offset)
    except InputValueError as e:
        raise e.at(f"row {e.row} of {where}") from None


def _checked_chunk(X, where, block_info=None):
    return _checked(X, where, block_info[0]["array-location"][0][0] if block_info else 0)


def as_rows(X, codes, where="X"):
    """Raw rows aligned with ``codes`` (same row count), as :class:`Rows`: float64 blocks of a
    dense array, or CSR blocks (sorted, unique column indices) of a SciPy sparse matrix.

    ``X`` may be the path of a ``.npy`` file: each task then reads its own rows, and neither the
    graph nor any worker holds the whole matrix. An in-memory matrix goes into the graph once
    (scattered on an active Client), not once per block.

    For a store's codes the rows must have the map's input width, and are centred or scaled as
    the map hashed them (:meth:`~dask_kernels.GCWS.hashed_rows`): the exact GMM is then of the
    rows whose similarity the codes estimate."""
    import dask
    import dask.array as da
    import scipy.sparse as sp

    from .._graph import shared_key

    bounds = list(zip(codes.starts[:-1].tolist(), codes.starts[1:].tolist()))
    width, hashed = _hashing(codes)
    if isinstance(X, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(X))
        try:
            arr = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as e:
            raise ValueError(f"{where} {path}: cannot read it as a .npy file of rows ({e})") from None
        if arr.ndim != 2 or arr.shape[0] != codes.n_rows or arr.dtype.kind not in "biuf":
            raise ValueError(f"{where} {path}: expected {codes.n_rows} rows of numbers (one per row of codes), got "
                             f"shape {arr.shape} dtype {arr.dtype}")
        _check_width(arr.shape, width, f"{where} {path}")
        return Rows([_NpyBlock(path, a, b, hashed, arr.shape) for a, b in bounds], arr.shape[1])
    shape = getattr(X, "shape", None) if sp.issparse(X) or isinstance(X, da.Array) else np.shape(X)
    if shape is None or len(shape) != 2 or shape[0] != codes.n_rows:
        raise ValueError(f"{where}: expected {codes.n_rows} rows (one per row of codes), got shape {shape}")
    _check_width(shape, width, where)
    if isinstance(X, da.Array):
        X = X.astype(np.float64).rechunk((codes.array.chunks[0], -1)).map_blocks(_checked_chunk, where,
                                                                                 dtype=np.float64)
        if hashed is not None:
            X = X.map_blocks(hashed, dtype=np.float64)
        return Rows(list(X.to_delayed().ravel()), shape[1])
    X = _checked(X, where)  # sorted column indices too, as the pair kernel's merge needs
    if hashed is not None:
        X = hashed(X)
    import uuid

    whole = shared_key(X, f"dk-similarity-rows-{uuid.uuid4().hex}")
    take = dask.delayed(_slice, pure=True)
    return Rows([take(whole, a, b) for a, b in bounds], shape[1])
