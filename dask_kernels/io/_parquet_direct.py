"""The fast path of :func:`~dask_kernels.io.read_parquet`'s tasks: a partition's column chunks
read as bytes (one ranged read per row group) and decoded by :mod:`._parquet_pages` straight into
row-major rows.

pyarrow decodes a column chunk into an Arrow array, and the rows are then gathered from 784 such
arrays; on a block of 7,032 rows of 784 float32 columns (dictionary-encoded, Snappy: pyarrow's
defaults) that costs about 55 CPU-ms (45 of decoding, 10 of gathering). Decoding the pages in one
Numba call per row group, into the rows directly, costs 18-19 in one process and about 20 in a
Dask worker, whose large allocations are fresh mappings (so a row group's bytes and rows come from
:mod:`._reuse`'s pool; measured: ``benchmarks/bench_pipeline.py``). The
layout comes from the footer pyarrow has already parsed; where :func:`read_rows` returns None (a
column type, encoding or codec the decoder does not read, or anything in the file it finds
inconsistent) the caller reads the partition with pyarrow as before, so results never depend on
which path ran (tested bitwise against pyarrow).
"""

from __future__ import annotations

import numpy as np
from fsspec.implementations.local import LocalFileSystem

from . import _parquet_pages as pages
from . import _reuse as reuse

_PHYSICAL = {"FLOAT": pages.FLOAT, "DOUBLE": pages.DOUBLE}
_CODECS = {"UNCOMPRESSED": pages.UNCOMPRESSED, "SNAPPY": pages.SNAPPY}
_LINE = 64  # bytes in a cache line
#: Column chunks further apart than this are read with separate requests rather than one span.
_GAP = 1 << 20

#: Whether :func:`read_rows` tries at all in this process (benchmarks switch it off to time the
#: pyarrow path on the same file in the same run).
ENABLED = True

#: How the last call of :func:`read_rows` in this process went (for tests and benchmarks):
#: ``"decoded"``, or why it returned None.
last_outcome = {"outcome": None}


#: Per parsed footer (by identity: pyarrow hashes and compares a footer by its content, 0.14 ms
#: each for 64 row groups x 784 columns): ``id(footer) -> (footer, {key: value})``, at most 64.
_by_footer: dict = {}


def _cached(meta, key, compute):
    """``compute()`` once per footer object and key."""
    entry = _by_footer.get(id(meta))
    if entry is None or entry[0] is not meta:
        if len(_by_footer) >= 64:
            _by_footer.pop(next(iter(_by_footer)), None)
        entry = _by_footer[id(meta)] = (meta, {})
    if key not in entry[1]:
        entry[1][key] = compute()
    return entry[1][key]


def _leaves(meta):
    """``{column name: (leaf index, physical type, max definition level)}`` for the flat
    FLOAT/DOUBLE leaves of a file's schema (a name that two leaves share is left out, so its
    columns go to pyarrow)."""
    schema = meta.schema
    out, seen = {}, set()
    for i in range(len(schema)):
        leaf = schema.column(i)
        if leaf.path in seen:
            out.pop(leaf.path, None)
            continue
        seen.add(leaf.path)
        if leaf.max_repetition_level == 0 and leaf.max_definition_level <= 1 and "." not in leaf.path \
                and leaf.physical_type in _PHYSICAL and leaf.logical_type.type == "NONE":
            out[leaf.path] = (i, _PHYSICAL[leaf.physical_type], leaf.max_definition_level)
    return out


def _columns(meta, columns, dtype):
    """``(leaf indices, physical types, max definition levels)`` of ``columns``, or None if there
    are none or one is not a column the decoder reads into ``dtype`` (float32 rows: FLOAT
    columns only)."""
    leaves = _cached(meta, "leaves", lambda: _leaves(meta))
    picked = [leaves.get(c) for c in columns]
    if not picked or any(p is None for p in picked):
        return None
    physical = np.array([p[1] for p in picked], np.int64)
    if dtype == np.float32 and (physical != pages.FLOAT).any():
        return None
    return [p[0] for p in picked], physical, np.array([p[2] for p in picked], np.int64)


def _layout(rg, leaves):
    """``(starts, ends, codecs)`` of row group ``rg``'s column chunks for the leaf indices
    ``leaves`` (file offsets), or None if a chunk uses a codec the decoder does not read."""
    starts, ends, codecs = (np.empty(len(leaves), np.int64) for _ in range(3))
    for j, i in enumerate(leaves):
        c = rg.column(i)
        codec = _CODECS.get(c.compression)
        if codec is None:
            return None
        start = c.data_page_offset
        if c.has_dictionary_page and 0 < c.dictionary_page_offset < start:
            start = c.dictionary_page_offset
        starts[j], ends[j], codecs[j] = start, start + c.total_compressed_size, codec
    return starts, ends, codecs


def _spans(starts, ends):
    """Byte ranges ``[(start, end), ...]`` covering every chunk, merging chunks less than
    :data:`_GAP` apart (one range for a whole row group's chunks, which lie end to end)."""
    order = np.argsort(starts, kind="stable")
    a, b = starts[order], np.maximum.accumulate(ends[order])
    cut = np.flatnonzero(a[1:] > b[:-1] + _GAP) + 1  # a range ends where the next chunk is far
    first, last = np.r_[0, cut], np.r_[cut, len(a)] - 1
    return list(zip(a[first].tolist(), b[last].tolist()))


def _read_ranges(fs, path, spans):
    """The byte ranges ``spans`` of the file, end to end, as one uint8 array (None if one is short):
    concurrent ranged requests on an object store."""
    datas = fs.cat_ranges([path] * len(spans), [a for a, _ in spans], [b for _, b in spans])
    for (a, b), d in zip(spans, datas):
        if isinstance(d, Exception):
            raise d
        if len(d) != b - a:
            return None
    return np.frombuffer(datas[0] if len(datas) == 1 else b"".join(datas), np.uint8)


def _read_local(fs, path, spans):
    """:func:`_read_ranges` of a local file, read straight into an array (:mod:`._reuse`'s): a
    ``bytes`` object's 9 MB (a row group of the benchmark's file) cost 2,200 page faults, ~3.5 of
    the read's 5.5 CPU-ms in a Dask worker, where every large allocation is freshly mapped."""
    buf = reuse.empty(sum(b - a for a, b in spans))
    at = 0
    with fs.open(path, "rb") as f:
        for a, b in spans:
            f.seek(a)
            view = memoryview(buf[at:at + b - a])
            while len(view):  # readinto may return fewer bytes than asked: read on to the end
                got = f.readinto(view)
                if not got:
                    return None
                view = view[got:]
            at += b - a
    return buf


def _fetch(fs, path, starts, ends, size):
    """The chunks' bytes as one buffer and their offsets in it (None if the footer points outside
    the file): a single ranged read when they are contiguous, as a whole row group's are."""
    if len(starts) and (starts.min() < 0 or ends.max() > size or (ends < starts).any()):
        return None
    spans = _spans(starts, ends)
    buf = _read_local(fs, path, spans) if isinstance(fs, LocalFileSystem) else _read_ranges(fs, path, spans)
    if buf is None:  # the file is shorter than its footer says: pyarrow reports that
        return None
    shift = np.empty(len(starts), np.int64)  # file offset -> buffer offset, per chunk
    base = 0
    for (a, b) in spans:
        inside = (starts >= a) & (ends <= b)
        shift[inside] = base - a
        base += b - a
    return buf, starts + shift, ends + shift


def line_aligned(rows):
    """Whether every row of the C-contiguous 2-d array ``rows`` starts a cache line (64 bytes)."""
    return rows.ctypes.data % _LINE == 0 and rows.strides[0] % _LINE == 0


def _aligned_empty(shape, dtype, align=_LINE):
    """``np.empty(shape, dtype)`` starting on a cache line (the decoder writes 16 columns of a row
    at a time, whole cache lines when each row starts one: see :func:`line_aligned`), from
    :mod:`._reuse`'s pool when it holds a buffer of about that size."""
    dtype = np.dtype(dtype)
    return reuse.empty(int(np.prod(shape)) * dtype.itemsize, align).view(dtype).reshape(shape)


def read_rows(fs, path, meta, groups, columns, n, dtype, size):
    """Rows ``(n, len(columns))`` of ``dtype`` from row groups ``groups`` of the file, decoded
    directly, or None when this path does not apply (then nothing has been returned or written
    anywhere, and the caller reads with pyarrow).

    ``meta`` is the file's parsed footer, ``size`` its size when the job started.
    """
    if not ENABLED:
        last_outcome["outcome"] = "disabled"
        return None
    if not pages.NATIVE:  # the kernels load little-endian values natively
        last_outcome["outcome"] = "byte order"
        return None
    columns, dtype = tuple(columns), np.dtype(dtype)
    picked = _cached(meta, (columns, dtype.str), lambda: _columns(meta, columns, dtype))
    if picked is None:
        last_outcome["outcome"] = "column type"
        return None
    index, physical, max_defs = picked
    out = _aligned_empty((n, len(columns)), dtype)
    row = 0
    for g in groups:
        rg = meta.row_group(g)
        rows = rg.num_rows
        if row + rows > n:
            last_outcome["outcome"] = "row count"
            return None
        layout = _layout(rg, index)
        if layout is None:
            last_outcome["outcome"] = "codec"
            return None
        fetched = _fetch(fs, path, *layout[:2], size)
        if fetched is None:
            last_outcome["outcome"] = "offsets"
            return None
        buf, starts, ends = fetched
        part = out[row:row + rows]
        status, column = pages.decode_row_group(buf, starts, ends, physical, layout[2], max_defs, part,
                                                line_aligned(part))
        if status != pages.OK:
            last_outcome["outcome"] = f"status {status} in column {columns[column]!r} of row group {g}"
            return None
        row += rows
    if row != n:
        last_outcome["outcome"] = "row count"
        return None
    last_outcome["outcome"] = "decoded"
    return out
