"""Crafted Parquet files: a file pyarrow writes, patched in place through a small Thrift
compact-protocol reader and writer (the footer's ``FileMetaData`` and the pages' ``PageHeader``,
as Apache Parquet's ``parquet.thrift`` defines them).

A struct is a list of :class:`Field` (id, compact type, value); writing it back gives the same
bytes, so a patch changes exactly the fields it sets. :func:`splice` replaces bytes in the data
region and moves every offset of the footer that lies after them, so page headers and page bodies
can grow or shrink.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

BOOL_TRUE, BOOL_FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)


@dataclass
class Field:
    fid: int
    type: int
    value: object  # bool, int, bytes, list of Field (a struct), or (element type, [values]) (a list)
    long: bool = False  # written with a long-form field id (type byte, then the id)


def _varint(b, p):
    v = s = 0
    while True:
        x = b[p]
        p += 1
        v |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return v, p


def _zigzag(u):
    return (u >> 1) ^ -(u & 1)


def _uvarint(v):
    out = bytearray()
    while True:
        x = v & 0x7F
        v >>= 7
        if v:
            out.append(x | 0x80)
        else:
            out.append(x)
            return bytes(out)


def _svarint(v):
    return _uvarint((v << 1) ^ (v >> 63) if v < 0 else v << 1)


def _read_value(b, p, t):
    if t in (BOOL_TRUE, BOOL_FALSE):  # an element of a list: one byte
        return b[p] == 1, p + 1
    if t == BYTE:
        return b[p], p + 1
    if t in (I16, I32, I64):
        u, p = _varint(b, p)
        return _zigzag(u), p
    if t == DOUBLE:
        return bytes(b[p:p + 8]), p + 8
    if t == BINARY:
        n, p = _varint(b, p)
        return bytes(b[p:p + n]), p + n
    if t in (LIST, SET):
        head = b[p]
        p += 1
        n, et = head >> 4, head & 0x0F
        if n == 15:
            n, p = _varint(b, p)
        items = []
        for _ in range(n):
            v, p = _read_value(b, p, et)
            items.append(v)
        return (et, items), p
    if t == STRUCT:
        return read_struct(b, p)
    raise ValueError(f"compact type {t} not expected in a Parquet footer or page header")


def read_struct(b, p):
    """``(fields, end)`` of the Thrift compact struct at ``p``."""
    out, last = [], 0
    while True:
        x = b[p]
        p += 1
        if x == 0:
            return out, p
        t = x & 0x0F
        if x >> 4:
            fid, long = last + (x >> 4), False
        else:
            u, p = _varint(b, p)
            fid, long = _zigzag(u), True
        last = fid
        if t in (BOOL_TRUE, BOOL_FALSE):
            out.append(Field(fid, t, t == BOOL_TRUE, long))
        else:
            v, p = _read_value(b, p, t)
            out.append(Field(fid, t, v, long))


def _write_value(t, v):
    if t in (BOOL_TRUE, BOOL_FALSE):
        return bytes([1 if v else 2])
    if t == BYTE:
        return bytes([v])
    if t in (I16, I32, I64):
        return _svarint(v)
    if t == DOUBLE:
        return v
    if t == BINARY:
        return _uvarint(len(v)) + v
    if t in (LIST, SET):
        et, items = v
        head = bytes([len(items) << 4 | et]) if len(items) < 15 else bytes([0xF0 | et]) + _uvarint(len(items))
        return head + b"".join(_write_value(et, i) for i in items)
    if t == STRUCT:
        return write_struct(v)
    raise ValueError(t)


def write_struct(fields):
    out, last = bytearray(), 0
    for f in fields:
        t = (BOOL_TRUE if f.value else BOOL_FALSE) if f.type in (BOOL_TRUE, BOOL_FALSE) else f.type
        if not f.long and 0 < f.fid - last <= 15:
            out.append((f.fid - last) << 4 | t)
        else:
            out.append(t)
            out += _svarint(f.fid)
        last = f.fid
        if t not in (BOOL_TRUE, BOOL_FALSE):
            out += _write_value(t, f.value)
    out.append(0)
    return bytes(out)


def field(fields, fid):
    """The field ``fid`` of a struct (the first, if several have that id)."""
    return next(f for f in fields if f.fid == fid)


# -- Parquet ------------------------------------------------------------------------------------------
def footer(raw):
    """``(start, FileMetaData fields)`` of a Parquet file's bytes."""
    n = int.from_bytes(raw[-8:-4], "little")
    start = len(raw) - 8 - n
    fields, end = read_struct(raw, start)
    assert end == start + n and write_struct(fields) == bytes(raw[start:end]), "footer does not round-trip"
    return start, fields


def with_footer(raw, fields):
    """The file's bytes with its footer replaced by ``fields``."""
    start, _ = footer(raw)
    body = write_struct(fields)
    return bytes(raw[:start]) + body + len(body).to_bytes(4, "little") + b"PAR1"


def row_groups(meta):
    return field(meta, 4).value[1]


def chunk_meta(meta, group, column):
    """``ColumnMetaData`` fields of a column chunk."""
    return field(field(row_groups(meta)[group], 1).value[1][column], 3).value


def schema_elements(meta):
    return field(meta, 2).value[1]


def page_headers(raw, group=0, column=0):
    """``[(header start, header fields, body start, body end)]`` of a column chunk's pages."""
    _, meta = footer(raw)
    cm = chunk_meta(meta, group, column)
    start = field(cm, 9).value
    dict_off = [f.value for f in cm if f.fid == 11]
    if dict_off and 0 < dict_off[0] < start:
        start = dict_off[0]
    end = start + field(cm, 7).value
    out, p = [], start
    while p < end:
        h, q = read_struct(raw, p)
        out.append((p, h, q, q + field(h, 3).value))
        p = q + field(h, 3).value
    assert p == end
    return out


_OFFSETS_CHUNK = (2, 4, 6)  # ColumnChunk: file_offset, offset_index_offset, column_index_offset
_OFFSETS_META = (9, 10, 11, 14)  # ColumnMetaData: data, index, dictionary page and bloom filter offsets


def splice(raw, at, old_len, new):
    """The file with ``raw[at:at + old_len]`` (inside a column chunk) replaced by ``new``: every
    footer offset past ``at`` moves, and the chunk and row group holding ``at`` change size."""
    delta = len(new) - old_len
    start, meta = footer(raw)
    assert at < start
    for rg in row_groups(meta):
        grew = False
        for cc in field(rg, 1).value[1]:
            cm = field(cc, 3).value
            first = field(cm, 9).value
            dict_off = [f.value for f in cm if f.fid == 11]
            if dict_off and 0 < dict_off[0] < first:
                first = dict_off[0]
            if first <= at < first + field(cm, 7).value:
                field(cm, 7).value += delta
                field(cm, 6).value += delta
                grew = True
            for fields, ids in ((cc, _OFFSETS_CHUNK), (cm, _OFFSETS_META)):
                for f in fields:
                    if f.fid in ids and f.value > at:
                        f.value += delta
        for f in rg:
            if f.fid == 5 and f.value > at:
                f.value += delta
            if f.fid == 6 and grew:
                f.value += delta
    out = bytes(raw[:at]) + new + bytes(raw[at + old_len:])
    return with_footer(out, meta)


def set_header(raw, header_start, fields):
    """The file with the page header at ``header_start`` rewritten as ``fields``."""
    _, end = read_struct(raw, header_start)
    return splice(raw, header_start, end - header_start, write_struct(fields))


def set_body(raw, header_start, body):
    """The file with the body of the page at ``header_start`` replaced by ``body`` (its header's
    compressed size follows; the uncompressed size is left as it is)."""
    h, q = read_struct(raw, header_start)
    old = field(h, 3).value
    field(h, 3).value = len(body)
    raw = splice(raw, q, old, body)
    return set_header(raw, header_start, h)


def write(path, raw):
    Path(path).write_bytes(raw)
    return str(path)


def double(x):
    return struct.pack("<d", x)
