"""Numba decoder for the common kind of Parquet column chunk: the fast path of ``read_parquet``.

It decodes, straight into row-major output, flat ``FLOAT`` and ``DOUBLE`` columns (required or
optional) whose pages are PLAIN or dictionary-encoded (``PLAIN_DICTIONARY``/``RLE_DICTIONARY``),
data page v1 or v2, uncompressed or Snappy: what pyarrow, pandas, Spark and dask write by
default. Anything else, and anything inconsistent (a page header it cannot parse, a size or an
index out of range, a value count that does not add up to the row group), makes it give up on
the row group, and pyarrow reads it instead: pyarrow either reads what this decoder does not
(other encodings and codecs, nested columns) or raises its own error for a damaged file. So this
module never decides what is an error, only how fast the common case goes. Every read and write
is bounds-checked (a damaged file must not make it touch memory outside its buffers), and what it
allocates is bounded by the row group's row count, never by a size a page header claims.

The format (Apache Parquet's ``parquet.thrift`` and its encodings page): a column chunk is an
optional dictionary page followed by data pages; each page is a Thrift compact-protocol
``PageHeader`` (parsed by :mod:`._page_header`) followed by the page's bytes. Definition levels
and dictionary indices use the RLE/bit-packing hybrid; values are little-endian IEEE 754.
"""

import sys
import threading

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ._bytes import load64, varint
from ._page_header import (CSIZE, DATA_PAGE, DATA_PAGE_V2, DEF_ENCODING, DICTIONARY_PAGE, ENCODING, N_FIELDS,
                           NVALUES, TYPE, USIZE, V2_COMPRESSED, V2_DEF_LEN, V2_NULLS, V2_REP_LEN, page_header)
from ._snappy import decompress as snappy_decompress

#: The decoder reads little-endian values with native loads; elsewhere pyarrow reads everything.
NATIVE = sys.byteorder == "little"

#: status codes of :func:`decode_row_group` (0 = decoded); each names why it gave up, for tests
OK, BAD_HEADER, UNSUPPORTED, BAD_PAGE, BAD_SNAPPY, BAD_LEVELS, BAD_COUNT = 0, -1, -2, -3, -4, -5, -7

# physical types (parquet.thrift Type) and codecs (CompressionCodec) this decoder reads
FLOAT, DOUBLE = 4, 5
UNCOMPRESSED, SNAPPY = 0, 1

_PLAIN, _PLAIN_DICTIONARY, _RLE, _RLE_DICTIONARY = 0, 2, 3, 8
_GROUP = 16
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], np.int64)


@intrinsic
def _store_row_nt(typingctx, out, index, cols, row, n):
    """``out[index + j] = cols[j * n + row]`` for j < 16 (flat arrays, one dtype) as one
    non-temporal vector store: 16 float32 (one cache line) or 16 float64 (two), written without
    first reading the lines into the cache. ``out[index]`` must start a cache line."""
    if not (isinstance(out, types.Array) and isinstance(cols, types.Array) and out.dtype == cols.dtype
            and out.dtype in (types.float32, types.float64) and out.mutable):
        return None

    def codegen(context, builder, sig, args):
        o = context.make_array(sig.args[0])(context, builder, args[0])
        c = context.make_array(sig.args[2])(context, builder, args[2])
        vty = ir.VectorType(context.get_value_type(sig.args[0].dtype), _GROUP)
        vec = ir.Constant(vty, ir.Undefined)
        for j in range(_GROUP):
            at = builder.add(args[3], builder.mul(args[4], ir.Constant(args[4].type, j)))
            vec = builder.insert_element(vec, builder.load(builder.gep(c.data, [at], inbounds=True)),
                                         ir.Constant(ir.IntType(32), j))
        ptr = builder.bitcast(builder.gep(o.data, [args[1]], inbounds=True), vty.as_pointer())
        store = builder.store(vec, ptr, align=64)
        store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return types.void(out, types.intp, cols, types.intp, types.intp), codegen


@intrinsic
def _fence(typingctx):
    """A full memory fence: the non-temporal stores before it are visible to every thread."""

    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@njit(nogil=True, cache=True, inline="always")
def _put(out, i, value, table):
    """``out[i] = value``, or ``table[value]`` (a dictionary); False if it is outside the table.
    Numba compiles the ``table is None`` branch away."""
    if table is None:
        out[i] = value
        return True
    v = np.int64(value)  # < 2**32: exact, and compared as an integer (uint64 against int64 goes via float)
    if v >= len(table):
        return False
    out[i] = table[v]
    return True


@njit(nogil=True, cache=True, inline="always")
def _unpack_groups(buf, p, width, out, i, groups, table):
    """``groups`` groups of 8 bit-packed values of ``width`` bits at ``p`` into ``out[i:]`` (via
    ``table``, see :func:`_put`), each value from one unaligned 64-bit load (the caller checks
    that the loads stay in ``buf``); False if a value is outside the table."""
    mask = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    for g in range(groups):
        base = p + g * width
        for t in range(8):
            bit = t * width
            if not _put(out, i + 8 * g + t, (load64(buf, base + (bit >> 3)) >> np.uint64(bit & 7)) & mask, table):
                return False
    return True


@njit(nogil=True, cache=True)
def _unpack(buf, p, run_bytes, width, out, i, take, table):
    """``take`` values of a bit-packed run (``run_bytes`` bytes at ``p``, ``width`` in 1..32 bits,
    LSB first) into ``out[i:i + take]`` (via ``table``, see :func:`_put`); False if a value is
    outside the table."""
    # whole groups whose last load (at byte (7 * width) >> 3 of the group, 8 bytes) is in buf;
    # bytes past the run are masked off
    groups = min(take // 8, max(0, (len(buf) - 8 - ((7 * width) >> 3) - p) // width + 1))
    if not _unpack_groups(buf, p, width, out, i, groups, table):
        return False
    mask = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    for k in range(8 * groups, take):  # the rest, byte by byte (a value spans at most 5 bytes)
        bit = k * width
        byte = p + (bit >> 3)
        word = np.uint64(0)
        for b in range(byte, min(byte + 5, p + run_bytes)):
            word |= np.uint64(buf[b]) << np.uint64(8 * (b - byte))
        if not _put(out, i + k, (word >> np.uint64(bit & 7)) & mask, table):
            return False
    return True


@njit(nogil=True, cache=True)
def _hybrid(buf, p, end, width, n, out, table):
    """Decode ``n`` values of the RLE/bit-packing hybrid at ``p`` (``width`` bits each, at most
    32) into ``out``, each value ``v`` as itself or, given a ``table`` (a dictionary), as
    ``table[v]``; returns ``(position after the last run read, ones)``, position -1 if malformed
    or a value is outside the table. Without ``out`` (None: definition levels, ``width`` 1)
    nothing is written and ``ones`` counts the levels that are 1 (so a page without nulls
    never needs its levels written out); otherwise ``ones`` is 0."""
    nbytes = (width + 7) // 8
    mask = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    ones = 0
    i = 0
    while i < n:
        header, p = varint(buf, p, end)
        if p < 0:
            return -1, 0
        count = np.int64(header >> np.uint64(1))
        if count <= 0:
            return -1, 0
        if header & np.uint64(1):  # bit-packed: count groups of 8 values, LSB first
            run_bytes = count * width
            if (width > 0 and count > end - p) or run_bytes > end - p:  # (count bounds the product)
                return -1, 0
            take = min(count * 8, n - i)
            if out is None:
                if width != 1:
                    return -1, 0
                ones += _ones(buf, p, take)
            elif width == 0:
                for k in range(take):
                    if not _put(out, i + k, np.uint64(0), table):
                        return -1, 0
            elif not _unpack(buf, p, run_bytes, width, out, i, take, table):
                return -1, 0
            p += run_bytes
            i += take
        else:  # a run: one value repeated count times
            if p + nbytes > end:
                return -1, 0
            value = np.uint64(0)
            for b in range(nbytes):
                value |= np.uint64(buf[p + b]) << np.uint64(8 * b)
            if value > mask:  # wider than the bit width (say a definition level of 2 in 1 bit)
                return -1, 0
            p += nbytes
            take = min(count, n - i)
            if out is None:
                ones += np.int64(value) * take
            else:
                if not _put(out, i, value, table):
                    return -1, 0
                if take <= 16 and i + 16 <= len(out):  # most runs: 16 stores, no loop to mispredict
                    for k in range(1, 16):  # past i + take: the next runs write those values again
                        out[i + k] = out[i]
                else:
                    out[i + 1:i + take].fill(out[i])
            i += take
    return p, ones


@njit(nogil=True, cache=True)
def _ones(buf, p, take):
    """How many of the first ``take`` bits at ``buf[p]`` (LSB first) are set."""
    ones = 0
    full = take // 8
    for b in range(full):
        ones += _POPCOUNT[buf[p + b]]
    if take % 8:
        ones += _POPCOUNT[buf[p + full] & ((1 << (take % 8)) - 1)]
    return ones


@njit(nogil=True, cache=True)
def _copy_values(values, out):
    """``out[:len(values)] = values`` (a loop: Numba compiles slice assignment far slower)."""
    for i in range(len(values)):
        out[i] = values[i]


@njit(nogil=True, cache=True)
def _spread(values, col, present):
    """``values`` into the rows of ``col`` where ``present``, in order."""
    if len(values) == len(col):  # no nulls
        _copy_values(values, col)
        return
    k = 0
    for r in range(len(col)):
        if present[r]:
            col[r] = values[k]
            k += 1


@njit(nogil=True, cache=True)
def _plain(buf, p, end, count, physical, col, present):
    """``count`` PLAIN values at ``p`` into the rows of ``col`` where ``present``; False if the
    page is too short."""
    if count * (4 if physical == FLOAT else 8) > end - p:
        return False
    if physical == FLOAT:
        _spread(buf[p:p + 4 * count].view(np.float32), col, present)
    else:
        _spread(buf[p:p + 8 * count].view(np.float64), col, present)
    return True


@njit(nogil=True, cache=True)
def _dictionary(buf, p, end, count, dictionary, col, present, spare):
    """``count`` dictionary indices (a bit-width byte, then the hybrid) at ``p``, looked up, into
    the rows of ``col`` where ``present`` (via ``spare`` when some are not); False if malformed
    or an index is outside the dictionary."""
    if count == 0:
        return True
    if p >= end or buf[p] > 32:
        return False
    if count == len(col):  # no nulls: straight into the column
        return _hybrid(buf, p + 1, end, buf[p], count, col, dictionary)[0] >= 0
    values = spare[:count]
    if _hybrid(buf, p + 1, end, buf[p], count, values, dictionary)[0] < 0:
        return False
    _spread(values, col, present)
    return True


@njit(nogil=True, cache=True)
def _levels(buf, p, end, mask):
    """How many of a page's ``len(mask)`` definition levels (width 1, at ``buf[p:end]``) are 1,
    or -1 if malformed; ``mask`` gets them only when some are 0 (a null)."""
    n = len(mask)
    q, ones = _hybrid(buf, p, end, 1, n, None, None)
    if q < 0:
        return -1
    if ones < n and _hybrid(buf, p, end, 1, n, mask, None)[0] < 0:
        return -1
    return ones


@njit(nogil=True, cache=True)
def _page(data, d, d_end, buf, levels, levels_end, h, physical, max_def, col, row, present, spare, dictionary,
          n_dict):
    """Decode one page's (decompressed) bytes ``data[d:d_end]`` whose header is ``h``: a
    dictionary page into ``dictionary`` (returns its size), a data page into ``col[row:]``
    (returns 0); a v2 page's levels are ``buf[levels:levels_end]``. Negative: why it gave up."""
    ptype, nvalues = h[TYPE], h[NVALUES]
    if ptype == DICTIONARY_PAGE:
        if physical == FLOAT:
            _copy_values(data[d:d + 4 * nvalues].view(np.float32), dictionary)
        else:
            _copy_values(data[d:d + 8 * nvalues].view(np.float64), dictionary)
        return nvalues
    # definition levels (max_def is 0 or 1: a flat column)
    mask = present[row:row + nvalues]
    count = nvalues
    if max_def == 1:
        if ptype == DATA_PAGE:
            if h[DEF_ENCODING] != _RLE:
                return UNSUPPORTED
            if d + 4 > d_end:
                return BAD_LEVELS
            length = (np.int64(data[d]) | (np.int64(data[d + 1]) << 8) | (np.int64(data[d + 2]) << 16)
                      | (np.int64(data[d + 3]) << 24))
            if length > d_end - d - 4:
                return BAD_LEVELS
            count = _levels(data, d + 4, d + 4 + length, mask)
            d += 4 + length
        else:
            count = _levels(buf, levels, levels_end, mask)
        if count < 0:
            return BAD_LEVELS
        if ptype == DATA_PAGE_V2 and nvalues - count != h[V2_NULLS]:  # the header disagrees
            return BAD_LEVELS
    else:
        if ptype == DATA_PAGE_V2 and (levels_end != levels or h[V2_NULLS] != 0):
            return BAD_LEVELS
        mask.fill(1)
    out = col[row:row + nvalues]
    if h[ENCODING] == _PLAIN:
        ok = _plain(data, d, d_end, count, physical, out, mask)
    else:
        ok = _dictionary(data, d, d_end, count, dictionary[:n_dict], out, mask, spare)
    if not ok:
        return BAD_PAGE
    if count < nvalues:
        for r in range(nvalues):
            if not mask[r]:
                out[r] = np.nan
    return 0


@njit(nogil=True, cache=True)
def _column(buf, start, end, physical, codec, max_def, col, present, spare, scratch, pages, dictionary):
    """Decode one column chunk ``buf[start:end]`` into ``col`` (one value per row; NaN for a
    null); returns :data:`OK` or why it gave up. Compressed pages are decompressed into
    ``scratch`` and read through ``pages``, its read-only view."""
    n = len(col)
    h = np.empty(N_FIELDS, np.int64)
    width = 4 if physical == FLOAT else 8
    n_dict = -1
    row = 0
    p = start
    while row < n:
        q = page_header(buf, p, end, h)
        if q < 0:
            return BAD_HEADER
        usize, csize, nvalues, ptype = h[USIZE], h[CSIZE], h[NVALUES], h[TYPE]
        if csize < 0 or csize > end - q or usize < 0 or nvalues < 0:
            return BAD_PAGE
        body, body_end = q, q + csize
        p = body_end
        if ptype == DICTIONARY_PAGE:
            if n_dict >= 0 or (h[ENCODING] != _PLAIN and h[ENCODING] != _PLAIN_DICTIONARY):
                return UNSUPPORTED
            if nvalues > len(dictionary) or usize != nvalues * width:  # at most one entry per row
                return BAD_PAGE
        elif ptype == DATA_PAGE or ptype == DATA_PAGE_V2:
            if nvalues > n - row:
                return BAD_COUNT
            if h[ENCODING] != _PLAIN and h[ENCODING] != _PLAIN_DICTIONARY and h[ENCODING] != _RLE_DICTIONARY:
                return UNSUPPORTED
            if h[ENCODING] != _PLAIN and n_dict < 0:
                return BAD_PAGE
        else:
            return UNSUPPORTED
        # levels: v1 has them inside the (compressed) body, v2 before it, uncompressed
        levels, levels_end = body, body
        if ptype == DATA_PAGE_V2:
            if h[V2_REP_LEN] != 0 or h[V2_DEF_LEN] < 0 or h[V2_DEF_LEN] > csize:
                return UNSUPPORTED if h[V2_REP_LEN] > 0 else BAD_PAGE
            levels_end = body + h[V2_DEF_LEN]
            body = levels_end
            usize -= h[V2_DEF_LEN]
            if usize < 0:
                return BAD_PAGE
        compressed = codec == SNAPPY and (ptype != DATA_PAGE_V2 or h[V2_COMPRESSED] != 0)
        if compressed:
            if usize > len(scratch) - 16:  # more than any valid page of this row group's rows holds
                return BAD_PAGE
            if not snappy_decompress(buf, body, body_end, scratch, usize):
                return BAD_SNAPPY
            status = _page(pages, 0, usize, buf, levels, levels_end, h, physical, max_def, col, row, present,
                           spare, dictionary, n_dict)
        else:
            if usize != body_end - body:
                return BAD_PAGE
            status = _page(buf, body, body_end, buf, levels, levels_end, h, physical, max_def, col, row, present,
                           spare, dictionary, n_dict)
        if status < 0:
            return status
        if ptype == DICTIONARY_PAGE:
            n_dict = status
        else:
            row += nvalues
    return OK


def decode_row_group(buf, starts, ends, physical, codecs, max_defs, out, lines):
    """Decode the column chunks ``buf[starts[j]:ends[j]]`` into ``out[:, j]`` (one row group of
    ``len(out)`` rows, float32 output only from ``FLOAT`` columns); returns ``(status, column)``:
    ``(OK, -1)``, or why it gave up and on which column.

    :data:`_GROUP` columns at a time are decoded into contiguous columns, then written into the
    rows together: a cache line per row instead of one per value. With ``lines`` (every row of
    ``out`` starts a cache line: see :func:`~._parquet_direct.line_aligned`), as non-temporal
    stores of whole lines, which the CPU need not read first (1.1 against 3.4 ms for a block of
    7,032 x 784 float32, measured).

    The buffers the pages are read from (``buf`` and the decompressed pages) are passed to the
    kernels as read-only arrays: one compiled version of each, where a writable and a read-only
    buffer would each need their own (this module's compile time is most of its cost on first
    use)."""
    scratch, cols, present, spare, dictionary = _workspace(len(out), min(_GROUP, out.shape[1]), out.dtype)
    return _decode_row_group(_read_only(buf), starts, ends, physical, codecs, max_defs, out, lines, scratch,
                             _read_only(scratch), cols, present, spare, dictionary)


#: Each thread keeps the work arrays of its last row group when they take at most this many bytes
#: (row groups up to ~100,000 rows of float32): allocating them afresh cost ~1,000 page faults a
#: row group of 7,032 x 784 float32 (~4 of 25 CPU-ms) in a Dask worker, whose
#: ``MALLOC_TRIM_THRESHOLD_`` hands freed memory back to the system at once.
_KEEP = 16 * 2**20
_local = threading.local()


def _workspace(n, group, dtype):
    """``(scratch, cols, present, spare, dictionary)`` for a row group of ``n`` rows decoded
    ``group`` columns at a time into ``dtype``: this thread's kept arrays if they are large
    enough, else new ones. None of them outlives a call of :func:`_decode_row_group`."""
    # a valid page of at most n values: 8 bytes a value, levels at most 2 bytes a value (runs of
    # one), the 4-byte level length and run headers; Snappy writes up to 16 bytes past the end
    need = {"scratch": 18 * n + 128, "values": group * n + 2 * n, "present": n}
    kept = getattr(_local, "arrays", None)
    if kept is None or kept[0] != dtype or any(len(kept[1][k]) < v for k, v in need.items()):
        arrays = {k: np.empty(v, np.uint8 if k != "values" else dtype) for k, v in need.items()}
        kept = (dtype, arrays)
        if sum(a.nbytes for a in arrays.values()) <= _KEEP:
            _local.arrays = kept
    a = kept[1]
    values = a["values"]
    return (a["scratch"][:need["scratch"]], values[:group * n].reshape(group, n), a["present"][:n],
            values[group * n:group * n + n], values[group * n + n:group * n + 2 * n])


def _read_only(a):
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


@njit(nogil=True, cache=True)
def _decode_row_group(buf, starts, ends, physical, codecs, max_defs, out, lines, scratch, pages, cols, present,
                      spare, dictionary):
    """:func:`decode_row_group`, given ``scratch`` for decompressed pages and ``pages``, a
    read-only view of it, ``cols`` for ``len(cols)`` decoded columns, and ``present``, ``spare``
    and ``dictionary`` for a column's definition levels, values and dictionary (one per row)."""
    group = _GROUP
    n, m = out.shape
    for a in range(0, m, group):
        k = min(group, m - a)
        for j in range(k):
            if codecs[a + j] != UNCOMPRESSED and codecs[a + j] != SNAPPY:
                return UNSUPPORTED, a + j
            if (physical[a + j] != FLOAT and physical[a + j] != DOUBLE) or max_defs[a + j] > 1:
                return UNSUPPORTED, a + j
            if physical[a + j] == DOUBLE and out.itemsize == 4:  # float32 rows hold FLOAT columns only
                return UNSUPPORTED, a + j
            if starts[a + j] < 0 or ends[a + j] > len(buf) or starts[a + j] > ends[a + j]:
                return BAD_PAGE, a + j
            status = _column(buf, starts[a + j], ends[a + j], physical[a + j], codecs[a + j], max_defs[a + j],
                             cols[j], present, spare, scratch, pages, dictionary)
            if status != OK:
                return status, a + j
        flat_out, flat_cols = out.reshape(-1), cols.reshape(-1)  # flat: no index wrap-around per value
        if lines and k == group:
            for r in range(n):
                _store_row_nt(flat_out, r * m + a, flat_cols, r, n)
        else:
            for r in range(n):
                base = r * m + a
                for j in range(k):
                    flat_out[base + j] = flat_cols[j * n + r]
    _fence()
    return OK, -1
