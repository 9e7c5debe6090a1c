"""The ``PageHeader`` of a Parquet page, parsed in Numba from its Thrift compact-protocol bytes
(Apache Parquet's ``parquet.thrift``): the fields :mod:`._parquet_pages` decodes a page by, into
slots of an int64 array. Fields it does not need are skipped as Thrift's generated readers skip
them; anything malformed (a position past the end, a struct nested deeper than any page header,
a required field missing) makes it return -1, never read outside the buffer."""

import numpy as np
from numba import njit

from ._bytes import varint

#: page header fields, as :func:`page_header` fills them (index into its int64 array)
(TYPE, USIZE, CSIZE, NVALUES, ENCODING, DEF_ENCODING, REP_ENCODING, V2_NULLS, V2_ROWS, V2_DEF_LEN,
 V2_REP_LEN, V2_COMPRESSED, SUBHEADER) = range(13)
N_FIELDS = 13
ABSENT = -(1 << 62)  # a slot no field filled (every field is an i32 or a boolean)
#: page types (parquet.thrift PageType) this decoder reads
DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3
_STRUCT, _LIST, _MAP, _ONE_BYTE = 12, 9, 11, 100  # _skip's stack entries; a boolean element
_MAX_DEPTH = 16  # Thrift structs nested deeper than any page header field: a damaged header


@njit(nogil=True, cache=True)
def _zigzag(buf, p, end):
    """``(signed value, next position)`` of a Thrift compact integer (zigzag ULEB128)."""
    u, p = varint(buf, p, end)
    return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1)), p


@njit(nogil=True, cache=True)
def _skip(buf, p, end, ttype):
    """Position after a Thrift compact value of type ``ttype`` at ``p`` (-1 if malformed).

    Iterative, with a stack of the containers it is inside (Numba's cached code cannot recurse):
    a struct reads field headers up to its stop byte, a list or a map counts down its elements
    (their booleans take a byte, :data:`_ONE_BYTE`, unlike a boolean field's)."""
    kinds = np.empty(_MAX_DEPTH, np.int64)  # _STRUCT, _LIST or _MAP
    left = np.empty(_MAX_DEPTH, np.int64)  # elements still to skip (a map's keys and values)
    elements = np.empty((_MAX_DEPTH, 2), np.int64)  # a list's element type; a map's value, key types
    depth = 0
    t = np.int64(ttype)
    while True:
        if p < 0 or p > end:
            return -1
        if t == 1 or t == 2:  # a boolean field: the value is in the type
            pass
        elif t == 3 or t == _ONE_BYTE:
            p += 1
        elif t == 4 or t == 5 or t == 6:  # i16, i32, i64
            _, p = varint(buf, p, end)
        elif t == 7:  # double
            p += 8
        elif t == 8:  # binary: length, bytes
            n, p = varint(buf, p, end)
            if p < 0 or n > np.uint64(end - p):
                return -1
            p += np.int64(n)
        elif t == 9 or t == 10 or t == 11 or t == 12:  # list, set, map, struct
            if depth == _MAX_DEPTH:
                return -1
            if t == 12:
                kinds[depth] = _STRUCT
            elif t == 11:  # size, then key and value types in a byte (absent when empty)
                n, p = varint(buf, p, end)
                if p < 0 or n > np.uint64(end - p):
                    return -1
                kinds[depth], left[depth] = _MAP, 2 * np.int64(n)
                if n > 0:
                    if p >= end:
                        return -1
                    elements[depth, 1], elements[depth, 0] = buf[p] >> 4, buf[p] & 0x0F
                    p += 1
            else:  # size and element type in a byte, the size in a varint if it is 15
                if p >= end:
                    return -1
                b = buf[p]
                p += 1
                n = np.uint64(b >> 4)
                if n == 15:
                    n, p = varint(buf, p, end)
                    if p < 0 or n > np.uint64(end - p):
                        return -1
                kinds[depth], left[depth], elements[depth, 0] = _LIST, np.int64(n), b & 0x0F
            depth += 1
        else:
            return -1
        if p < 0 or p > end:
            return -1
        # the next value: the innermost container's next field or element
        while True:
            if depth == 0:
                return p
            k = depth - 1
            if kinds[k] == _STRUCT:
                if p >= end:
                    return -1
                b = buf[p]
                p += 1
                if b == 0:
                    depth -= 1
                    continue
                if b >> 4 == 0:  # a long-form field id follows
                    _, p = _zigzag(buf, p, end)
                t = np.int64(b & 0x0F)
                break
            if left[k] == 0:
                depth -= 1
                continue
            left[k] -= 1
            t = elements[k, left[k] % 2] if kinds[k] == _MAP else elements[k, 0]
            if t == 1 or t == 2:
                t = _ONE_BYTE
            break


@njit(nogil=True, cache=True)
def _field(buf, p, end, last):
    """``(position after it, field id, type)`` of the field header at ``p`` in a Thrift struct
    whose previous field was ``last``; the id is 0 at the struct's stop byte, the position -1 if
    malformed."""
    if p < 0 or p >= end:
        return -1, 0, 0
    b = buf[p]
    p += 1
    if b == 0:
        return p, 0, 0
    if b >> 4 == 0:  # a long-form field id follows
        fid, p = _zigzag(buf, p, end)
        return p, fid, b & 0x0F
    return p, last + (b >> 4), b & 0x0F


@njit(nogil=True, cache=True)
def _value(buf, p, end, t, h, slot):
    """Read the field value of type ``t`` at ``p`` into ``h[slot]`` when ``slot >= 0`` and ``t`` is
    the slot's type (a boolean for :data:`V2_COMPRESSED`, else an i32 in its range), else skip
    it, as Thrift's generated readers do with a field of an unexpected type; returns the
    position after it (-1 if malformed)."""
    if slot == V2_COMPRESSED and (t == 1 or t == 2):  # a boolean field: the value is in the type
        h[slot] = 1 if t == 1 else 0
        return p
    if slot >= 0 and slot != V2_COMPRESSED and t == 5:
        value, p = _zigzag(buf, p, end)
        if value < -(1 << 31) or value >= 1 << 31:
            return -1
        h[slot] = value
        return p
    return _skip(buf, p, end, t)


@njit(nogil=True, cache=True)
def _struct_fields(buf, p, end, h, kind):
    """Read the fields of the page header's struct ``kind`` (field 5, 7 or 8 of ``PageHeader``) at
    ``p`` into their :func:`page_header` slots (other fields skipped); returns the position
    after it, or -1."""
    fid = 0
    while True:
        p, fid, t = _field(buf, p, end, fid)
        if p < 0 or fid == 0:
            return p
        slot = -1
        if kind == 5:  # DataPageHeader
            slot = (NVALUES if fid == 1 else ENCODING if fid == 2 else DEF_ENCODING if fid == 3 else
                    REP_ENCODING if fid == 4 else -1)
        elif kind == 7:  # DictionaryPageHeader
            slot = NVALUES if fid == 1 else ENCODING if fid == 2 else -1
        else:  # DataPageHeaderV2
            slot = (NVALUES if fid == 1 else V2_NULLS if fid == 2 else V2_ROWS if fid == 3 else
                    ENCODING if fid == 4 else V2_DEF_LEN if fid == 5 else V2_REP_LEN if fid == 6 else
                    V2_COMPRESSED if fid == 7 else -1)
        p = _value(buf, p, end, t, h, slot)


@njit(nogil=True, cache=True)
def page_header(buf, p, end, h):
    """Parse the ``PageHeader`` at ``p`` into ``h`` (see the :data:`TYPE`... slots); returns the
    position of the page's bytes, or -1 if it is malformed or lacks a field parquet.thrift
    requires (a page of type DATA_PAGE, DICTIONARY_PAGE or DATA_PAGE_V2 needs that header and
    only that one, with its required fields, and non-negative counts)."""
    for f in range(N_FIELDS):
        h[f] = ABSENT
    h[V2_COMPRESSED] = 1  # parquet.thrift's default
    h[SUBHEADER] = 0  # which of the fields 5, 7, 8 (bits 5, 7, 8) were read
    fid = 0
    while True:
        p, fid, t = _field(buf, p, end, fid)
        if p < 0:
            return -1
        if fid == 0:
            break
        if (fid == 5 or fid == 7 or fid == 8) and t == 12:
            h[SUBHEADER] |= 1 << fid
            p = _struct_fields(buf, p, end, h, fid)
        else:  # type, uncompressed_page_size, compressed_page_size: slots 0, 1, 2
            p = _value(buf, p, end, t, h, fid - 1 if 1 <= fid <= 3 else -1)
    if h[TYPE] == ABSENT or h[USIZE] == ABSENT or h[CSIZE] == ABSENT:
        return -1
    if h[TYPE] == DATA_PAGE:
        need = (NVALUES, ENCODING, DEF_ENCODING, REP_ENCODING)
        sub = 5
    elif h[TYPE] == DICTIONARY_PAGE:
        need = (NVALUES, ENCODING, NVALUES, ENCODING)  # two fields, repeated: one tuple type
        sub = 7
    elif h[TYPE] == DATA_PAGE_V2:
        need = (NVALUES, ENCODING, V2_DEF_LEN, V2_REP_LEN)
        sub = 8
        if h[V2_NULLS] < 0 or h[V2_ROWS] < 0 or h[V2_NULLS] > h[NVALUES] or h[V2_ROWS] != h[NVALUES]:
            return -1  # (absent is negative too)
    else:
        return p  # a page type this decoder does not read: the caller gives up
    if h[SUBHEADER] != 1 << sub:
        return -1
    for f in need:
        if h[f] == ABSENT:
            return -1
    return p
