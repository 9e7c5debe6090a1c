"""read_parquet's fast path (:mod:`dask_kernels.io._parquet_direct` and the Numba page decoder
:mod:`dask_kernels.io._parquet_pages`) against pyarrow, bit for bit.

* a matrix of files pyarrow writes (float32, float64 and both; dictionary, PLAIN, a dictionary
  that overflows into PLAIN pages; Snappy and none; data pages v1 and v2; many small pages;
  nulls, required fields, all-null columns; several row groups per partition and several files;
  special values, runs, constant and high-cardinality data; no statistics; page checksums; wide
  rows, written as whole cache lines; a column subset and a label): the fast path runs and gives
  the rows pyarrow gives, bitwise; the decoder called directly writes its rows and nothing else;
  dictionary indices of bit width 0 (as parquet-mr writes them);
* what the decoder does not read (integers, booleans, float16, zstd/gzip, BYTE_STREAM_SPLIT)
  goes to pyarrow, with the same result;
* local files and object stores give the same chunk bytes; threads decoding at once each get
  their own rows;
* the kernels loaded from Numba's on-disk cache decode the same bytes;
* featurize from Parquet through the fast path stores the features of the same rows, and a null
  is still refused naming the file, row and column.

Damaged files are tested in test_parquet_damaged.py. The file fixtures' layout (page counts,
encodings, page versions) is checked with the small Thrift reader of ``_parquet_files``, so each
case covers what it says it covers.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _parquet_files import (DATA_V1, DATA_V2, DICT, F32, F64, PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY, assert_bitwise,
                           chunk_ranges, column_values, fast_and_pyarrow, file_pages, make_table, parquet_reader,
                           small_files)
from dask_kernels import GCWS, featurize, read_parquet
from dask_kernels.blocks import InputValueError
from dask_kernels.io import _parquet_direct, tabular

# pyarrow's float32 -> float64 cast of a signalling NaN (the pyarrow path, on mixed files)
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")


def _check(path, rows, nulls, block_rows, columns=None, n_parts=None):
    """Every partition of ``path`` through the fast path: decoded, bitwise pyarrow's rows, NaN
    exactly at the nulls (and NaNs of the data), equal to the rows written; and end to end."""
    X = read_parquet(path, columns=columns, block_rows=block_rows)
    task, parts = parquet_reader(X)
    if n_parts is not None:
        assert len(parts) == n_parts
    got_all = []
    for part in parts:
        got, want, outcome = fast_and_pyarrow(task, part)
        assert outcome == "decoded", outcome
        assert_bitwise(got, want)
        got_all.append(got)
    got = np.concatenate(got_all)
    assert got.dtype == X.dtype == rows.dtype and got.shape == rows.shape
    np.testing.assert_array_equal(np.isnan(got), nulls | np.isnan(rows))
    np.testing.assert_array_equal(got, rows)  # values (NaN equal to NaN, -0.0 to 0.0)
    with dask.config.set(scheduler="synchronous"):
        assert_bitwise(X.compute(), got)
    return got


_SMALL_PAGES = dict(data_page_size=128, write_batch_size=8)

# (columns, writer options): each dimension's every value appears at least once
CASES = {
    "f32-dict-snappy-v1": (
        [("a", F32, "random", "some"), ("b", F32, "runs", "some"), ("c", F32, "const", "none"),
         ("d", F32, "special", "some"), ("e", F32, "runs", "required")],
        dict(use_dictionary=True, compression="snappy", data_page_version="1.0")),
    "f64-plain-none-v2-small-pages": (
        [("a", F64, "random", "some"), ("b", F64, "runs", "required"), ("c", F64, "special", "none")],
        dict(use_dictionary=False, compression="none", data_page_version="2.0", **_SMALL_PAGES)),
    "mixed-dict-none-v2-small-pages": (
        [("a", F32, "random", "some"), ("b", F64, "runs", "some"), ("c", F32, "runs", "required"),
         ("d", F64, "random", "required"), ("e", F32, "special", "none")],
        dict(use_dictionary=True, compression="none", data_page_version="2.0", **_SMALL_PAGES)),
    "mixed-plain-snappy-v1": (
        [("a", F64, "special", "some"), ("b", F32, "special", "some"), ("c", F32, "random", "required")],
        dict(use_dictionary=False, compression="snappy", data_page_version="1.0")),
    "f32-plain-snappy-v2-small-pages": (
        [("a", F32, "special", "some"), ("b", F32, "random", "required"), ("c", F32, "runs", "some")],
        dict(use_dictionary=False, compression="snappy", data_page_version="2.0", **_SMALL_PAGES)),
    "f64-dict-snappy-v1-small-pages": (
        [("a", F64, "runs", "some"), ("b", F64, "const", "required"), ("c", F64, "special", "some"),
         ("d", F64, "random", "none")],
        dict(use_dictionary=True, compression="snappy", data_page_version="1.0", **_SMALL_PAGES)),
    "dict-overflow-f64-snappy-v1": (
        [("a", F64, "random", "some"), ("b", F64, "random", "required"), ("c", F64, "runs", "some")],
        dict(use_dictionary=True, compression="snappy", data_page_version="1.0", dictionary_pagesize_limit=512,
             **_SMALL_PAGES)),
    "dict-overflow-f32-none-v2": (
        [("a", F32, "random", "some"), ("b", F32, "special", "required")],
        dict(use_dictionary=True, compression="none", data_page_version="2.0", dictionary_pagesize_limit=256,
             **_SMALL_PAGES)),
    "all-null-and-const-f32-dict-snappy-v2": (
        [("a", F32, "random", "all"), ("b", F32, "const", "some"), ("c", F32, "const", "required"),
         ("d", F32, "runs", "all")],
        dict(use_dictionary=True, compression="snappy", data_page_version="2.0")),
    "all-null-plain-f64-none-v1": (
        [("a", F64, "random", "all"), ("b", F64, "random", "some")],
        dict(use_dictionary=False, compression="none", data_page_version="1.0", **_SMALL_PAGES)),
    "no-statistics-mixed-dict-snappy-v2": (
        [("a", F32, "random", "some"), ("b", F64, "runs", "some"), ("c", F64, "special", "required")],
        dict(use_dictionary=True, compression="snappy", data_page_version="2.0", write_statistics=False)),
    "required-only-f64-dict-none-v1-checksums": (
        [("a", F64, "runs", "required"), ("b", F64, "random", "required"), ("c", F64, "const", "required")],
        dict(use_dictionary=True, compression="none", data_page_version="1.0", write_page_checksum=True,
             max_rows_per_page=25)),
    "f32-mixed-encodings-per-column": (
        [("a", F32, "random", "some"), ("b", F32, "runs", "some"), ("c", F32, "special", "required")],
        dict(use_dictionary=["b"], compression="snappy", data_page_version="1.0", max_rows_per_page=24)),
}


def _wide(n_columns, dtypes):
    kinds, modes = ("random", "runs", "special", "const", "runs"), ("some", "none", "required")
    return [(f"c{j}", dtypes[j % len(dtypes)], kinds[j % len(kinds)], modes[j % len(modes)]) for j in range(n_columns)]


# wide rows: 16 columns at a time are written into the rows, as non-temporal stores of whole cache
# lines where every row starts one (48 x 4, 24 x 8, 16 x 8 bytes); 40 x 4 bytes do not
CASES.update({
    "wide-f32-48-dict-snappy-v1": (_wide(48, [F32]), dict(use_dictionary=True, compression="snappy",
                                                         data_page_version="1.0")),
    "wide-f64-24-plain-none-v2-small-pages": (_wide(24, [F64]), dict(use_dictionary=False, compression="none",
                                                                     data_page_version="2.0", **_SMALL_PAGES)),
    "wide-mixed-16-dict-none-v1": (_wide(16, [F32, F64, F64]), dict(use_dictionary=True, compression="none",
                                                                    data_page_version="1.0")),
    "wide-f32-40-plain-snappy-v2": (_wide(40, [F32]), dict(use_dictionary=False, compression="snappy",
                                                          data_page_version="2.0")),
})


@pytest.mark.parametrize("case", list(CASES))
def test_the_fast_path_gives_pyarrows_rows_bitwise(tmp_path, case):
    """500 rows in row groups of 120 read in partitions of 250+ rows: 3 row groups, then 2."""
    spec, options = CASES[case]
    table, rows, nulls = make_table(spec, 500, seed=sorted(CASES).index(case))
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=120, **options)

    # the file is what the case says
    meta = pq.ParquetFile(path).metadata
    pages = file_pages(path)
    kinds = {(t, e) for chunk in pages.values() for t, e, *_ in chunk}
    data_types = {t for t, _ in kinds if t != DICT}
    assert data_types == {DATA_V2 if options["data_page_version"] == "2.0" else DATA_V1}
    assert {meta.row_group(0).column(i).compression for i in range(len(spec))} == \
        {"SNAPPY" if options["compression"] == "snappy" else "UNCOMPRESSED"}
    for i, (_, _, _, mode) in enumerate(spec):
        assert meta.schema.column(i).max_definition_level == (0 if mode == "required" else 1)
    if options["use_dictionary"] is False:
        assert (DICT, PLAIN) not in kinds and {e for _, e in kinds} == {PLAIN}
    else:
        assert any(t == DICT for t, _ in kinds)
    if "data_page_size" in options or "max_rows_per_page" in options:
        assert max(sum(t != DICT for t, *_ in chunk) for chunk in pages.values()) >= 4
    if "dictionary_pagesize_limit" in options:  # a chunk with dictionary pages, then PLAIN ones
        assert any([e for t, e, *_ in chunk if t != DICT][0] in (PLAIN_DICTIONARY, RLE_DICTIONARY)
                   and [e for t, e, *_ in chunk if t != DICT][-1] == PLAIN for chunk in pages.values())
    if options.get("write_statistics") is False:
        assert meta.row_group(0).column(0).statistics is None

    got = _check(path, rows, nulls, block_rows=250, n_parts=2)
    assert got.dtype == (np.float32 if all(s[1] is F32 for s in spec) else np.float64)


def test_several_files_in_a_folder(tmp_path):
    """Files of 130, 90 and 200 rows (row groups of 40): partitions never span two files."""
    spec = [("a", F32, "random", "some"), ("b", F64, "runs", "none"), ("c", F64, "special", "some")]
    d = tmp_path / "d"
    d.mkdir()
    rows, nulls = [], []
    for k, n in enumerate((130, 90, 200)):
        table, r, m = make_table(spec, n, seed=100 + k)
        pq.write_table(table, str(d / f"part-{k}.parquet"), row_group_size=40, compression="snappy",
                       data_page_version=("1.0", "2.0")[k % 2])
        rows.append(r)
        nulls.append(m)
    _check(str(d), np.concatenate(rows), np.concatenate(nulls), block_rows=80, n_parts=2 + 2 + 3)


def test_a_subset_of_columns_in_another_order_and_a_label(tmp_path):
    """columns=["d", "a"] of a file of a, b, c, d and an integer label: X through the fast path
    (its own columns only), y through pyarrow, jointly too (read_together, as featurize does)."""
    rng = np.random.default_rng(7)
    n = 300
    x = {k: column_values(kind, n, F32, rng) for k, kind in zip("abcd", ("random", "runs", "special", "special"))}
    x["b"] = x["b"].astype(F64)  # not selected: the rows stay float32
    y = rng.integers(-5, 5, n)
    m = rng.random(n) < 0.1
    table = pa.table({"a": pa.array(x["a"], mask=m), "b": x["b"], "c": x["c"], "d": x["d"], "y": y})
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=70, compression="snappy")
    want = np.column_stack([x["d"], np.where(m, np.nan, x["a"]).astype(F32)])

    X, Y = read_parquet(path, columns=["d", "a"], label="y", block_rows=140)
    assert X.dtype == np.float32 and Y.dtype == np.int64
    _check(path, want, np.column_stack([np.zeros(n, bool), m]), block_rows=140, columns=["d", "a"], n_parts=3)
    task, parts = parquet_reader(X)
    assert task.columns == ("d", "a")

    Xj, Yj = tabular.read_together(X, Y)
    joint = [layer for name, layer in Xj.dask.layers.items() if name.startswith("parquet-joint-")]
    assert len(joint) == 1
    reader, mapping = joint[0].indices[0][0], next(iter(joint[0].io_deps.values())).mapping
    start = 0
    for key in sorted(mapping):
        part = mapping[key]
        _parquet_direct.last_outcome["outcome"] = None
        rows, labels = reader(*part)
        assert _parquet_direct.last_outcome["outcome"] == "decoded"
        assert_bitwise(rows, want[start:start + part[2]])
        assert_bitwise(labels, y[start:start + part[2]])
        start += part[2]
    assert start == n
    with dask.config.set(scheduler="synchronous"):
        got_x, got_y = dask.compute(Xj, Yj)
    assert_bitwise(got_x, want)
    assert_bitwise(got_y, y)

    # a float label the default columns leave out
    t2 = pa.table({"a": x["a"], "c": x["c"].astype(F64), "y": y.astype(F64)})
    p2 = str(tmp_path / "t2.parquet")
    pq.write_table(t2, p2, row_group_size=100)
    X2, Y2 = read_parquet(p2, label="y", block_rows=100)
    task, parts = parquet_reader(X2)
    assert task.columns == ("a", "c")
    for part in parts:
        got, ref, outcome = fast_and_pyarrow(task, part)
        assert outcome == "decoded"
        assert_bitwise(got, ref)
    assert_bitwise(Y2.compute(scheduler="synchronous"), y.astype(F64))


@pytest.mark.parametrize("case", ["wide-f32-48-dict-snappy-v1", "wide-f64-24-plain-none-v2-small-pages",
                                  "wide-mixed-16-dict-none-v1", "f32-dict-snappy-v1"])
def test_decode_row_group_writes_its_rows_and_nothing_else(tmp_path, case):
    """The decoder called as read_rows calls it, into rows with a sentinel row before and after:
    pyarrow's rows of the row group, bitwise, with and without the non-temporal stores of whole
    cache lines (``lines``), and the sentinels untouched."""
    import fsspec

    from dask_kernels.io import _parquet_pages as pages

    spec, options = CASES[case]
    table, _, _ = make_table(spec, 300, seed=5)
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=130, **options)
    meta = pq.ParquetFile(path).metadata
    leaves = _parquet_direct._leaves(meta)
    columns = [s[0] for s in spec]
    index = [leaves[c][0] for c in columns]
    physical = np.array([leaves[c][1] for c in columns], np.int64)
    max_defs = np.array([leaves[c][2] for c in columns], np.int64)
    dtype = np.float32 if all(s[1] is F32 for s in spec) else np.float64
    fs = fsspec.filesystem("file")
    for g in range(meta.num_row_groups):
        rows = meta.row_group(g).num_rows
        starts, ends, codecs = _parquet_direct._layout(meta.row_group(g), index)
        buf, starts, ends = _parquet_direct._fetch(fs, path, starts, ends, os.path.getsize(path))
        want = tabular._to_rows(pq.ParquetFile(path).read_row_group(g, columns=columns), rows, dtype)
        for lines in (True, False):
            big = _parquet_direct._aligned_empty((rows + 2, len(columns)), dtype)
            big[:] = -7
            part = big[1:-1]
            assert _parquet_direct.line_aligned(part) == (case != "f32-dict-snappy-v1")
            status, column = pages.decode_row_group(buf, starts, ends, physical, codecs, max_defs, part,
                                                    lines and _parquet_direct.line_aligned(part))
            assert (status, column) == (pages.OK, -1)
            assert_bitwise(part, want)
            assert (big[0] == -7).all() and (big[-1] == -7).all()


@pytest.mark.parametrize("nullable", [False, True], ids=["required", "nullable"])
@pytest.mark.parametrize("run", ["rle", "bit-packed"])
def test_dictionary_indices_of_bit_width_0(tmp_path, nullable, run):
    """A one-entry dictionary's indices take 0 bits in files parquet-mr (Spark) writes; pyarrow
    writes 1 bit, so its pages are rewritten here: the bit-width byte 1 -> 0, the run's value byte
    left as a spare byte at the page's end (the page keeps its size). An RLE run of width 0 is
    decoded; a bit-packed one (0 bytes a group) gives pyarrow's rows by either path."""
    n = 100
    mask = np.arange(n) % 7 == 3 if nullable else None
    fields = [pa.field("c", pa.float32(), nullable=nullable), pa.field("d", pa.float32())]
    table = pa.Table.from_arrays([pa.array(np.full(n, 2.5, F32), mask=mask), pa.array(np.arange(n, dtype=F32))],
                                 schema=pa.schema(fields))
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, compression="none", use_dictionary=True, max_rows_per_page=30)
    raw = bytearray(Path(path).read_bytes())
    rewritten = row = 0
    for typ, enc, values, _, body in file_pages(path)[0, 0]:
        if typ != DATA_V1:
            continue
        if nullable:  # past the definition levels (4-byte length, then the levels)
            body += 4 + int.from_bytes(raw[body:body + 4], "little")
        width, header, value = raw[body:body + 3]
        assert (width, header & 0x81, value) == (1, 0, 0)  # width 1, one RLE run of 0s (a 1-byte header)
        page_rows = np.arange(row, row + values)
        row += values
        assert header >> 1 == (values - int(np.sum(page_rows % 7 == 3)) if nullable else values)
        raw[body] = 0
        if run == "bit-packed":
            raw[body + 1] = ((header >> 1) + 7) // 8 << 1 | 1
        rewritten += 1
    assert rewritten == 4
    with open(path, "wb") as f:
        f.write(raw)
    task, parts = parquet_reader(read_parquet(path))
    got, want, outcome = fast_and_pyarrow(task, parts[0])
    assert_bitwise(got, want)
    np.testing.assert_array_equal(got[:, 0], np.where(np.arange(n) % 7 == 3, np.nan, 2.5) if nullable else 2.5)
    if run == "rle":
        assert outcome == "decoded", outcome


# -- what the decoder does not read goes to pyarrow -----------------------------------------------
def _fallback_table(kind, n, rng):
    f = rng.standard_normal(n).astype(F32)
    m = rng.random(n) < 0.1
    if kind == "int64":
        return pa.table({"f": pa.array(f, mask=m), "i": rng.integers(-1000, 1000, n)}), {}
    if kind == "int32-only":
        return pa.table({"i": pa.array(rng.integers(-9, 9, n).astype(np.int32), mask=m)}), {}
    if kind == "bool":
        return pa.table({"f": f.astype(F64), "b": pa.array(rng.random(n) < 0.5, mask=m)}), {}
    if kind == "zstd":
        return pa.table({"f": pa.array(f, mask=m), "g": f * 2}), dict(compression="zstd")
    if kind == "gzip":
        return pa.table({"f": pa.array(f.astype(F64), mask=m)}), dict(compression="gzip")
    if kind == "byte_stream_split":
        return pa.table({"f": pa.array(f, mask=m), "g": (f * 3).astype(F64)}), dict(
            use_dictionary=False, use_byte_stream_split=True, compression="snappy")
    if kind == "float16":
        return pa.table({"f": f, "h": pa.array(f.astype(np.float16))}), {}
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["int64", "int32-only", "bool", "zstd", "gzip", "byte_stream_split", "float16"])
def test_what_the_decoder_does_not_read_goes_to_pyarrow(tmp_path, kind):
    table, options = _fallback_table(kind, 200, np.random.default_rng(3))
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=60, **options)
    try:
        X = read_parquet(path, block_rows=100)
    except ValueError as e:  # a column type read_parquet refuses altogether
        assert kind == "float16", e
        pytest.skip(f"read_parquet refuses float16 columns: {e}")
    task, parts = parquet_reader(X)
    for part in parts:
        got, want, outcome = fast_and_pyarrow(task, part)
        assert outcome is not None and outcome != "decoded", outcome
        assert_bitwise(got, want)
    with dask.config.set(scheduler="synchronous"):
        assert_bitwise(X.compute(), np.concatenate([fast_and_pyarrow(task, p)[1] for p in parts]))


def test_a_local_file_and_an_object_store_give_the_same_bytes_or_none_when_short(tmp_path):
    """A row group's column chunks read from a local file (straight into an array) and through
    fsspec's ranged requests (an object store: here the memory file system) are the same bytes,
    split at the same chunk offsets, for chunks in one span or several; a file shorter than its
    footer says gives None on both (pyarrow then reports it)."""
    import fsspec

    x = np.random.default_rng(3).random((500, 6)).astype(F32)
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({f"c{j}": x[:, j] for j in range(6)}), path, row_group_size=250)
    raw = Path(path).read_bytes()
    local, memory = fsspec.filesystem("file"), fsspec.filesystem("memory")
    with memory.open("/t.parquet", "wb") as f:
        f.write(raw)
    ranges = [(s, e) for g, _, s, e in chunk_ranges(pq.ParquetFile(path).metadata) if g == 1]
    starts, ends = (np.array(v, np.int64) for v in zip(*ranges))
    gap = _parquet_direct._GAP
    try:
        for spread in (False, True):
            _parquet_direct._GAP = 1 if spread else gap  # one span, or one per chunk (they are > 1 byte apart)
            got = [_parquet_direct._fetch(fs, p, starts[::2], ends[::2], len(raw))
                   for fs, p in ((local, path), (memory, "/t.parquet"))]
            for buf, s, e in got:
                assert [buf[a:b].tobytes() for a, b in zip(s, e)] == [raw[a:b] for a, b in zip(starts[::2], ends[::2])]
    finally:
        _parquet_direct._GAP = gap
    Path(path).write_bytes(raw[:int(ends[-1]) - 10])
    with memory.open("/t.parquet", "wb") as f:
        f.write(raw[:int(ends[-1]) - 10])
    assert _parquet_direct._fetch(local, path, starts, ends, len(raw)) is None
    assert _parquet_direct._fetch(memory, "/t.parquet", starts, ends, len(raw)) is None


def test_threads_decoding_at_once_each_get_their_own_rows(tmp_path):
    """Each thread decodes with work arrays of its own (kept between its calls): row groups of
    two files with different row counts and dtypes, decoded by four threads at once, many times
    over, give pyarrow's rows."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(11)
    parts, wants = [], []
    for k, (n, dtype, group) in enumerate([(3000, F32, 1000), (2100, np.float64, 700)]):
        x = np.round(rng.random((n, 20)), 2).astype(dtype)
        path = str(tmp_path / f"t{k}.parquet")
        pq.write_table(pa.table({f"c{j}": x[:, j] for j in range(20)}), path, row_group_size=group)
        task, ps = parquet_reader(read_parquet(path, block_rows=group))
        for part in ps:
            parts.append((task, part))
            wants.append(task.rows(task.table(*part, task.columns), part[2]))

    def read(i):
        task, part = parts[i % len(parts)]
        return i % len(parts), task(*part)

    with ThreadPoolExecutor(4) as pool:
        for i, got in pool.map(read, range(40 * len(parts))):
            assert_bitwise(got, wants[i])


# -- the kernels loaded from Numba's cache ---------------------------------------------------------
_CACHED = r'''
import json, sys
import numpy as np
from dask_kernels import read_parquet
from dask_kernels.io import tabular, _parquet_direct as direct, _parquet_pages as pages

out = []
for path in sys.argv[1:]:
    _, task, parts, _ = tabular._reader_layer(read_parquet(path, block_rows=150))
    for k, part in enumerate(parts):
        rows = task(*part)
        assert direct.last_outcome["outcome"] == "decoded", direct.last_outcome
        np.save(f"{path}.{k}.npy", rows)
        out.append(f"{path}.{k}.npy")
kernel = next(f for f in (pages.decode_row_group, getattr(pages, "_decode_row_group", None)) if hasattr(f, "stats"))
stats = kernel.stats
print(json.dumps({"files": out, "cache_hits": sum(stats.cache_hits.values()),
                  "cache_misses": sum(stats.cache_misses.values())}))
'''


def test_kernels_loaded_from_numbas_cache_decode_the_same(tmp_path):
    """Two runs with a fresh NUMBA_CACHE_DIR: the first compiles and caches the kernels, the
    second loads them (a recursive kernel once crashed only when loaded from the cache); both
    exit cleanly with pyarrow's bytes. Float32 files: one specialization, about 20 s."""
    d = tmp_path / "src"
    d.mkdir()
    paths = small_files(d, dtype64=False)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    env.pop("NUMBA_BOUNDSCHECK", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    reports = []
    for run in range(2):
        r = subprocess.run([sys.executable, "-c", _CACHED, *paths], env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, f"run {run}: exit {r.returncode}\n{r.stderr[-3000:]}"
        reports.append(json.loads(r.stdout.strip().splitlines()[-1]))
        want = []
        for path in paths:
            task, parts = parquet_reader(read_parquet(path, block_rows=150))
            want += [task.rows(task.table(*p, task.columns), p[2]) for p in parts]
        assert len(reports[-1]["files"]) == len(want) == 4
        for f, w in zip(reports[-1]["files"], want):
            assert_bitwise(np.load(f), w)
            os.remove(f)
    assert reports[0]["cache_misses"] > 0 and reports[0]["cache_hits"] == 0, reports  # compiled
    assert reports[1]["cache_hits"] > 0 and reports[1]["cache_misses"] == 0, reports  # loaded


# -- featurize ------------------------------------------------------------------------------------
@pytest.fixture
def read_rows_outcomes(monkeypatch):
    """How every read_rows call in this process went, in order."""
    outcomes = []
    real = _parquet_direct.read_rows

    def recording(*args, **kwargs):
        rows = real(*args, **kwargs)
        outcomes.append(_parquet_direct.last_outcome["outcome"])
        return rows

    monkeypatch.setattr(_parquet_direct, "read_rows", recording)
    return outcomes


def test_featurize_from_the_fast_path(tmp_path, read_rows_outcomes):
    """The store of featurize(read_parquet(...)) holds GCWS's features of the rows pyarrow reads,
    and the labels; every partition came through the fast path."""
    spec = [(f"c{j}", F32, ("runs", "random", "const")[j % 3], "none" if j % 2 else "required") for j in range(6)]
    table, rows, _ = make_table(spec, 400, seed=11)
    rows = np.abs(rows)  # GCWS takes nonnegative input
    table = pa.Table.from_arrays([pa.array(rows[:, j]) for j in range(6)] + [pa.array(np.arange(400) % 3)],
                                 schema=table.schema.append(pa.field("y", pa.int64())))
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=50, compression="snappy")
    X, y = read_parquet(path, label="y", block_rows=100)
    m = GCWS(n_components=16, seed=0).fit(rows[:1])
    with dask.config.set(scheduler="synchronous"):
        store = featurize(X, m, labels=y, store=str(tmp_path / "s.zarr"), progress=False)
    assert read_rows_outcomes == ["decoded"] * 4
    assert np.array_equal(store.features[:].compute(), m.transform_block(rows))
    assert np.array_equal(store.features[:].compute(), m.transform_block(tabular._to_rows(pq.read_table(path).select(
        [s[0] for s in spec]), 400, np.float32)))
    assert np.array_equal(np.asarray(store.labels[:].compute()), np.arange(400) % 3)


def test_a_null_read_by_the_fast_path_is_refused_naming_file_row_and_column(tmp_path, read_rows_outcomes):
    n = 90
    rows = np.random.default_rng(4).random((n, 4)).astype(F32)
    mask = np.zeros(n, bool)
    mask[61] = True
    table = pa.table({f"c{j}": pa.array(rows[:, j], mask=mask if j == 2 else None) for j in range(4)})
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=25, compression="snappy")
    m = GCWS(n_components=16, seed=0).fit(np.zeros((1, 4)))
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(InputValueError, match=re.escape(f"in row 61 of {path}, column 2;")) as e:
            featurize(read_parquet(path, block_rows=30), m, store=str(tmp_path / "s.zarr"), progress=False)
    assert (e.value.row, e.value.column) == (61, 2)
    assert "decoded" in read_rows_outcomes and set(read_rows_outcomes) == {"decoded"}, read_rows_outcomes


def test_a_big_endian_host_reads_through_pyarrow(tmp_path, monkeypatch):
    """The decoder loads Parquet's little-endian values with native loads: on a big-endian host
    (``NATIVE`` False) it does not run, and pyarrow reads the same rows."""
    from dask_kernels.io import _parquet_pages

    x = np.arange(12, dtype=F32).reshape(6, 2)
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"a": x[:, 0], "b": x[:, 1]}), path)
    monkeypatch.setattr(_parquet_pages, "NATIVE", False)
    task, parts = parquet_reader(read_parquet(path))
    assert np.array_equal(task(*parts[0]), x)
    assert _parquet_direct.last_outcome["outcome"] == "byte order"
