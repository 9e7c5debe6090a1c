"""Crafted Parquet files: read_parquet gives pyarrow's rows or one clear error naming the file and
the row group, never a crash, never other rows, never a huge allocation.

Each file is written by pyarrow and patched in place (``_parquet_craft``): footer row counts of
-1, 99 of 100, 2**31 and 2**40; a column chunk's value count of 0 or -1; a flipped repetition
type; dictionary indices of bit width 0 in a run of 2**31; a Snappy preamble 6 or 10 bytes long;
a page header field written with the long-form id 65538 (which pyarrow's Thrift reader takes as
field 2). Each is read in a subprocess (so a crash fails the test instead of killing pytest)
whose address space is capped at 6 GiB (an allocation sized by a footer's row count fails there).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _parquet_craft import (I32, Field, chunk_meta, field, footer, page_headers, row_groups, schema_elements,
                            set_body, set_header, with_footer)
from dask_kernels.io import ParquetFormatError, parquet, read_parquet

N = 100


def _base(path, nullable=True, dictionary=False, compression="none"):
    """Two float32 columns of 100 rows, one row group, data pages v1; the file's bytes."""
    x = np.arange(N, dtype=np.float32) * 0.5
    fields = [pa.field("a", pa.float32(), nullable=nullable), pa.field("b", pa.float32(), nullable=nullable)]
    table = pa.Table.from_arrays([pa.array(x), pa.array(x % 2)], schema=pa.schema(fields))
    pq.write_table(table, path, compression=compression, use_dictionary=dictionary, data_page_version="1.0")
    with open(path, "rb") as f:
        return f.read()


def _num_rows(rows, values=None):
    """The footer's row count (the file's and its row group's); the column chunks' value counts
    too when ``values`` is given."""
    def craft(path):
        raw = _base(path)
        _, meta = footer(raw)
        field(meta, 3).value = field(row_groups(meta)[0], 3).value = rows
        if values is not None:
            for c in (0, 1):
                field(chunk_meta(meta, 0, c), 5).value = values
        return with_footer(raw, meta)
    return craft


def _num_values(values):  # ColumnMetaData.num_values of column a
    def craft(path):
        raw = _base(path)
        _, meta = footer(raw)
        field(chunk_meta(meta, 0, 0), 5).value = values
        return with_footer(raw, meta)
    return craft


def _repetition(nullable, to):  # SchemaElement.repetition_type of column a: 0 required, 1 optional
    def craft(path):
        raw = _base(path, nullable=nullable)
        _, meta = footer(raw)
        field(schema_elements(meta)[1], 3).value = to
        return with_footer(raw, meta)
    return craft


def _data_page(raw):
    """``(header start, header, body start, body end)`` of column a's first data page."""
    return next(p for p in page_headers(raw) if field(p[1], 1).value == 0)


def _dictionary_bit_width_0(path):
    """Column a's dictionary indices (bit width 1, bit-packed) rewritten as bit width 0 and one RLE
    run of 2**31 indices (a varint of 5 bytes), the page's size kept."""
    raw = bytearray(_base(path, nullable=False, dictionary=True))
    _, _, b0, b1 = _data_page(raw)
    assert raw[b0] == 7  # 100 distinct values: indices of 7 bits
    raw[b0:b0 + 6] = bytes([0, 0x80, 0x80, 0x80, 0x80, 0x10])  # width 0; run header 2**32 = 2**31 << 1
    assert len(raw) == len(_base(path, nullable=False, dictionary=True))
    return bytes(raw)


def _snappy_preamble(length):
    """Column a's Snappy page with its preamble (the uncompressed length) written in ``length``
    bytes: a ULEB128 padded with continuation bytes, which Snappy does not allow past 5."""
    def craft(path):
        raw = _base(path, compression="snappy")
        start, _, b0, b1 = _data_page(raw)
        body = raw[b0:b1]
        value, p = 0, 0
        while True:
            value |= (body[p] & 0x7F) << (7 * p)
            p += 1
            if body[p - 1] < 0x80:
                break
        groups = [(value >> (7 * k)) & 0x7F for k in range(length)]
        assert value >> (7 * length) == 0
        preamble = bytes(g | 0x80 for g in groups[:-1]) + bytes(groups[-1:])
        return set_body(raw, start, preamble + body[p:])
    return craft


def _long_field_id(fid, value, dictionary):
    """A field ``fid`` (long form) after field ``fid & 0xFFFF`` of column a's first data page's
    DataPageHeader: pyarrow reads it as that field again (the later value wins)."""
    def craft(path):
        raw = _base(path, dictionary=dictionary)
        start, header, _, _ = _data_page(raw)
        sub = field(header, 5).value
        k = next(i for i, f in enumerate(sub) if f.fid == fid & 0xFFFF)
        sub.insert(k + 1, Field(fid, I32, value, long=True))
        return set_header(raw, start, header)
    return craft


CASES = {
    "footer-num-rows--1": _num_rows(-1),
    "footer-num-rows-99-of-100": _num_rows(99),
    "footer-num-rows-2^31": _num_rows(2 ** 31),
    "footer-num-rows-and-num-values-2^31": _num_rows(2 ** 31, values=2 ** 31),
    "footer-num-rows-2^40": _num_rows(2 ** 40),
    "column-num-values-0": _num_values(0),
    "column-num-values--1": _num_values(-1),
    "repetition-optional-to-required": _repetition(True, 0),
    "repetition-required-to-optional": _repetition(False, 1),
    "dictionary-bit-width-0-run-2^31": _dictionary_bit_width_0,
    "snappy-preamble-6-bytes": _snappy_preamble(6),
    "snappy-preamble-10-bytes": _snappy_preamble(10),
    "long-field-id-65538-encoding-plain-on-dictionary-page": _long_field_id(65538, 0, dictionary=True),
    "long-field-id-65537-num-values-50": _long_field_id(65537, 50, dictionary=False),
}

# the reader, in a process of its own with at most 6 GiB of address space: each file's outcome
# on a line of its own, written before the next file is read
_READ = r'''
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
import numpy as np
import dask_kernels.maps.base  # noqa: F401  (import order)
from dask_kernels import read_parquet

for path in sys.argv[1:]:
    try:
        rows = read_parquet(path).compute(scheduler="synchronous")
        np.save(path + ".npy", rows)
        out = {"rows": path + ".npy"}
    except Exception as e:
        out = {"error": type(e).__name__, "message": str(e)}
    print(json.dumps({"path": path, **out}), flush=True)
'''


def _read_in_subprocess(paths):
    """``{path: outcome}`` of reading each file with read_parquet in a subprocess; a file whose
    read killed the process gets ``{"died": exit code, "stderr": ...}`` and the rest are read in
    a new process."""
    results = {}
    while len(results) < len(paths):
        todo = [p for p in paths if p not in results]
        r = subprocess.run([sys.executable, "-c", _READ, *todo], capture_output=True, text=True, timeout=600)
        for line in r.stdout.splitlines():
            if line.startswith("{"):
                got = json.loads(line)
                results[got.pop("path")] = got
        if r.returncode != 0:
            results[next(p for p in todo if p not in results)] = {"died": r.returncode, "stderr": r.stderr[-2000:]}
    return results


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    """``{case: (path, outcome)}``: every crafted file, read in one subprocess."""
    d = tmp_path_factory.mktemp("crafted")
    paths = {}
    for case, craft in CASES.items():
        path = str(d / f"{case}.parquet")
        raw = craft(path)
        with open(path, "wb") as f:
            f.write(raw)
        paths[case] = path
    results = _read_in_subprocess(list(paths.values()))
    return {case: (path, results[path]) for case, path in paths.items()}


def _pyarrows_rows(path):
    """pyarrow's rows of the file (its columns as float32 rows), or None if it refuses it."""
    try:
        table = pq.read_table(path)
    except Exception:  # noqa: BLE001 - whatever pyarrow raises: it refuses the file
        return None
    return np.column_stack([c.to_numpy(zero_copy_only=False) for c in table.columns]).astype(np.float32)


def _check(path, got):
    """pyarrow's rows, bitwise, or a ParquetFormatError naming the file and the row group."""
    assert "died" not in got, f"the reading process died (exit {got.get('died')}):\n{got.get('stderr')}"
    if "rows" in got:
        want = _pyarrows_rows(path)
        assert want is not None, "rows of a file pyarrow refuses"
        rows = np.load(got["rows"])
        assert rows.dtype == want.dtype and rows.shape == want.shape and rows.tobytes() == want.tobytes(), \
            "other rows than pyarrow's"
    else:
        assert got["error"] == "ParquetFormatError", got
        assert path in got["message"] and "row group 0" in got["message"], got


@pytest.mark.parametrize("case", list(CASES))
def test_crafted_file_gives_pyarrows_rows_or_an_error_naming_file_and_row_group(crafted, case):
    path, got = crafted[case]
    _check(path, got)
    # each of these is damage pyarrow refuses, or a footer that disagrees with the pages
    assert "error" in got, f"rows returned: {got}"


def test_the_patching_itself_keeps_a_file_pyarrow_reads(tmp_path):
    """The control: a field rewritten with its own value, in long form (id 65538, which pyarrow
    reads as field 2, the page's encoding), and a footer rewritten unchanged: read_parquet gives
    pyarrow's rows, which are the rows written."""
    path = str(tmp_path / "t.parquet")
    raw = _long_field_id(65538, 0, dictionary=False)(path)  # PLAIN, as the field already says
    _, meta = footer(raw)
    raw = with_footer(raw, meta)
    with open(path, "wb") as f:
        f.write(raw)
    got = _read_in_subprocess([path])[path]
    _check(path, got)
    x = np.arange(N, dtype=np.float32) * 0.5
    assert np.array_equal(np.load(got["rows"]), np.column_stack([x, x % 2]))


def test_a_row_group_too_large_for_a_task_is_refused_before_any_task(tmp_path, monkeypatch):
    """The footer's row counts bound what a task allocates: a row group whose rows would exceed
    MAX_PARTITION_BYTES is refused by read_parquet itself, naming the file and the row group."""
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"a": np.arange(300.0), "b": np.ones(300)}), path, row_group_size=100)
    assert read_parquet(path).shape == (300, 2)
    monkeypatch.setattr(parquet, "MAX_PARTITION_BYTES", 100 * 2 * 8 - 1)  # one row group, less a byte
    with pytest.raises(ParquetFormatError, match=rf"{path}: row group 0: its footer gives 100 rows, .* smaller row gr"):
        read_parquet(path)


def test_pyarrows_error_names_the_file_and_row_group_and_a_changed_file_is_input_changed(tmp_path):
    """A row group pyarrow cannot read raises ParquetFormatError naming it (here the second of
    three, in a task reading two); a file rewritten after read_parquet looked at it raises
    InputChangedError instead, even where its new bytes are unreadable."""
    from dask_kernels.io import InputChangedError

    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"a": np.arange(300, dtype=np.float32)}), path, row_group_size=100, compression="none",
                   use_dictionary=False)
    with open(path, "rb") as f:
        good = f.read()
    start = pq.ParquetFile(path).metadata.row_group(1).column(0).data_page_offset
    bad = bytearray(good)
    assert bad[start] == 0x15  # the page header's first field: PageHeader.type, an i32
    bad[start] = 0x18  # ... now a binary: a required field missing
    with open(path, "wb") as f:
        f.write(bytes(bad))
    X = read_parquet(path, block_rows=200)
    with pytest.raises(ParquetFormatError, match=rf"^{path}: row group 1: pyarrow cannot read it"):
        X.compute(scheduler="synchronous")

    with open(path, "wb") as f:
        f.write(good)
    X = read_parquet(path, block_rows=200)
    os.utime(path, ns=(0, 0))  # the same bytes, another modification time: another file version
    with pytest.raises(InputChangedError, match="changed while the job was reading it"):
        X.compute(scheduler="synchronous")
    with open(path, "wb") as f:
        f.write(bytes(bad))
    with pytest.raises(InputChangedError, match="changed while the job was reading it"):
        X.compute(scheduler="synchronous")
