"""dask_kernels.io._snappy (the Parquet decoder's Snappy) against the bytes a stream means and
against pyarrow's decompressor: every element kind, overlapping copies, long literals, streams
that end where readable memory ends, and malformed streams."""

import subprocess
import sys

import numpy as np
import pyarrow as pa

from dask_kernels.io import _snappy


def _snappy_stream(size, elements):
    """A Snappy block of ``size`` bytes from ``elements``: ``("literal", bytes)`` or
    ``("copy", kind, offset, length)`` (kind 1, 2 or 4: the tag's offset bytes)."""
    out = bytearray()
    n = size
    while True:  # the preamble: the uncompressed size as a varint
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    for e in elements:
        if e[0] == "literal":
            k = len(e[1]) - 1
            if k < 60:
                out.append(k << 2)
            else:
                nb = (k.bit_length() + 7) // 8
                out += bytes([(59 + nb) << 2]) + k.to_bytes(nb, "little")
            out += e[1]
        else:
            _, kind, offset, length = e
            if kind == 1:
                out += bytes([1 | ((length - 4) << 2) | ((offset >> 8) << 5), offset & 0xFF])
            else:
                out += bytes([(2 if kind == 2 else 3) | ((length - 1) << 2)]) + offset.to_bytes(kind, "little")
    return bytes(out)


def _random_snappy(rng, n_elements):
    """``(stream, expected bytes)``: literals of 1-80 bytes (past 60 their length follows the
    tag) and copies of every kind, from 1 byte back (overlapping: a repeated run) to the start."""
    elements, data = [], bytearray()
    for _ in range(n_elements):
        if not data or rng.random() < 0.4:
            lit = rng.integers(0, 256, int(rng.choice([rng.integers(1, 17), rng.integers(17, 81)]))).astype(
                np.uint8).tobytes()
            elements.append(("literal", lit))
            data += lit
            continue
        kind = int(rng.choice([1, 2, 4]))
        length = int(rng.integers(4, 12)) if kind == 1 else int(rng.integers(1, 65))
        near = int(rng.integers(1, 20))  # from 1 to 19 bytes back: across the 8-byte boundary
        offset = min(len(data), near if rng.random() < 0.5 else int(rng.integers(1, len(data) + 1)))
        if kind == 1:
            offset = min(offset, 2047)
        elements.append(("copy", kind, offset, length))
        for _ in range(length):
            data.append(data[-offset])
    return elements, bytes(data)


def test_snappy_elements_of_every_kind_decompress_as_pyarrow_does():
    """The Snappy decoder (its one-step path for elements of at most 16 bytes, and the general
    path) against the bytes the elements mean and against pyarrow's decompressor, on streams
    that end exactly where the buffer ends (no readable bytes after them) and inside a larger
    buffer; it writes at most 16 bytes past the output, and refuses a copy from before the
    output's start, a copy of offset 0 and a stream that holds fewer or more bytes than said."""
    rng = np.random.default_rng(2026)
    for trial in range(200):
        elements, want = _random_snappy(rng, int(rng.integers(1, 60)))
        stream = _snappy_stream(len(want), elements)
        assert pa.decompress(stream, len(want), codec="snappy").to_pybytes() == want
        for pad in (0, 32):  # the stream alone, or followed by other bytes
            src = np.frombuffer(stream + b"\xa5" * pad, np.uint8)
            dst = np.full(len(want) + 16 + 64, 0x5A, np.uint8)
            assert _snappy.decompress(src, 0, len(stream), dst, len(want)), trial
            assert dst[:len(want)].tobytes() == want, trial
            assert (dst[len(want) + 16:] == 0x5A).all(), trial  # nothing past the 16 bytes of room
    dst = np.zeros(64, np.uint8)
    for elements, size in [([("literal", b"abcdefgh"), ("copy", 1, 9, 4)], 12),  # before the start
                           ([("literal", b"abcdefgh"), ("copy", 2, 0, 4)], 12),  # offset 0
                           ([("literal", b"abcdefgh")], 9), ([("literal", b"abcdefgh")], 7)]:  # sizes
        src = np.frombuffer(_snappy_stream(size, elements) + bytes(32), np.uint8)
        assert not _snappy.decompress(src, 0, len(src) - 32, dst, size), elements


_GUARDED = """
import ctypes, mmap, sys
import numpy as np
from dask_kernels.io import _snappy
data = np.load(sys.argv[1])
page = mmap.PAGESIZE
for k in range(len(data.files) // 2):
    stream, want = data[f"s{k}"].tobytes(), data[f"w{k}"].tobytes()
    size = -(-len(stream) // page) * page
    mm = mmap.mmap(-1, size + page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    assert ctypes.CDLL(None).mprotect(ctypes.c_void_p(base + size), page, 0) == 0  # the next page: no access
    src = np.frombuffer(mm, np.uint8, len(stream), size - len(stream))  # ends where the guard page starts
    src[:] = np.frombuffer(stream, np.uint8)
    dst = np.zeros(len(want) + 16, np.uint8)
    assert _snappy.decompress(src, 0, len(stream), dst, len(want)) and dst[:len(want)].tobytes() == want, k
print("ok")
"""


def test_snappy_reads_nothing_past_its_input(tmp_path):
    """Streams whose last byte is the last readable byte of memory (the next page is protected,
    in a subprocess: a read past it is a segfault, which fails the test): the decoder's 8- and
    16-byte loads stop short of the end where fewer bytes are left."""
    rng = np.random.default_rng(7)
    arrays = {}
    for k in range(100):
        elements, want = _random_snappy(rng, int(rng.integers(1, 40)))
        arrays[f"s{k}"] = np.frombuffer(_snappy_stream(len(want), elements), np.uint8)
        arrays[f"w{k}"] = np.frombuffer(want, np.uint8)
    np.savez(tmp_path / "streams.npz", **arrays)
    r = subprocess.run([sys.executable, "-c", _GUARDED, str(tmp_path / "streams.npz")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", f"exit {r.returncode}\n{r.stderr[-3000:]}"
