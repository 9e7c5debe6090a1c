"""Snappy decompression in Numba (the raw block format of Google's Snappy, as Parquet pages use
it): a varint preamble with the uncompressed size, then literals and back-references ("copies")
of 1, 2 or 4 offset bytes. Used by :mod:`._parquet_pages`; every read and write is checked
against the buffers' lengths, so a damaged block is refused, never followed outside them."""

import numpy as np
from numba import njit

from ._bytes import load64, store64, varint


@njit(nogil=True, cache=True, inline="always")
def _copy16(src, p, dst, q):
    """``dst[q:q + 16] = src[p:p + 16]`` as two 8-byte loads and stores (the caller checks both
    ranges; with ``src is dst``, ``p + 8 <= q``: the first 8 bytes are final before the second
    load reads them)."""
    store64(dst, q, load64(src, p))
    store64(dst, q + 8, load64(src, p + 8))


@njit(nogil=True, cache=True, inline="always")
def _copy(src, p, dst, q, length):
    """``dst[q:q + length] = src[p:p + length]`` 8 bytes at a time (it may write up to 15 bytes
    past ``q + length``: ``dst`` has room); the tail byte by byte where ``src`` ends sooner. With
    ``src is dst`` the ranges must be at least 8 bytes apart (``p + 8 <= q``): each 8 bytes read
    are then final before they are read."""
    if length <= 16 and p + 16 <= len(src):  # most Snappy elements: two loads, two stores
        _copy16(src, p, dst, q)
        return
    i = 0
    while i < length and p + i + 8 <= len(src):
        store64(dst, q + i, load64(src, p + i))
        i += 8
    while i < length:
        dst[q + i] = src[p + i]
        i += 1


@njit(nogil=True, cache=True)
def decompress(src, p, end, dst, size):
    """Decompress the Snappy block ``src[p:end]`` into ``dst[:size]`` (``dst`` has 16 bytes more,
    which it may overwrite); False if malformed or if it does not hold exactly ``size`` bytes."""
    n, p = varint(src, p, end)
    if p < 0 or n != np.uint64(size) or len(dst) < size + 16:
        return False
    q = 0
    fast_end = min(end, len(src) - 16) - 5  # below it a tag's 4 offset bytes and a 16-byte load fit
    while p < end:
        tag = np.int64(src[p])
        if p < fast_end:  # the common element, at most 16 bytes, with fewer tests and branches
            if (tag & 3) == 0:  # a literal
                length = (tag >> 2) + 1
                if length <= 16 and length <= size - q and p + 1 + length <= end:
                    _copy16(src, p + 1, dst, q)
                    p += 1 + length
                    q += length
                    continue
            else:  # a copy: its length, offset and header from the 4 bytes after the tag
                word = np.int64(load64(src, p + 1) & np.uint64(0xFFFFFFFF))
                if (tag & 3) == 1:
                    length, offset, header = ((tag >> 2) & 7) + 4, ((tag >> 5) << 8) | (word & 0xFF), 2
                elif (tag & 3) == 2:
                    length, offset, header = (tag >> 2) + 1, word & 0xFFFF, 3
                else:
                    length, offset, header = (tag >> 2) + 1, word, 5
                if length <= 16 and 8 <= offset <= q and length <= size - q and p + header <= end:
                    _copy16(dst, q - offset, dst, q)
                    p += header
                    q += length
                    continue
        p += 1
        kind = tag & 3
        if kind == 0:  # literal
            length = np.int64(tag >> 2) + 1
            if length > 60:  # its length - 1 in the next length - 60 bytes
                extra = length - 60
                if p + extra > end:
                    return False
                length = 0
                for i in range(extra):
                    length |= np.int64(src[p + i]) << (8 * i)
                length += 1
                p += extra
            if length > end - p or length > size - q:
                return False
            _copy(src, p, dst, q, length)
            p += length
            q += length
            continue
        if kind == 1:  # copy, 11-bit offset
            if p >= end:
                return False
            length = np.int64((tag >> 2) & 7) + 4
            offset = (np.int64(tag >> 5) << 8) | np.int64(src[p])
            p += 1
        elif kind == 2:  # copy, 16-bit offset
            if p + 2 > end:
                return False
            length = np.int64(tag >> 2) + 1
            offset = np.int64(src[p]) | (np.int64(src[p + 1]) << 8)
            p += 2
        else:  # copy, 32-bit offset
            if p + 4 > end:
                return False
            length = np.int64(tag >> 2) + 1
            offset = 0
            for i in range(4):
                offset |= np.int64(src[p + i]) << (8 * i)
            p += 4
        if offset <= 0 or offset > q or length > size - q:
            return False
        if offset >= 8:
            _copy(dst, q - offset, dst, q, length)
        else:  # overlapping: the run repeats, byte by byte
            for i in range(length):
                dst[q + i] = dst[q - offset + i]
        q += length
    return q == size
