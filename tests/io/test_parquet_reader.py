"""How read_parquet reads: the footer once per process, small tasks, exact rows from every path.

What the Parquet row of benchmarks/bench_pipeline.py depends on, asserted without timing.
"""

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dask._task_spec import DataNode, Task

from dask_kernels import GCWS, featurize, read_parquet
from dask_kernels.io import _layers, parquet

RNG = np.random.default_rng(11)


def _write(path, X, row_group_size, nulls=()):
    cols = {}
    for j in range(X.shape[1]):
        mask = np.zeros(len(X), bool)
        for i, jj in nulls:
            mask[i] = mask[i] or jj == j
        cols[f"c{j}"] = pa.array(X[:, j], mask=mask)
    pq.write_table(pa.table(cols), path, row_group_size=row_group_size, compression="snappy")
    return path


@pytest.fixture
def footer_parses(monkeypatch):
    """Counts parses of a Parquet footer (pyarrow.parquet.ParquetFile opened without metadata=)."""
    calls = []
    real = pq.ParquetFile

    def counting(source, *args, **kwargs):
        if kwargs.get("metadata") is None:
            calls.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", counting)
    parquet._metadata.cache_clear()
    yield calls
    parquet._metadata.cache_clear()


def test_footer_is_parsed_once_per_process(tmp_path, footer_parses):
    """read_parquet reads the footer for the row counts and every task needs it to decode its
    row groups: one parse in this process serves both (a footer has an entry per row group and
    column: 4.8 MB and 160 ms for 64 row groups of 784 columns)."""
    X = RNG.random((400, 5))
    p = _write(str(tmp_path / "t.parquet"), X, row_group_size=50)
    with dask.config.set(scheduler="synchronous"):
        R = read_parquet(p, block_rows=100)
        assert np.array_equal(R.compute(), X)
    assert len(footer_parses) == 1


def test_tasks_do_not_carry_the_column_names(tmp_path):
    """A task is (reader, file, row groups, rows, identity): the column list lives in the reader,
    once, instead of in every task where dask walks it element by element."""
    X = RNG.random((60, 300)).astype(np.float32)
    p = _write(str(tmp_path / "wide.parquet"), X, row_group_size=20)
    R = read_parquet(p, block_rows=20)
    graph = dict(R.__dask_graph__())
    assert len(graph) == 3

    def strings(obj):  # the strings of a task's arguments, through dask's task spec nodes
        if isinstance(obj, str):
            return 1
        if isinstance(obj, Task):
            return sum(strings(a) for a in obj.args) + sum(strings(v) for v in obj.kwargs.values())
        if isinstance(obj, DataNode):
            return strings(obj.value)
        if isinstance(obj, (list, tuple)):
            return sum(strings(o) for o in obj)
        return 0

    for task in graph.values():
        assert strings(task) == 1  # the file's URL only, not 300 column names
    assert R.dtype == np.float32 and np.array_equal(R.compute(scheduler="synchronous"), X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_exact_across_row_groups_with_nulls_refused_by_row_and_column(tmp_path, dtype):
    """The columns-to-rows fast path (every column of the output dtype: Arrow's column-major
    copy, then one transpose) gives the exact rows across several row groups per partition; a null becomes NaN
    and featurizing refuses it naming the global row and the column."""
    X = (RNG.random((230, 7)) * (RNG.random((230, 7)) < 0.3)).astype(dtype)
    p = _write(str(tmp_path / "t.parquet"), X, row_group_size=30)
    R = read_parquet(p, block_rows=100)  # runs of 4 row groups: several record batches per task
    assert R.chunks[0] == (120, 110) and R.dtype == dtype
    assert np.array_equal(R.compute(scheduler="synchronous"), X)
    assert R.compute(scheduler="synchronous").flags.c_contiguous

    q = _write(str(tmp_path / "nulls.parquet"), X, row_group_size=30, nulls=[(157, 4)])
    m = GCWS(n_components=16, seed=0).fit(X[:1])
    with pytest.raises(ValueError, match=r"row 157.*column 4|column 4.*row 157"):
        featurize(read_parquet(q, block_rows=100), m).compute(scheduler="synchronous")


def test_mixed_column_types_take_the_general_path(tmp_path):
    """Integers, booleans and float32 together: float64 rows, column by column, exact."""
    n = 90
    t = pa.table({"i": pa.array(np.arange(n, dtype=np.int64) * 3),
                  "b": pa.array(np.arange(n) % 2 == 0),
                  "f": pa.array(np.linspace(0, 1, n, dtype=np.float32))})
    p = str(tmp_path / "mixed.parquet")
    pq.write_table(t, p, row_group_size=40)
    R = read_parquet(p, block_rows=40).compute(scheduler="synchronous")
    want = np.column_stack([np.arange(n) * 3.0, (np.arange(n) % 2 == 0).astype(float),
                            np.linspace(0, 1, n, dtype=np.float32).astype(np.float64)])
    assert R.dtype == np.float64 and np.array_equal(R, want)


@pytest.fixture
def row_group_reads(monkeypatch):
    """Records the columns of every read of a row group (pyarrow's ``read_row_group``)."""
    calls = []
    real = pq.ParquetFile.read_row_group

    def counting(self, i, columns=None, **kwargs):
        calls.append(list(columns))
        return real(self, i, columns=columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", counting)
    return calls


@pytest.mark.parametrize("block_rows, shards", [(100, None), (100, 2), (50, None), (50, 2)])
def test_featurize_with_a_label_reads_each_partition_once(tmp_path, row_group_reads, block_rows, shards):
    """Rows and labels of one partition come from one task: one read of each of its row groups
    (the features and the label column together), not one task per array; the store holds the same features, labels
    and row ids. Store blocks that are the partitions take the pair from the joint read in the
    write task itself (row_label_pairs); smaller blocks split the partitions (read_together, then a
    rechunk). The labels alone still read only the label column."""
    X = (RNG.random((250, 6)) * (RNG.random((250, 6)) < 0.5)).astype(np.float32)
    labels = np.arange(250) % 3
    t = pa.table({**{f"c{j}": X[:, j] for j in range(6)}, "y": labels})
    p = str(tmp_path / "t.parquet")
    pq.write_table(t, p, row_group_size=50)
    R, y = read_parquet(p, label="y", block_rows=100)  # 3 partitions of 2 row groups (the last 1)
    m = GCWS(n_components=16, seed=0).fit(X[:1])
    ids = np.arange(250) * 7 + 10**9
    with dask.config.set(scheduler="synchronous"):
        store = featurize(R, m, labels=y, row_ids=ids, store=str(tmp_path / "s.zarr"), block_rows=block_rows,
                          shards=shards, progress=False)
    assert row_group_reads == [[*(f"c{j}" for j in range(6)), "y"]] * 5  # 5 row groups, each read once
    assert np.array_equal(store.features[:].compute(), m.transform_block(X))
    assert np.array_equal(np.asarray(store.labels[:].compute()), labels)
    assert np.array_equal(np.asarray(store.row_ids[:].compute()), ids)

    del row_group_reads[:]
    assert np.array_equal(y.compute(scheduler="synchronous"), labels)
    assert row_group_reads == [["y"]] * 5


def test_read_together_keeps_keys_and_leaves_other_inputs_alone(tmp_path):
    """Only the read layers are replaced (same names and chunks, same values); arrays not from
    read_parquet, or of other partitions, are returned as they are."""
    X = RNG.random((120, 4))
    t = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": X[:, 3]})
    p = str(tmp_path / "t.parquet")
    pq.write_table(t, p, row_group_size=40)
    R, y = read_parquet(p, label="y", block_rows=40)
    R2, y2 = _layers.read_together(R, y)
    assert (R2.name, R2.chunks, y2.name, y2.chunks) == (R.name, R.chunks, y.name, y.chunks)
    got = dask.compute(R2, y2, scheduler="synchronous")
    assert np.array_equal(got[0], X[:, :3]) and np.array_equal(got[1], X[:, 3])
    other, _ = read_parquet(p, label="y", block_rows=80)  # other partitions: two reads stay two
    assert _layers.read_together(other, y) == (other, y)
    plain = dask.array.from_array(X[:, :3], chunks=40)
    assert _layers.read_together(plain, y) == (plain, y)


def test_training_from_parquet_reads_each_block_once(tmp_path, row_group_reads):
    """fit_incremental on read_parquet rows and labels reads a block's feature columns and label
    column in one task (they were two tasks: the rows, then the label column alone), and trains
    the same model as from the same rows and labels in memory."""
    from sklearn.linear_model import SGDClassifier

    from dask_kernels import fit_incremental

    X = (RNG.random((240, 6)) * (RNG.random((240, 6)) < 0.5)).astype(np.float32)
    labels = (X[:, 0] > X[:, 1]).astype(np.int64)
    t = pa.table({**{f"c{j}": X[:, j] for j in range(6)}, "y": labels})
    p = str(tmp_path / "t.parquet")
    pq.write_table(t, p, row_group_size=40)
    R, y = read_parquet(p, label="y", block_rows=80)  # 3 partitions of 2 row groups
    m = GCWS(n_components=16, seed=0).fit(X[:1])
    kw = dict(feature_map=m, epochs=2, validation_fraction=None, prefetch=False, progress=False,
              early_stopping=False, classes=[0, 1])
    with dask.config.set(scheduler="synchronous"):
        model = fit_incremental(SGDClassifier(random_state=0), R, y, **kw)
    one = [[*(f"c{j}" for j in range(6)), "y"]]
    assert len(row_group_reads) >= 6 and row_group_reads == one * len(row_group_reads)
    want = fit_incremental(SGDClassifier(random_state=0), dask.array.from_array(X, chunks=80),
                           dask.array.from_array(labels, chunks=80), **kw)
    assert np.array_equal(model.predict(X), want.predict(X))


def test_a_stored_dataframe_index_is_not_a_feature(tmp_path):
    """pandas stores a non-range index as a column (``__index_level_0__``, or its name) and dask's
    to_parquet stores ``__null_dask_index__``: listed in the file's pandas metadata as the index,
    they are not features by default (they were: a row's position became a feature). Named in
    ``columns=``, an index column is read like any other."""
    import dask.dataframe as dd
    import pandas as pd

    X = RNG.random((40, 3))
    df = pd.DataFrame(X, columns=["a", "b", "c"], index=np.arange(100, 140))
    df.to_parquet(tmp_path / "pandas.parquet")
    named = df.rename_axis("id")
    named.to_parquet(tmp_path / "named.parquet")
    dd.from_pandas(df.reset_index(drop=True), npartitions=2).to_parquet(tmp_path / "dask")
    for path in (tmp_path / "pandas.parquet", tmp_path / "named.parquet", tmp_path / "dask"):
        R = read_parquet(str(path))
        assert R.shape == (40, 3), path
        assert np.array_equal(R.compute(), X), path
    R = read_parquet(str(tmp_path / "named.parquet"), columns=["id", "a"])
    assert np.array_equal(R.compute(), np.column_stack([np.arange(100, 140), X[:, 0]]))


def test_the_read_layer_is_not_tokenized_part_by_part():
    """Dask names a Blockwise layer's block arguments by tokenizing them (pickling each object
    that has no ``__dask_tokenize__``); read_parquet's layer is named by its own name (which
    hashes every file's path, size and modification time), so building it does not walk its
    parts (2 s per 100,000 partitions when it did)."""
    seen = []

    class Counted:
        def __reduce__(self):
            seen.append(1)
            return (Counted, ())

    parts = [("f.parquet", (i,), 10, Counted()) for i in range(100)]
    A = parquet._array("parquet-test", parts, None, ["a", "b"], np.float32)
    assert A.numblocks == (100, 1)
    assert seen == []
    found = _layers._reader_layer(A)
    assert found is not None and found[2] == parts


def _chunk_files(array_dir):
    """``{relative path: bytes}`` of every chunk (or shard) object of a Zarr array."""
    return {str(q.relative_to(array_dir)): q.read_bytes() for q in (array_dir / "c").rglob("*") if q.is_file()}


@pytest.mark.parametrize("shards", [None, 2])
def test_a_resumed_parquet_job_with_labels_rewrites_only_the_lost_blocks_bitwise(tmp_path, shards):
    """A block lost mid-job (its done record and its features gone) is recomputed on resume from
    the rows-and-labels pairs of the joint read, to the same bytes; the other blocks are kept."""
    import zarr

    X = (RNG.random((400, 5)) * (RNG.random((400, 5)) < 0.6)).astype(np.float32)
    labels = np.arange(400) % 4
    p = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({**{f"c{j}": X[:, j] for j in range(5)}, "y": labels}), p, row_group_size=50)
    R, y = read_parquet(p, label="y", block_rows=50)
    m = GCWS(n_components=16, seed=3).fit(X[:1])
    out = str(tmp_path / "s.zarr")
    with dask.config.set(scheduler="synchronous"):
        first = featurize(R, m, labels=y, store=out, shards=shards, progress=False)
        stored = _chunk_files(tmp_path / "s.zarr" / "features")
        assert len(stored) == (4 if shards else 8)
        g = zarr.open_group(out, mode="r+", use_consolidated=False)
        lost = [2, 3] if shards else [5]  # a whole shard, or one block
        for i in lost:
            g["done"][i] = 0
        g["features"][lost[0] * 50:(lost[-1] + 1) * 50] = 0
        g["labels"][lost[0] * 50:(lost[-1] + 1) * 50] = -1
        g.attrs["complete"] = False
        again = featurize(R, m, labels=y, store=out, shards=shards, progress=False)
    assert first.run_stats == {"computed": 8, "skipped": 0}
    assert again.run_stats == {"computed": len(lost), "skipped": 8 - len(lost)}
    assert _chunk_files(tmp_path / "s.zarr" / "features") == stored
    assert np.array_equal(again.features[:].compute(), m.transform_block(X))
    assert np.array_equal(np.asarray(again.labels[:].compute()), labels) and again.verify_blocks() == {}


# the float32 and float64 values whose bits must survive: NaN with a payload, +-inf, -0.0,
# subnormals, the largest values
_SPECIAL32 = np.array([0x7FC12345, 0xFF800000, 0x7F800000, 0x80000000, 0x00000001, 0x7F7FFFFF, 0xFF7FFFFF],
                      np.uint32).view(np.float32)
_SPECIAL64 = np.array([0x7FF8000000012345, 0xFFF0000000000000, 0x7FF0000000000000, 0x8000000000000000, 1,
                       0x7FEFFFFFFFFFFFFF], np.uint64).view(np.float64)


@pytest.mark.parametrize("options", [
    dict(compression="snappy", use_dictionary=True, data_page_version="1.0"),
    dict(compression="none", use_dictionary=False, data_page_version="2.0", data_page_size=256),
    dict(compression="zstd", use_dictionary=["a"], data_page_version="1.0", dictionary_pagesize_limit=256),
    dict(compression="gzip", use_dictionary=False, use_byte_stream_split=True),
], ids=["dict-snappy-v1", "plain-none-v2-small-pages", "dict-overflow-zstd", "byte-stream-split-gzip"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_are_the_values_written_bitwise_in_every_encoding_and_codec(tmp_path, options, dtype):
    """Special values keep their bits, nulls (some, all) read as NaN, required and nullable
    columns, several row groups per partition and partitions per file: the rows are the values
    written, whatever the writer's encoding, codec and page version."""
    n = 500
    rng = np.random.default_rng(3)
    special = _SPECIAL32 if dtype == np.float32 else _SPECIAL64
    a = rng.standard_normal(n).astype(dtype)
    a[:len(special)] = special
    b = np.round(rng.random(n), 1).astype(dtype)  # few distinct values: runs in the dictionary indices
    c = rng.standard_normal(n).astype(dtype)
    m = rng.random(n) < 0.1
    schema = pa.schema([pa.field("a", pa.from_numpy_dtype(dtype), nullable=False),
                        pa.field("b", pa.from_numpy_dtype(dtype)), pa.field("c", pa.from_numpy_dtype(dtype))])
    table = pa.Table.from_arrays([pa.array(a), pa.array(b, mask=m), pa.nulls(n, pa.from_numpy_dtype(dtype))],
                                 schema=schema)
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=120, **options)
    X = read_parquet(path, block_rows=250)
    assert X.chunks[0] == (360, 140) and X.dtype == dtype
    got = X.compute(scheduler="synchronous")
    want = np.column_stack([a, np.where(m, np.nan, b).astype(dtype), np.full(n, np.nan, dtype)])
    assert got.tobytes() == want.tobytes()


def test_a_folder_a_column_subset_in_another_order_and_a_label(tmp_path):
    """Files of 130, 90 and 200 rows: partitions never span two files; columns=["d", "a"] keeps
    that order and float32 (the unselected float64 column does not widen the rows); the integer
    label keeps its dtype, read alone and jointly with the rows (as featurize reads them)."""
    d = tmp_path / "d"
    d.mkdir()
    rng = np.random.default_rng(7)
    rows, labels = [], []
    for k, n in enumerate((130, 90, 200)):
        x = rng.random((n, 4)).astype(np.float32)
        y = rng.integers(-5, 5, n)
        pq.write_table(pa.table({"a": x[:, 0], "b": x[:, 1].astype(np.float64), "c": x[:, 2], "d": x[:, 3], "y": y}),
                       str(d / f"part-{k}.parquet"), row_group_size=40)
        rows.append(x[:, [3, 0]])
        labels.append(y)
    X, Y = read_parquet(str(d), columns=["d", "a"], label="y", block_rows=80)
    assert X.dtype == np.float32 and Y.dtype == np.int64
    assert X.chunks[0] == (80, 50, 80, 10, 80, 80, 40)
    Xj, Yj = _layers.read_together(X, Y)
    got = dask.compute(X, Y, Xj, Yj, scheduler="synchronous")
    for g, want in zip(got, (np.concatenate(rows), np.concatenate(labels)) * 2):
        assert g.dtype == want.dtype and np.array_equal(g, want)


def test_threads_reading_at_once_each_get_their_own_rows(tmp_path):
    """Tasks of two files (other row counts and dtypes) run by four threads at once, many times
    over, each give their own partition's rows."""
    from concurrent.futures import ThreadPoolExecutor

    parts, wants = [], []
    for k, (n, dtype, group) in enumerate([(3000, np.float32, 1000), (2100, np.float64, 700)]):
        x = np.round(RNG.random((n, 20)), 2).astype(dtype)
        path = str(tmp_path / f"t{k}.parquet")
        pq.write_table(pa.table({f"c{j}": x[:, j] for j in range(20)}), path, row_group_size=group)
        _, task, ps, _ = _layers._reader_layer(read_parquet(path, block_rows=group))
        for i, part in enumerate(ps):
            parts.append((task, part))
            wants.append(x[i * group:(i + 1) * group])

    def read(i):
        task, part = parts[i % len(parts)]
        return i % len(parts), task(*part)

    with ThreadPoolExecutor(4) as pool:
        for i, got in pool.map(read, range(20 * len(parts))):
            assert got.dtype == wants[i].dtype and np.array_equal(got, wants[i])


def test_a_folder_of_twelve_parts_reads_in_dasks_order(tmp_path):
    """dask writes part.0 ... part.11: read as sorted text (part.10 before part.2), the rows and
    so predictions written without a row column did not line up with dask's read of the folder."""
    import dask.dataframe as dd
    import pandas as pd

    frame = pd.DataFrame({"a": np.arange(120.0), "y": np.arange(120) % 3})
    dd.from_pandas(frame, npartitions=12).to_parquet(str(tmp_path / "p"), write_index=False)
    X, y = read_parquet(str(tmp_path / "p"), label="y")
    expected = dd.read_parquet(str(tmp_path / "p")).compute()
    assert X.compute()[:, 0].tolist() == expected["a"].tolist() == frame["a"].tolist()
    assert y.compute().tolist() == expected["y"].tolist()
    assert read_parquet(str(tmp_path / "p" / "*.parquet")).compute()[:, 0].tolist() == frame["a"].tolist()
