"""Large byte buffers that go back to a small pool when the last array made from them is gone.

A Dask worker process runs with ``MALLOC_TRIM_THRESHOLD_=65536`` (distributed's default, so that
freed memory goes back to the system at once). Setting it also switches off glibc's growing
threshold for serving big allocations from its heap, so every allocation of more than 128 KiB
is a fresh mapping: the kernel zeroes it page by page on first touch, and unmaps it when it is
freed. For :func:`~dask_kernels.io.read_parquet`'s direct decoder, which allocates a row group's
bytes (9 MB on the benchmark's file) and its rows (22 MB) per task, that was ~3 of its ~25
CPU-ms a block in a worker, against none in a plain process, where malloc reuses the memory.

:func:`empty` hands out such a buffer as a NumPy array whose ``base`` is a small owner object;
NumPy keeps the owner alive while any array made from it (a view, a reshape, a slice) lives, and
when the last one goes the owner puts the buffer back. Nothing is ever shared with a live array,
and a buffer's old bytes are never read: like ``np.empty``, the caller writes what it returns.
"""

from __future__ import annotations

import collections

import numpy as np

#: Buffers kept at most (two threads' row group and rows), and bytes kept at most; the size range
#: worth keeping: below it malloc's own reuse is as good, above it one buffer would hold too much.
MAX_KEPT, MAX_KEPT_BYTES, MIN_BYTES, MAX_BYTES = 4, 128 << 20, 1 << 20, 64 << 20

_kept: collections.deque = collections.deque()  # appends and pops are atomic: any thread may free


class _Owner:
    """The base of the arrays :func:`empty` returns: it holds the buffer and, once nothing uses
    it any more, returns it to the pool (evicting the oldest kept buffer if the pool is full)."""

    def __init__(self, buffer, start, nbytes):
        self.buffer = buffer
        self.__array_interface__ = {"data": (buffer.ctypes.data + start, False), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}

    def __del__(self):
        try:
            _kept.append(self.buffer)
            while len(_kept) > MAX_KEPT or sum(len(b) for b in list(_kept)) > MAX_KEPT_BYTES:
                _kept.popleft()
        except Exception:  # at interpreter exit the module may be half torn down: nothing to keep
            pass


def _take(nbytes):
    """A kept buffer of ``nbytes`` to ``nbytes * 1.25`` bytes, or None."""
    for _ in range(len(_kept)):
        try:
            buffer = _kept.pop()
        except IndexError:
            return None
        if nbytes <= len(buffer) <= nbytes + nbytes // 4:
            return buffer
        _kept.appendleft(buffer)
    return None


def empty(nbytes: int, align: int = 64) -> np.ndarray:
    """An uninitialized uint8 array of ``nbytes`` bytes starting on a multiple of ``align``,
    from the pool when it has a buffer of about that size.

    Examples
    --------
    >>> a = empty(3 << 20)
    >>> a.dtype, a.shape, a.ctypes.data % 64
    (dtype('uint8'), (3145728,), 0)
    >>> address = a.ctypes.data
    >>> del a  # the buffer goes back to the pool ...
    >>> empty(3 << 20).ctypes.data == address  # ... and is handed out again
    True
    """
    if not MIN_BYTES <= nbytes <= MAX_BYTES:
        buffer = np.empty(nbytes + align, np.uint8)
        start = -buffer.ctypes.data % align
        return buffer[start:start + nbytes]
    buffer = _take(nbytes + align)
    if buffer is None:
        buffer = np.empty(nbytes + align, np.uint8)
    return np.asarray(_Owner(buffer, -buffer.ctypes.data % align, nbytes))
