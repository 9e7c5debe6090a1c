"""Parquet files for the direct decoder's tests (test_parquet_direct.py, test_parquet_damaged.py):
tables of chosen value kinds and nulls to write, bitwise comparison (NaN payloads and -0.0
count), and a small Thrift compact reader of their page headers, so each case can check that
its file has the layout (page types, encodings) it is meant to cover."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dask_kernels.io import _parquet_direct, tabular

F32, F64 = np.float32, np.float64


# -- reading files ------------------------------------------------------------------------------------
def bits(a):
    """The array's bytes as unsigned integers of its item size (NaN payloads and -0.0 count)."""
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_bitwise(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    bad = np.argwhere(bits(got) != bits(want))
    assert len(bad) == 0, f"{len(bad)} values differ, first at {bad[0].tolist()}: {got[tuple(bad[0])]!r} " \
                          f"(bits {bits(got)[tuple(bad[0])]:#x}) vs {want[tuple(bad[0])]!r} " \
                          f"(bits {bits(want)[tuple(bad[0])]:#x})"


def parquet_reader(X):
    """``(task function, parts)`` of a read_parquet array: ``task(*part)`` is what a worker runs."""
    found = tabular._reader_layer(X)
    assert found is not None
    return found[1], found[2]


def fast_and_pyarrow(task, part):
    """``(rows from the task, rows from the pyarrow path, how the fast path went)``."""
    _parquet_direct.last_outcome["outcome"] = None
    got = task(*part)
    outcome = _parquet_direct.last_outcome["outcome"]
    want = task.rows(task.table(*part, task.columns), part[2])
    return got, want, outcome


def _varint(b, p):
    v = s = 0
    while True:
        x = b[p]
        p += 1
        v |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return v, p


def thrift_struct(b, p, path=(), fields=None):
    """Fields of the Thrift compact struct at ``p`` (the page headers' subset of the protocol):
    ``({field id: value, sub-structs as dicts}, end)``; with a list ``fields``, also appends
    ``(id path, position of the field header byte, compact type, position of the value)``."""
    out, last = {}, 0
    while True:
        x = b[p]
        head = p
        p += 1
        if x == 0:
            return out, p
        t = x & 0x0F
        if x >> 4:
            fid = last + (x >> 4)
        else:
            u, p = _varint(b, p)
            fid = (u >> 1) ^ -(u & 1)
        last = fid
        if fields is not None:
            fields.append((path + (fid,), head, t, p))
        if t in (1, 2):
            out[fid] = t == 1
        elif t in (4, 5, 6):
            u, p = _varint(b, p)
            out[fid] = (u >> 1) ^ -(u & 1)
        elif t == 8:
            n, p = _varint(b, p)
            out[fid], p = bytes(b[p:p + n]), p + n
        elif t == 12:
            out[fid], p = thrift_struct(b, p, path + (fid,), fields)
        else:
            raise ValueError(f"compact type {t} not expected in a page header")


def chunk_ranges(meta):
    """``[(row group, column, start, end)]`` file offsets of every column chunk."""
    out = []
    for g in range(meta.num_row_groups):
        for i in range(meta.num_columns):
            c = meta.row_group(g).column(i)
            start = c.data_page_offset
            if c.has_dictionary_page and c.dictionary_page_offset:
                start = min(start, c.dictionary_page_offset)
            out.append((g, i, start, start + c.total_compressed_size))
    return out


DATA_V1, DICT, DATA_V2 = 0, 2, 3


def file_pages(path):
    """``{(row group, column): [(page type, encoding, values, header start, header end)]}``."""
    raw = Path(path).read_bytes()
    out = {}
    for g, i, start, end in chunk_ranges(pq.ParquetFile(path).metadata):
        pages, p = [], start
        while p < end:
            h, q = thrift_struct(raw, p)
            sub = h.get({DATA_V1: 5, DICT: 7, DATA_V2: 8}[h[1]])
            enc = sub[4] if h[1] == DATA_V2 else sub[2]
            pages.append((h[1], enc, sub[1], p, q))
            p = q + h[3]
        assert p == end
        out[g, i] = pages
    return out


PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY = 0, 2, 8

# -- writing files ---------------------------------------------------------------------------------------
# NaN (quiet, negative, signalling, with a payload), +-inf, -0.0, 0, subnormals, +-max, the smallest
# normal, 1 (and float32's max and smallest subnormal in float64)
SPECIAL32 = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FC12345, 0x7F800000, 0xFF800000, 0x80000000, 0,
                       0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x3F800000],
                      np.uint32).view(np.float32)
SPECIAL64 = np.concatenate([
    np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FF8000000012345, 0x7FF0000000000000,
              0xFFF0000000000000, 0x8000000000000000, 0, 1, 0x800FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF,
              0xFFEFFFFFFFFFFFFF, 0x0010000000000000], np.uint64).view(np.float64),
    [np.finfo(np.float32).max, -np.finfo(np.float32).max, float(np.finfo(np.float32).smallest_subnormal)]])


def column_values(kind, n, dtype, rng):
    if kind == "random":  # high cardinality: every value distinct, over 10 decades
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n)
    elif kind == "runs":  # 80% zeros, a few other values, and long runs (RLE runs of indices)
        x = rng.choice([1.5, -2.25, 3.0, 7.0], n)
        x[rng.random(n) < 0.8] = 0
        x[n // 3:n // 3 + n // 5] = 7.0
    elif kind == "const":  # one dictionary entry: indices of bit width 0
        x = np.full(n, 2.5)
    elif kind == "special":
        special = SPECIAL32 if np.dtype(dtype) == np.float32 else SPECIAL64
        x = rng.standard_normal(n).astype(dtype)
        pick = rng.random(n) < 0.5
        x[pick] = rng.choice(special, int(pick.sum()))
        x[:len(special)] = special
        return x
    else:
        raise ValueError(kind)
    return x.astype(dtype)


def null_mask(mode, n, rng):
    if mode in ("none", "required"):
        return np.zeros(n, bool)
    if mode == "some":  # scattered, and a run of nulls (RLE levels of both values)
        m = rng.random(n) < 0.1
        m[n // 2:n // 2 + n // 8] = True
        return m
    if mode == "all":
        return np.ones(n, bool)
    raise ValueError(mode)


def make_table(spec, n, seed):
    """A table of the columns ``spec`` = [(name, dtype, values kind, nulls mode)], and the rows
    it holds (NaN for a null) in the dtype read_parquet gives, and where the nulls are."""
    rng = np.random.default_rng(seed)
    arrays, fields, rows, nulls = [], [], [], []
    for name, dtype, kind, mode in spec:
        x, m = column_values(kind, n, dtype, rng), null_mask(mode, n, rng)
        typ = pa.from_numpy_dtype(dtype)
        arrays.append(pa.nulls(n, typ) if mode == "all" else pa.array(x, mask=m if m.any() else None, type=typ))
        fields.append(pa.field(name, typ, nullable=mode != "required"))
        rows.append(np.where(m, np.nan, x))
        nulls.append(m)
    dtype = np.float32 if all(np.dtype(s[1]) == np.float32 for s in spec) else np.float64
    with np.errstate(invalid="ignore"):  # a float32 signalling NaN into float64
        rows = np.column_stack([r.astype(dtype) for r in rows])
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), rows, np.column_stack(nulls)


def small_files(d, dtype64):
    """Two small valid files: 16 float32 columns (rows of a cache line: the decoder's non-temporal
    stores), Snappy dictionary pages v1 (with statistics: headers hold binary fields); and 3
    columns of PLAIN uncompressed pages v2 (float64 unless ``dtype64`` is False); nulls in both,
    several pages and row groups."""
    spec_a = [(f"a{j}", F32, ("runs", "random", "const", "special")[j % 4], ("some", "required")[j % 3 == 2])
              for j in range(16)]
    f = F64 if dtype64 else F32
    spec_b = [("a", f, "random", "some"), ("b", f, "runs", "required"), ("c", f, "special", "some")]
    a, b = str(d / "a.parquet"), str(d / "b.parquet")
    pq.write_table(make_table(spec_a, 240, seed=1)[0], a, row_group_size=100, compression="snappy", use_dictionary=True,
                   data_page_version="1.0", max_rows_per_page=40)
    pq.write_table(make_table(spec_b, 240, seed=2)[0], b, row_group_size=100, compression="none", use_dictionary=False,
                   data_page_version="2.0", max_rows_per_page=40)
    return [a, b]
