"""Dense row readers: ``.npy`` (memory-mapped on each worker), Zarr arrays, in-memory NumPy.

Each returns a dask array of shape (n_rows, n_features), chunked along rows only, whose name is
a fingerprint of the input; the graph holds a small file handle, never the data.
"""

from __future__ import annotations

import logging
import os
import weakref
from typing import TYPE_CHECKING

import numpy as np

from .._files import file_problem
from .._hashing import content_hash, parts_hash
from ._identity import FileIdentity

if TYPE_CHECKING:
    import dask.array as da

logger = logging.getLogger(__name__)

#: default rows per block when the caller gives none: about 32 MiB of float64 input.
TARGET_BLOCK_BYTES = 32 * 2**20


def default_block_rows(n_features, itemsize=8, target_bytes=TARGET_BLOCK_BYTES):
    """Rows per block so that one dense input block holds about ``target_bytes``."""
    return max(1, int(target_bytes // max(1, n_features * itemsize)))


def refuse_no_columns(shape, where):
    """Refuse rows of no columns (shape ``(n, 0)``), naming ``where``: every map would make each
    row's features of nothing, and the default blocks of such rows (:func:`default_block_rows`
    of 0 columns: 32 Mi rows each) made a file of shape (10**15, 0) a graph of 3e7 tasks."""
    if len(shape) == 2 and shape[1] == 0:
        raise ValueError(f"{where}: the rows have no columns (shape {tuple(shape)}): there is nothing to make "
                         "features of; give rows of at least one column")


def _file_token(path):
    st = os.stat(path)
    return f"{os.path.abspath(path)}|{st.st_size}|{st.st_mtime_ns}"


def load_npy(path: str, ndim: int | None = None) -> np.ndarray:
    """The local ``.npy`` file ``path`` memory-mapped, or a ValueError naming the file.

    numpy's own errors name no file: an empty file raises EOFError, a truncated one "mmap
    length is greater than file size", pickled objects a message about ``allow_pickle``, and
    an ``.npz`` archive under a ``.npy`` name loads as an archive. ``ndim``: the dimensions
    required (2: rows, 1: labels).
    """
    try:
        problem = file_problem(path, 2**63)  # a FIFO would block the read forever
        if problem is not None:
            raise ValueError(f"{path}: not a .npy file: it {problem}")
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError as e:
        raise ValueError(f"{path}: not a readable .npy file ({e})") from None
    if head and not head.startswith(b"\x93NUMPY") and not head.startswith(b"PK\x03\x04"):
        # without the magic, numpy tries pickle and speaks of allow_pickle: say what it is instead
        text = head.decode("utf-8", "replace")
        kind = (" (it looks like text: a CSV file? give it a .csv name, or --format csv)"
                if text.isprintable() or "\n" in text else "")
        raise ValueError(f"{path}: not a .npy file: it does not start with the .npy magic bytes "
                         f"b'\\x93NUMPY' but with {head[:16]!r}{kind}")
    shape, dtype = _header(path)
    if dtype is not None and dtype.hasobject:  # numpy would say only "allow_pickle=False"
        raise ValueError(f"{path}: holds Python objects (dtype {dtype}), which only pickle can load; refused (loading "
                         "a pickle runs code from the file). Save numbers, or class names as fixed-width strings: "
                         "numpy.save(path, y.astype(str))")
    try:
        a = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, EOFError, OSError, OverflowError) as e:  # Overflow: a header's shape beyond a C long
        why = "empty file" if os.path.isfile(path) and os.path.getsize(path) == 0 else str(e) or type(e).__name__
        if isinstance(e, OverflowError) and shape is not None:
            why = f"its header gives shape {shape}, more elements than any array can hold; the file is damaged"
        raise ValueError(f"{path}: not a readable .npy file ({why})") from None
    if not isinstance(a, np.ndarray):  # np.load returns an NpzFile for a .npz renamed .npy
        raise ValueError(f"{path}: not a .npy file (an .npz archive?)")
    if ndim is not None and a.ndim != ndim:
        what = "a 2-d array of rows" if ndim == 2 else "a 1-d array"
        raise ValueError(f"{path}: expected {what}, found shape {a.shape}")
    if ndim == 2:
        refuse_no_columns(a.shape, path)
        if a.dtype.kind not in "biuf":  # else the map's fit fails inside scikit-learn: no file named
            raise ValueError(f"{path}: the rows have dtype {a.dtype}, not real numbers (float, int or bool); "
                             "save the rows as numbers (complex: their .real or abs)")
    return a


def _header(path):
    """``(shape, dtype)`` a ``.npy`` header declares, or ``(None, None)`` if the header cannot be
    read (np.load then says why)."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(f)
            return shape, dtype
    except (ValueError, OSError, EOFError):
        return None, None


class MappedFile:
    """A picklable stand-in for a whole file mapped by NumPy (``np.load(path, mmap_mode="r")`` or
    ``np.memmap(path, mode="r")``): it travels as the file's path, offset, shape and dtype, never
    as its data, and maps the file again for each access (see :func:`mapped`)."""

    def __init__(self, a: np.memmap):
        self.path = os.path.abspath(a.filename)
        self.shape, self.dtype, self.ndim, self.offset = a.shape, a.dtype, a.ndim, int(a.offset)
        self.order = "F" if a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous else "C"
        self.identity = FileIdentity(self.path)

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        # A fresh map per block, returned as a read-only view (no copy): the kernel reads the
        # page cache directly, and the map is released with the block, so resident memory does
        # not grow with the dataset as it would with one long-lived map. Copying instead cost
        # ~5 ms per 15 MiB block in allocation and page zeroing. The file is re-checked (size,
        # mtime) for every block: a file rewritten mid-job must not give a mix of old and new rows.
        self.identity.check()
        return np.asarray(np.memmap(self.path, self.dtype, "r", self.offset, self.shape, self.order)[key])


def mapped(a) -> MappedFile | None:
    """``a`` as a :class:`MappedFile` when it is a whole read-only NumPy mapping of a file (what
    ``np.load(path, mmap_mode="r")`` returns), else None (in-memory arrays, slices of a mapping,
    writable or copy-on-write mappings, whose contents may differ from the file's)."""
    import mmap

    if not (isinstance(a, np.memmap) and isinstance(a.base, mmap.mmap) and a.filename and a.mode == "r"
            and a.size):
        return None
    f = MappedFile(a)
    if not _same_ends(a, f):
        logger.warning("%s: the file no longer holds the rows this array maps (replaced since it was "
                       "loaded?): its rows travel in the task graph instead; load the file again to "
                       "have them read by path", f.path)
        return None
    return f


def _same_ends(a, f):
    """Whether the file at ``f.path`` still shows the first and last rows of the mapping ``a``: a
    file replaced at that path after ``a`` mapped the old one (which ``a`` keeps) does not, and
    the tasks would read the new one. Two rows: reading the whole file would cost a job's read."""
    try:
        now = np.memmap(f.path, f.dtype, "r", f.offset, f.shape, f.order)
    except (OSError, ValueError):  # gone, or shorter than the mapping
        return False
    return all(np.asarray(a[i]).tobytes() == np.asarray(now[i]).tobytes() for i in (0, -1))


class NpyFile(MappedFile):
    """A picklable stand-in for a memory-mapped 2-d ``.npy``: opened lazily in each process."""

    def __init__(self, path):
        super().__init__(load_npy(path, ndim=2))
        self.token = _file_token(self.path)


def read_mapped(f: MappedFile, chunks, name: str | None = None) -> da.Array:
    """A lazy dask array of the mapped file ``f`` (:func:`mapped`) in ``chunks``: each task maps
    and slices the file itself, so the graph holds the small stand-in, never the data. ``name``:
    the array's (default: a hash of the file's path, size, modification time, layout and chunks).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "y.npy"); np.save(p, np.arange(5))
    >>> y = read_mapped(mapped(np.load(p, mmap_mode="r")), 2)
    >>> y.chunks, y.compute().tolist()
    (((2, 2, 1),), [0, 1, 2, 3, 4])
    """
    import dask.array as da  # noqa: PLC0415  (not for commands that only open stores)
    chunks = da.core.normalize_chunks(chunks, f.shape, dtype=f.dtype)
    name = name or "mapped-" + parts_hash(_file_token(f.path), f.offset, f.shape, f.dtype.str, f.order, chunks)
    # inline_array: each block task carries the small file handle instead of depending on a
    # shared key, so block tasks stay independent root tasks the scheduler can freely balance.
    return da.from_array(f, chunks=chunks, name=name, meta=np.empty((0,) * f.ndim, f.dtype), inline_array=True)


#: dask name -> FileIdentity of the arrays of mapped files made by read_npy and from_array
#: (featurize re-checks it per block)
_IDENTITIES = weakref.WeakValueDictionary()


def file_identity(X):
    """The :class:`FileIdentity` of a dask array of a mapped file returned by :func:`read_npy` or
    :func:`from_array`, else None."""
    return _IDENTITIES.get(getattr(X, "name", None))


def read_npy(path: str, *, block_rows: int | None = None) -> da.Array:
    """Dense rows of a ``.npy`` file as a lazy dask array, memory-mapped on each worker.

    Parameters
    ----------
    path : str
        A 2-d ``.npy`` file readable at the same path on every worker.
    block_rows : int, optional
        Rows per block; by default about 32 MiB of float64 input per block.

    Returns
    -------
    dask.array.Array of shape (n_rows, n_features), chunked along rows only.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.npy"); np.save(p, np.ones((10, 3)))
    >>> read_npy(p, block_rows=4).chunks
    ((4, 4, 2), (3,))
    """
    f = NpyFile(path)
    return _mapped_rows(f, block_rows, "npy-" + parts_hash(f.token))


def _mapped_rows(f, block_rows, name=None):
    """The 2-d mapped file ``f`` as rows in blocks of ``block_rows``, read per block by the tasks
    (:func:`read_mapped`); its identity is registered for :func:`file_identity`."""
    rows = block_rows or default_block_rows(f.shape[1], f.dtype.itemsize)
    A = read_mapped(f, (rows, f.shape[1]), name)
    _IDENTITIES[A.name] = f.identity
    return A


def read_zarr(url: str, component: str | None = None, *, block_rows: int | None = None,
              storage_options: dict | None = None) -> da.Array:
    """Dense rows of a 2-d Zarr array (local path or fsspec URL) as a lazy dask array.

    The stored chunking along rows is kept unless ``block_rows`` is given (then it should be a
    multiple of the stored row chunk, so that each block reads whole chunks).

    Examples
    --------
    >>> import zarr, tempfile, os, numpy as np
    >>> p = os.path.join(tempfile.mkdtemp(), "x.zarr")
    >>> z = zarr.create_array(p, shape=(10, 3), chunks=(5, 3), dtype="f8"); z[:] = 1.0
    >>> read_zarr(p).chunks
    ((5, 5), (3,))
    """
    import dask.array as da  # noqa: PLC0415  (not for commands that only open stores)
    import zarr

    arr = zarr.open_array(url, path=component, mode="r", storage_options=storage_options)
    if arr.ndim != 2:
        raise ValueError(f"{url}: expected a 2-d array of rows, found shape {arr.shape}")
    refuse_no_columns(arr.shape, url)
    rows = block_rows or arr.chunks[0]
    # Cheap content hash: metadata plus the first and last stored chunks.
    first = np.asarray(arr[: min(arr.chunks[0], arr.shape[0])])
    last = np.asarray(arr[max(0, arr.shape[0] - arr.chunks[0]) :])
    name = "zarr-" + parts_hash(
        url, component, arr.shape, arr.dtype, arr.chunks, content_hash(first.tobytes(), digest_size=64),
        content_hash(last.tobytes(), digest_size=64),
    )
    return da.from_array(arr, chunks=(rows, arr.shape[1]), name=name, meta=np.empty((0, 0), arr.dtype),
                         inline_array=True)  # see read_npy


def from_array(X, *, block_rows=None):
    """In-memory dense rows as a dask array chunked along rows, named by a hash of the content.

    A whole read-only mapping of a file (``np.load(path, mmap_mode="r")``, see :func:`mapped`) is
    read like :func:`read_npy`: each task maps its own rows by path, offset, shape and dtype and
    re-checks the file's size and modification time, so neither the data nor a hash of it is
    taken here and the graph does not grow with the rows.
    """
    import dask.array as da  # noqa: PLC0415  (not for commands that only open stores)
    f = mapped(X)
    X = f if f is not None else np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"expected a 2-d array of rows, found shape {X.shape}")
    refuse_no_columns(X.shape, "X")
    if f is not None:
        return _mapped_rows(f, block_rows)
    rows = block_rows or default_block_rows(X.shape[1], X.dtype.itemsize)
    name = "ndarray-" + parts_hash(X.shape, X.dtype.str, content_hash(np.ascontiguousarray(X).data, digest_size=64))
    from .._graph import active_client  # noqa: PLC0415

    client = active_client()
    if X.shape[0] and client is not None:
        return _scattered_rows(client, X, rows, name)
    return da.from_array(X, chunks=(rows, X.shape[1]), name=name)


def _scattered_rows(client, X, rows, name):
    """``X`` as :func:`from_array` gives it (same name and chunks) on a distributed Client: each
    block scattered once, to one worker, and the graph holding only the blocks' keys. Embedded in
    the graph, every row went through the scheduler (distributed warned "Sending large graph");
    scattered whole, every worker taking a block from it would receive all the rows."""
    import dask  # noqa: PLC0415
    import dask.array as da  # noqa: PLC0415
    from .._compat import HighLevelGraph  # noqa: PLC0415

    from ..blocks import row_bounds  # noqa: PLC0415

    bounds = row_bounds(X.shape[0], rows)
    blocks = [dask.delayed(f) for f in client.scatter([X[a:b] for a, b in bounds], hash=False)]
    graph = HighLevelGraph.from_collections(name, {(name, i, 0): b.key for i, b in enumerate(blocks)},
                                            dependencies=blocks)
    return da.Array(graph, name, (tuple(b - a for a, b in bounds), (X.shape[1],)), meta=np.empty((0, 0), X.dtype))
