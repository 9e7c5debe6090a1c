"""The svmlight reader is linear in the file size whatever the line lengths and blocksize.

Before the fix every byte range that started inside a long line read "the rest of the line" to
find where its own rows begin: a line of L bytes cut into L / blocksize ranges read
O(L**2 / blocksize) bytes, minutes for a few MB with a small blocksize.
"""

import threading
import time

import dask
import fsspec
import numpy as np
from fsspec.implementations.local import LocalFileSystem

from dask_kernels.io import read_svmlight

MIB = 2**20
BLOCKSIZE = 8 * 2**10   # small partitions: a 4 MiB line spans ~500 of them


class _Counting:
    """A file object that counts the bytes read through it."""

    def __init__(self, f, fs):
        self._f, self._fs = f, fs

    def read(self, n=-1):
        b = self._f.read(n)
        self._fs.add(len(b))
        return b

    def readline(self, n=-1):
        b = self._f.readline(n)
        self._fs.add(len(b))
        return b

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


class CountingFS(LocalFileSystem):
    """Local files under the ``dkcount://`` protocol, counting every byte read."""

    protocol = "dkcount"
    bytes_read = 0
    _lock = threading.Lock()

    @classmethod
    def _strip_protocol(cls, path):
        path = str(path)
        return super()._strip_protocol(path[len("dkcount://"):] if path.startswith("dkcount://") else path)

    @classmethod
    def add(cls, n):
        with cls._lock:
            cls.bytes_read += n

    def _open(self, path, mode="rb", **kwargs):
        return _Counting(super()._open(path, mode, **kwargs), type(self))


fsspec.register_implementation("dkcount", CountingFS, clobber=True)


def _pairs(n):
    return " ".join(f"{j}:0.5" for j in range(1, n + 1))


def _long_line_file(path, nbytes):
    """One row of ~nbytes between two short rows; returns the number of features."""
    width = nbytes // len("12345:0.5 ")
    with open(path, "w") as f:
        f.write(f"0 {_pairs(3)}\n1 {_pairs(width)}\n0 {_pairs(3)}\n")
    return width


def _short_lines_file(path, nbytes, width):
    """About nbytes of 20-pair rows (same dimension as the long file)."""
    rng = np.random.default_rng(0)
    cols = np.sort(rng.integers(1, width + 1, size=(nbytes // 200 + 1, 20)), axis=1)
    text, size = [], 0
    for r in cols:
        row = "1 " + " ".join(f"{c}:0.5" for c in np.unique(r)) + "\n"
        text.append(row)
        size += len(row)
        if size >= nbytes:
            break
    with open(path, "w") as f:
        f.write("".join(text))


def _read(path, n_features):
    CountingFS.bytes_read = 0
    t = time.perf_counter()
    with dask.config.set(scheduler="sync"):  # one thread: no contention noise in the ratio
        X, y, _ = read_svmlight(f"dkcount://{path}", n_features=n_features, blocksize=BLOCKSIZE).compute()
    return time.perf_counter() - t, CountingFS.bytes_read, X, y


def test_multi_megabyte_line_reads_in_linear_time(tmp_path):
    long_path, short_path = tmp_path / "long.svm", tmp_path / "short.svm"
    width = _long_line_file(long_path, 4 * MIB)
    size = long_path.stat().st_size
    _short_lines_file(short_path, size, width)
    _read(short_path, width)  # warm up (Numba cache, imports)
    t_short, read_short, Xs, _ = _read(short_path, width)
    t_long, read_long, X, y = _read(long_path, width)
    # the long row is parsed whole, once, and its neighbours are intact
    assert X.shape == (3, width) and y.tolist() == [0.0, 1.0, 0.0]
    assert X.getrow(1).nnz == width and X.getrow(0).nnz == X.getrow(2).nnz == 3
    assert Xs.shape[1] == width
    # two passes (count, parse), each reading about every byte up to twice: linear in the size
    assert read_long <= 6 * size + 4 * MIB, (read_long, size)
    assert read_short <= 6 * size + 4 * MIB, (read_short, size)
    # same bytes, same number of ranges: linear means the same order of time
    assert t_long < 5 * t_short + 1.0, (t_long, t_short)
    assert t_long < 30.0, t_long
