"""svmlight / LIBSVM text split into byte ranges that each parse their own rows.

Format: one row per line, ``<label> [qid:<int>] <index>:<value> ...``; ``#`` starts a comment;
blank and comment-only lines are not rows; ``\\r\\n`` line ends are accepted. Indices are
1-based (LIBSVM) unless ``zero_based=True``; they may come in any order within a line (they are
sorted), but a repeated index in one line is an error (it is almost always a bug in whatever
wrote the file, and summing would silently change values). Rows without ``qid:`` in a file that
has some get query id -1. Numbers are read exactly as Python's ``float`` reads them; a label or
value that is not finite (``nan``, ``inf``, or a decimal too large for a double, such as
``1e400``) is an error, and so is a query id or index beyond 64-bit integers.

Byte range i is ``[i * blocksize, (i + 1) * blocksize)``; a line belongs to the range in which
it starts. A first, cheap pass (one task per range) counts the lines and rows of each range
(and finds the dimension when it is not given), so every partition knows the global line and
row number of its first row before any parsing; errors name the file, the global line (1-based)
and row (0-based) and the byte offset of the line.
"""


from __future__ import annotations

import math

import dask
import numpy as np
import scipy.sparse as sp

from .._hashing import content_hash
from . import _svmlight_scan
from .sparse import SparsePartitions

DEFAULT_BLOCKSIZE = 64 * 2**20
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_FINITE = ": labels and values must be finite numbers (a decimal beyond 1.8e308 is infinite)"


def _short(token):
    """A token as it goes into a message: at most 40 characters (a number may be megabytes)."""
    text = token.decode("utf-8", "replace")
    return text if len(text) <= 40 else text[:37] + "..."


class SvmlightFormatError(ValueError):
    """A line of an svmlight file that cannot be parsed (names file, line, row, byte offset)."""


class _LocalError(Exception):
    # every field in args: a worker's scan returns this to the driver, which unpickles it with
    # cls(*args)
    def __init__(self, what, line, row, offset, text):
        super().__init__(what, line, row, offset, text)
        self.what, self.line, self.row, self.offset, self.text = what, line, row, offset, text

    def format(self, path, line_base=0, row_base=0):
        return SvmlightFormatError(
            f"{path}: line {line_base + self.line + 1} (row {row_base + self.row}), byte offset "
            f"{self.offset}: {self.what}: {self.text!r}"
        )


def _compression(path):
    """"gzip", "bz2", "xz" (by file name suffix .gz, .bz2, .xz) or None."""
    from fsspec.utils import infer_compression

    comp = infer_compression(str(path))
    return comp if comp in ("gzip", "bz2", "lzma", "xz") else None


def _fs(path, storage_options):
    import fsspec

    return fsspec.core.url_to_fs(path, **(storage_options or {}))


_STEP = 2**20  # bytes read at a time while looking for a line end


def _read_range(path, storage_options, start, end):
    """Bytes of the lines starting in [start, end), and the file offset of the first one.

    Reads the range itself (from byte start-1, to see whether a line starts at ``start``) and,
    after its last line start, only up to that line's end: each pass over all ranges reads
    about every byte twice at most, linear in the file size whatever the line lengths (reading
    "the rest of the line" from every range inside a long line would be quadratic).
    """
    fs, p = _fs(path, storage_options)
    compression = _compression(path)
    if compression is not None:  # one partition holds the whole file (no seeking in a stream)
        with fs.open(p, "rb", compression=compression) as f:
            return f.read(), 0
    with fs.open(p, "rb") as f:
        if start > 0:
            f.seek(start - 1)
            head = f.read(end - start + 1)
            k = head.find(b"\n")  # the line holding byte start-1 belongs to the range before
            if k < 0 or k + 1 == len(head):
                return b"", end
            begin, data = start + k, head[k + 1:]
        else:
            begin, data = 0, f.read(end)
        if data and not data.endswith(b"\n"):
            data += _rest_of_line(f, min(max(end - start, 256), _STEP))
        return data, begin


def _rest_of_line(f, step):
    """The bytes from the current position up to and including the next newline (or EOF).

    Reads ``step`` bytes, then twice as many each time: at most about twice the line's rest
    plus ``step`` (the range size), so the overshoot summed over all ranges is about the file.
    """
    parts = []
    while True:
        chunk = f.read(step)
        step = min(2 * step, _STEP)
        if not chunk:
            break
        k = chunk.find(b"\n")
        if k >= 0:
            parts.append(chunk[: k + 1])
            break
        parts.append(chunk)
    return b"".join(parts)


def _lines(data):
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _parse(data, begin, n_features, zero_based, want_arrays):
    """Parse one range. Returns (n_lines, n_rows, max_col, has_qid, arrays or None).

    The Numba scanner handles plain well-formed text (~10x faster); anything else, errors
    included, goes through :func:`_parse_python`, which defines the format.
    Raises :class:`_LocalError` with range-local line and row numbers and the file offset.
    """
    fast = _svmlight_scan.parse(data, n_features, zero_based)
    if fast is None:
        return _parse_python(data, begin, n_features, zero_based, want_arrays)
    return fast if want_arrays else (*fast[:4], None)


def _parse_python(data, begin, n_features, zero_based, want_arrays):
    """The reference parser of one range (see :func:`_parse`)."""
    indptr, indices, values, labels, qids = [0], [], [], [], []
    n_rows, max_col, has_qid, offset = 0, -1, False, begin
    lines = _lines(data)
    base = 0 if zero_based else 1
    for ln, raw in enumerate(lines):
        line_offset = offset
        offset += len(raw) + 1
        content = raw.split(b"#", 1)[0]
        toks = content.split()
        if not toks:
            continue

        def fail(what):
            raise _LocalError(what, ln, n_rows, line_offset, raw.rstrip(b"\r")[:120].decode("utf-8", "replace"))

        try:
            label = float(toks[0])
        except ValueError:
            fail(f"label {toks[0].decode('utf-8', 'replace')!r} is not a number")
        if not math.isfinite(label):
            fail(f"label {_short(toks[0])!r} is not finite ({label}){_FINITE}")
        j, q = 1, -1
        if len(toks) > 1 and toks[1].startswith(b"qid:"):
            try:
                q = int(toks[1][4:])
            except ValueError:
                fail(f"bad query id {toks[1].decode('utf-8', 'replace')!r}")
            if not _INT64_MIN <= q <= _INT64_MAX:
                fail(f"query id {q} is out of range (query ids are 64-bit integers, "
                     f"{_INT64_MIN} to {_INT64_MAX})")
            has_qid, j = True, 2
        cols, vals = [], []
        for tok in toks[j:]:
            i_s, sep, v_s = tok.partition(b":")
            try:
                if not sep:
                    raise ValueError
                col = int(i_s) - base
                val = float(v_s)
            except ValueError:
                fail(f"expected <index>:<value>, found {tok.decode('utf-8', 'replace')!r}")
            if col < 0:
                fail(f"feature index {col + base} is below {base} ({'zero' if zero_based else 'one'}-based indices"
                     + ("" if zero_based else "; a file written with 0-based indices, as scikit-learn's "
                        "dump_svmlight_file writes by default, needs zero_based=True (--zero-based)") + ")")
            if n_features is not None and col >= n_features:
                fail(f"feature index {col + base} is beyond the declared dimension n_features={n_features}")
            if col >= _INT64_MAX:  # the dimension, col + 1, must be a 64-bit integer too
                fail(f"feature index {col + base} is out of range (the largest is {_INT64_MAX - 1 + base}: "
                     "the dimension is a 64-bit integer)")
            if not math.isfinite(val):
                fail(f"feature index {col + base} has the value {_short(v_s)!r}, "
                     f"which is not finite ({val}){_FINITE}")
            cols.append(col)
            vals.append(val)
        if cols:
            c = np.asarray(cols, dtype=np.int64)
            order = np.argsort(c, kind="stable")
            c = c[order]
            dup = np.flatnonzero(np.diff(c) == 0)
            if dup.size:
                fail(f"feature index {c[dup[0]] + base} appears twice in one line")
            max_col = max(max_col, int(c[-1]))
            if want_arrays:
                indices.append(c)
                values.append(np.asarray(vals, dtype=np.float64)[order])
        n_rows += 1
        if want_arrays:
            indptr.append(indptr[-1] + len(cols))
            labels.append(label)
            qids.append(q)
    arrays = None
    if want_arrays:
        arrays = (
            np.concatenate(indices) if indices else np.empty(0, np.int64),
            np.concatenate(values) if values else np.empty(0, np.float64),
            np.asarray(indptr, dtype=np.int64),
            np.asarray(labels, dtype=np.float64),
            np.asarray(qids, dtype=np.int64),
        )
    return len(lines), n_rows, max_col, has_qid, arrays


def _scan_range(path, storage_options, start, end, zero_based, find_dimension):
    data, begin = _read_range(path, storage_options, start, end)
    if not find_dimension:
        n_lines, n_rows, has_qid = _svmlight_scan.count(data)
        return n_lines, n_rows, -1, has_qid, None
    try:
        n_lines, n_rows, max_col, has_qid, _ = _parse(data, begin, None, zero_based, False)
    except _LocalError as e:  # reported by the driver, which knows the global line numbers
        return 0, 0, -1, False, e
    return n_lines, n_rows, max_col, has_qid, None


class _SvmlightLoader:
    """Parses byte range i on a worker: ``(X_csr, labels, qid)`` with global numbers in errors."""

    def __init__(self, path, storage_options, ranges, line_offsets, row_offsets, n_features, zero_based, has_qid):
        self.path, self.storage_options, self.ranges = path, storage_options, ranges
        self.line_offsets, self.row_offsets = line_offsets, row_offsets
        self.n_features, self.zero_based, self.has_qid = n_features, zero_based, has_qid

    def __call__(self, i):
        start, end = self.ranges[i]
        data, begin = _read_range(self.path, self.storage_options, start, end)
        try:
            _, n_rows, _, _, arrays = _parse(data, begin, self.n_features, self.zero_based, True)
        except _LocalError as e:
            raise e.format(self.path, self.line_offsets[i], self.row_offsets[i]) from None
        indices, values, indptr, labels, qids = arrays
        X = sp.csr_matrix((values, indices.astype(np.int32 if self.n_features < 2**31 else np.int64), indptr),
                          shape=(n_rows, self.n_features))
        return X, labels, (qids if self.has_qid else None)


def read_svmlight(path: str, n_features: int | None = None, *, blocksize: int = DEFAULT_BLOCKSIZE,
                  zero_based: bool = False, storage_options: dict | None = None) -> SparsePartitions:
    """An svmlight/LIBSVM file as byte-range partitions that each parse their own rows.

    A first pass (one task per byte range, on the active Dask scheduler) counts lines and rows
    per range, and finds the dimension when ``n_features`` is not given (that pass parses every
    line; giving ``n_features`` makes it a cheap line count).

    Parameters
    ----------
    path : str
        Local path or fsspec URL, readable by every worker.
    n_features : int, optional
        Input dimension. A row with a larger index is an error naming its line.
    blocksize : int, default 64 MiB
        Bytes per partition. Compressed files (``.gz``, ``.bz2``, ``.xz``, by name) are one
        partition each, decompressed whole by one task (a compressed stream cannot be split);
        byte offsets in their errors count decompressed bytes.
    zero_based : bool, default False
        Whether indices start at 0 (LIBSVM files start at 1).
    storage_options : dict, optional
        Passed to fsspec.

    Returns
    -------
    SparsePartitions
        With labels (float64), query ids when the file has them, and a fingerprint made of the
        path, size and modification time (cheap; a rewritten file changes size or mtime).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "d.svm")
    >>> _ = open(p, "w").write("1 1:0.5 3:2\\n# comment\\n-1 2:1\\n")
    >>> src = read_svmlight(p)
    >>> src.shape, src.compute()[1].tolist()
    ((2, 3), [1.0, -1.0])
    """
    fs, p = _fs(path, storage_options)
    info = fs.info(p)
    size = int(info["size"])
    blocksize = max(1, int(blocksize))
    ranges = [(a, min(a + blocksize, size)) for a in range(0, size, blocksize)] or [(0, 0)]
    if _compression(path) is not None:  # a compressed stream cannot be split: one partition
        ranges = [(0, size)]
    find_dim = n_features is None
    scans = dask.compute(*[
        dask.delayed(_scan_range, pure=True)(path, storage_options, a, b, zero_based, find_dim) for a, b in ranges
    ])
    line_offsets, row_offsets, lines_before, rows_before = [], [], 0, 0
    for n_lines, n_rows, _, _, err in scans:
        if err is not None:
            raise err.format(path, lines_before, rows_before)
        line_offsets.append(lines_before)
        row_offsets.append(rows_before)
        lines_before += n_lines
        rows_before += n_rows
    if find_dim:
        n_features = max(s[2] for s in scans) + 1
        if n_features == 0:
            raise ValueError(f"{path}: no feature index found; give n_features")
    has_qid = any(s[3] for s in scans)
    mtime = info.get("mtime", info.get("LastModified", info.get("ETag", "")))
    fp = {"kind": "svmlight", "path": str(path), "size": size, "mtime": str(mtime), "blocksize": blocksize,
          "n_features": int(n_features), "zero_based": bool(zero_based)}
    name = "svmlight-" + content_hash(repr(sorted(fp.items())))
    loader = _SvmlightLoader(path, storage_options, ranges, line_offsets, row_offsets, int(n_features),
                             zero_based, has_qid)
    return SparsePartitions(loader, [s[1] for s in scans], n_features, has_labels=True, has_qid=has_qid,
                            fingerprint=fp, name=name)
