"""read_parquet's fast path on damaged files: never a crash, never a read or write outside its
buffers, always pyarrow's rows or pyarrow's error.

* damaged column chunks (hundreds of seeded mutations, the footer intact) never crash the
  process nor read or write out of bounds (a run compiled with ``NUMBA_BOUNDSCHECK=1``), and the
  rows are pyarrow's or pyarrow's error: in subprocesses, so a segfault fails the test;
* damage pyarrow refuses is refused by the fast path too (page headers missing a required field
  or with one of another type, negative counts, definition levels above the maximum).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _parquet_files import F32, chunk_ranges, file_pages, parquet_reader, small_files, thrift_struct
from dask_kernels import read_parquet
from dask_kernels.io import _parquet_direct

# the checker run in a subprocess, so that a segfault fails the test instead of killing pytest
_DAMAGED = r'''
import json, os, sys
import fsspec, numpy as np, pyarrow.parquet as pq
from dask_kernels import read_parquet
from dask_kernels.io import tabular, _parquet_direct as direct, _parquet_pages as pages

with open(sys.argv[1]) as f:
    manifest = json.load(f)
if manifest["boundscheck"]:  # the variable took effect: an out-of-bounds index raises
    import numba
    assert numba.config.BOUNDSCHECK, "NUMBA_BOUNDSCHECK is not on"

    @numba.njit
    def _at(a, i):
        return a[i]

    try:
        _at(np.zeros(2), 5)
        raise AssertionError("no IndexError with NUMBA_BOUNDSCHECK=1")
    except IndexError:
        pass
fs = fsspec.filesystem("file")
statuses, outcomes, aligned = {}, {}, {}


def fail(path, what):
    sys.stderr.write(f"{path} ({manifest['what'].get(path)}): {what}\n")
    sys.exit(3)


for path in manifest["files"]:
    meta = pq.ParquetFile(path).metadata  # the footer is intact
    size = os.path.getsize(path)
    leaves = direct._leaves(meta)
    columns = list(meta.schema.names)
    picked = [leaves[c] for c in columns]
    index = [p[0] for p in picked]
    physical = np.array([p[1] for p in picked], np.int64)
    max_defs = np.array([p[2] for p in picked], np.int64)
    dtype = np.float32 if (physical == pages.FLOAT).all() else np.float64
    # 1. every row group straight through the decoder, as read_rows calls it, into rows with a
    #    sentinel row before and after (a write outside the output would change them)
    for g in range(meta.num_row_groups):
        layout = direct._layout(meta.row_group(g), index)
        buf, starts, ends = direct._fetch(fs, path, layout[0], layout[1], size)
        rows = meta.row_group(g).num_rows
        big = direct._aligned_empty((rows + 2, len(columns)), dtype)
        big[:] = 7
        part = big[1:-1]  # 16 float32 columns: rows of a cache line, non-temporal stores
        status, column = pages.decode_row_group(buf, starts, ends, physical, layout[2], max_defs, part,
                                                direct.line_aligned(part))
        aligned[direct.line_aligned(part)] = aligned.get(direct.line_aligned(part), 0) + 1
        status, column = int(status), int(column)
        if not ((status == pages.OK and column == -1) or (status < 0 and 0 <= column < len(columns))):
            fail(path, f"row group {g}: status {status}, column {column}")
        if not ((big[0] == 7).all() and (big[-1] == 7).all()):
            fail(path, f"row group {g}: rows outside the output written")
        statuses[status] = statuses.get(status, 0) + 1
        # each chunk alone, in a buffer of exactly its bytes (a read past the chunk's end is out
        # of bounds there): the same status, and the same values where it decoded
        for j in range(len(columns)):
            chunk = np.frombuffer(bytes(buf[starts[j]:ends[j]]), np.uint8)
            one = np.empty((rows, 1), dtype)
            alone, _ = pages.decode_row_group(chunk, np.zeros(1, np.int64), np.full(1, len(chunk), np.int64),
                                              physical[j:j + 1], layout[2][j:j + 1], max_defs[j:j + 1], one, False)
            expected = pages.OK if status == pages.OK or j < column else status if j == column else None
            if expected is not None and alone != expected:
                fail(path, f"row group {g}, column {j} alone: status {alone}, {expected} in the row group")
            if status == pages.OK and one.tobytes() != np.ascontiguousarray(part[:, j]).tobytes():
                fail(path, f"row group {g}, column {j} alone: other values than in the row group")
    # 2. the tasks: pyarrow's rows, or pyarrow's error
    X = read_parquet(path, block_rows=manifest["block_rows"])
    _, task, parts, _ = tabular._reader_layer(X)
    for part in parts:
        try:
            want, want_error = task.rows(task.table(*part, task.columns), part[2]), None
        except Exception as e:
            want, want_error = None, e
        direct.last_outcome["outcome"] = None
        try:
            got, got_error = task(*part), None
        except Exception as e:
            got, got_error = None, e
        outcome = direct.last_outcome["outcome"]
        outcomes[outcome == "decoded"] = outcomes.get(outcome == "decoded", 0) + 1
        if want_error is None:
            if got_error is not None:
                fail(path, f"pyarrow reads it, the task raised {got_error!r} ({outcome})")
            if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
                fail(path, f"rows differ from pyarrow's ({outcome})")
        elif got_error is not None:
            if type(got_error) is not type(want_error) or str(got_error) != str(want_error):
                fail(path, f"raised {got_error!r}, pyarrow raised {want_error!r} ({outcome})")
        else:
            fail(path, f"decoded ({outcome}) rows of a file pyarrow refuses: {want_error!r}")
kernel = next(f for f in (pages.decode_row_group, getattr(pages, "_decode_row_group", None)) if hasattr(f, "stats"))
stats = kernel.stats
print(json.dumps({"statuses": statuses, "decoded": outcomes.get(True, 0),
                  "aligned": {str(k): v for k, v in aligned.items()},
                  "not_decoded": outcomes.get(False, 0), "cache_hits": sum(stats.cache_hits.values()),
                  "cache_misses": sum(stats.cache_misses.values())}))
'''

def _mutations(sources, per_file, seed, out):
    """``per_file`` damaged copies of each source: bits flipped, bytes set (some in a chunk's last
    bytes), a page cut short (the rest of its chunk shifted, zeros at the chunk's end), a region
    zeroed, or garbage to the chunk's end (0x80 or 0xFF: varints that never end); half of them in
    a page header. Only inside column chunks: the footer stays intact. Returns the manifest."""
    rng = np.random.default_rng(seed)
    files, what = [], {}
    for s, src in enumerate(sources):
        raw = Path(src).read_bytes()
        chunks = [(a, b) for _, _, a, b in chunk_ranges(pq.ParquetFile(src).metadata)]
        headers = [(h0, h1) for chunk in file_pages(src).values() for *_, h0, h1 in chunk]
        for k in range(per_file):
            b = bytearray(raw)
            lo, hi = headers[rng.integers(len(headers))] if k % 2 else chunks[rng.integers(len(chunks))]
            chunk_end = next(e for a, e in chunks if a <= lo < e)
            if k % 2:
                kind = ("flip", "set", "cut", "zero", "end")[(k // 2) % 5]
            else:
                kind = ("flip", "set", "cut", "zero", "end", "tail")[(k // 2) % 6]
            if kind == "tail":  # the chunk's last bytes: a read past its end would follow
                kind, lo = "set", max(lo, hi - 24)
            if kind == "flip":
                for p in rng.integers(lo, hi, rng.integers(1, 4)):
                    b[p] ^= 1 << int(rng.integers(8))
            elif kind == "set":
                for p in rng.integers(lo, hi, rng.integers(1, 4)):
                    b[p] = int(rng.integers(256))
            elif kind == "cut":
                p, cut = int(rng.integers(lo, hi)), int(rng.integers(1, 24))
                b[p:chunk_end] = (bytes(b[p + cut:chunk_end]) + bytes(cut))[:chunk_end - p]
            elif kind == "zero":
                p = int(rng.integers(lo, hi))
                q = min(chunk_end, p + int(rng.integers(1, 64)))
                b[p:q] = bytes(q - p)
            else:  # "end": bytes that never end a varint, from here to the chunk's end
                p = int(rng.integers(lo, hi))
                b[p:chunk_end] = bytes([(0x80, 0xFF)[k % 4 // 2]]) * (chunk_end - p)
            assert len(b) == len(raw) and b[-8:] == raw[-8:]
            path = os.path.join(out, f"m{s}-{k}.parquet")
            with open(path, "wb") as f:
                f.write(bytes(b))
            files.append(path)
            what[path] = f"{kind} in {'a page header' if k % 2 else 'a chunk'} of {os.path.basename(src)}"
    return {"files": files, "what": what, "block_rows": 150}


def _run_damaged(tmp_path, per_file, seed, env, dtype64=True):
    d = tmp_path / "src"
    d.mkdir()
    out = tmp_path / "damaged"
    out.mkdir()
    manifest = _mutations(small_files(d, dtype64), per_file, seed, str(out))
    manifest["boundscheck"] = env.get("NUMBA_BOUNDSCHECK") == "1"
    mpath = str(tmp_path / "manifest.json")
    with open(mpath, "w") as f:
        json.dump(manifest, f)
    r = subprocess.run([sys.executable, "-c", _DAMAGED, mpath], env={**os.environ, **env}, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-3000:]}"
    report = json.loads(r.stdout.strip().splitlines()[-1])
    statuses = {int(k): v for k, v in report["statuses"].items()}
    # the mutations reach both outcomes: some still decode (values changed), most give up
    assert statuses.get(0, 0) > 0 and sum(v for k, v in statuses.items() if k < 0) > per_file // 2, statuses
    assert report["decoded"] > 0 and report["not_decoded"] > 0, report
    assert report["aligned"].get("True", 0) > 0, report  # the 16-column file: non-temporal stores
    return report


def test_damaged_chunks_never_crash_and_give_pyarrows_rows_or_error(tmp_path):
    """300 damaged copies of each of two files (about 2 s): no crash, every status OK or
    negative, nothing written outside the output, and each task gives pyarrow's rows or raises
    pyarrow's error."""
    _run_damaged(tmp_path, per_file=300, seed=20240611, env={})


def test_damaged_chunks_read_nothing_out_of_bounds(tmp_path):
    """The same with the kernels compiled with bounds checks (a fresh Numba cache, so they are
    compiled here): an out-of-bounds index inside the decoder raises IndexError, which fails the
    run. Float32 files only, and no LLVM optimization (the checks are in Numba's IR; it saves a
    third of the compile): one specialization to compile, about 15 s."""
    report = _run_damaged(tmp_path, per_file=250, seed=7, dtype64=False,
                          env={"NUMBA_BOUNDSCHECK": "1", "NUMBA_OPT": "0",
                               "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")})
    assert report["cache_hits"] == 0 and report["cache_misses"] > 0, report  # compiled with bounds checks


def _header_fields(path):
    """``(bytes, {field id path: (header byte position, compact type, value position)})`` of the
    first data page's header of the file's first column."""
    raw = bytearray(Path(path).read_bytes())
    fields = []
    thrift_struct(raw, pq.ParquetFile(path).metadata.row_group(0).column(0).data_page_offset, fields=fields)
    return raw, {f[0]: f[1:] for f in fields}


def _rename_rep_encoding(raw, fields):  # DataPageHeader.repetition_level_encoding (required): id 4 -> 8
    raw[fields[5, 4][0]] += 0x40


def _num_values_as_i64(raw, fields):  # DataPageHeader.num_values typed i64 instead of i32
    raw[fields[5, 1][0]] = (raw[fields[5, 1][0]] & 0xF0) | 6


def _negative_num_rows(raw, fields):  # DataPageHeaderV2.num_rows 10 -> -10 (zigzag 20 -> 19)
    raw[fields[8, 3][2]] -= 1


@pytest.mark.parametrize("damage, version", [(_rename_rep_encoding, "1.0"), (_num_values_as_i64, "1.0"),
                                             (_negative_num_rows, "2.0")],
                         ids=["v1-without-repetition-level-encoding", "v1-num-values-typed-i64",
                              "v2-negative-num-rows"])
def test_page_headers_pyarrow_refuses_are_not_decoded(tmp_path, damage, version):
    """A page header that pyarrow's Thrift reader refuses (a required field missing or of another
    type, a negative row count) should make the fast path give up too, so that the task raises
    pyarrow's error: results must not depend on which path ran."""
    x = np.arange(10, dtype=F32)
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"a": pa.array(x, mask=x == 3)}), path, use_dictionary=False, compression="none",
                   data_page_version=version)
    raw, fields = _header_fields(path)
    damage(raw, fields)
    _assert_both_refuse(path, raw, "page header")


def _assert_both_refuse(path, raw, match):
    """Write ``raw`` to ``path``: pyarrow refuses it with an error matching ``match``, and so does
    the task (its fast path gives up, then pyarrow raises)."""
    with open(path, "wb") as f:
        f.write(raw)
    task, parts = parquet_reader(read_parquet(path))
    with pytest.raises(OSError, match=match):
        task.table(*parts[0], task.columns)  # pyarrow refuses the file
    with pytest.raises(OSError, match=match):
        task(*parts[0])


def test_definition_levels_above_the_maximum_are_not_decoded(tmp_path):
    """A definition level above the column's maximum (1) is damage: pyarrow refuses the page
    ("Malformed levels"), and so must the fast path. (An early decoder took it as a present
    value counted that many times: it returned these 40 rows shifted by the 3 nulls, no NaN,
    and 3 rows of padding.)"""
    path = str(tmp_path / "t.parquet")
    x = np.arange(1, 41, dtype=F32)
    pq.write_table(pa.table({"a": pa.array(x, mask=np.arange(40) < 3)}), path, compression="none",
                   use_dictionary=True)
    raw = bytearray(Path(path).read_bytes())
    _, body = thrift_struct(raw, pq.ParquetFile(path).metadata.row_group(0).column(0).data_page_offset)
    assert raw[body:body + 8] == bytes([4, 0, 0, 0, 0x03, 0xF8, 0x40, 0x01])  # levels 0 0 0 1 1 1 1 1, 32 x 1
    raw[body + 7] = 2  # the run of 32 levels 1: levels 2
    _assert_both_refuse(path, raw, "Malformed levels")
    assert _parquet_direct.last_outcome["outcome"].startswith("status "), _parquet_direct.last_outcome
