"""64-bit content digests of blocks (stored features, input rows) for done records.

An xxHash64-style hash (four independent multiply-rotate lanes, so it runs at memory speed,
~1 ms for 16 MiB) over the raw bytes of C-ordered arrays. It is not cryptographic: it tells a
damaged, missing or swapped block, or a changed input block, from the one that was recorded.
Its definition is part of the store format: changing it needs a new STORE_FORMAT.
"""

import numba
import numpy as np

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)


@numba.njit(nogil=True, cache=True)
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@numba.njit(nogil=True, cache=True)
def _round(acc, w):
    return _rotl(acc + w * _P2, 31) * _P1


@numba.njit(nogil=True, cache=True)
def _hash(words, tail, seed):
    a0 = seed + _P1 + _P2
    a1 = seed + _P2
    a2 = seed
    a3 = seed - _P1
    n = words.shape[0]
    n4 = n - n % 4
    for k in range(0, n4, 4):
        a0 = _round(a0, words[k])
        a1 = _round(a1, words[k + 1])
        a2 = _round(a2, words[k + 2])
        a3 = _round(a3, words[k + 3])
    h = _rotl(a0, 1) + _rotl(a1, 7) + _rotl(a2, 12) + _rotl(a3, 18)
    for k in range(n4, n):
        h = _rotl(h ^ _round(np.uint64(0), words[k]), 27) * _P1 + _P4
    for k in range(tail.shape[0]):
        h = _rotl(h ^ (np.uint64(tail[k]) * _P1), 11) * _P2
    h ^= np.uint64(n * 8 + tail.shape[0])
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


def digest(*arrays):
    """64-bit digest (a Python int) of the bytes of the given arrays, in order; None is skipped.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.arange(10, dtype=np.uint8)
    >>> digest(a) == digest(a.copy()) != digest(a[::-1].copy())
    True
    """
    h = np.uint64(0)
    for a in arrays:
        if a is None:
            continue
        b = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        n8 = b.shape[0] // 8 * 8
        h = np.uint64(_hash(b[:n8].view(np.uint64), b[n8:], np.uint64(h)))
    return int(h)


def csr_digest(X):
    """Digest of a CSR matrix's rows (shape, indptr relative to its first row, indices, data)."""
    indptr = np.asarray(X.indptr, dtype=np.int64)
    lo, hi = int(indptr[0]), int(indptr[-1])
    return digest(np.asarray(X.shape, dtype=np.int64), indptr - lo, np.asarray(X.indices[lo:hi], dtype=np.int64),
                  X.data[lo:hi])
