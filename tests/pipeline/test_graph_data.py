"""What travels in the task graphs the package builds: labels, row ids, model coefficients and
fitted arrays are read per block by the tasks (a file NumPy maps) or are one key, never a copy
of the data per graph; so a graph's size does not grow with the number of rows.

Graph sizes are measured as ``len(cloudpickle.dumps(dict(graph)))`` of the materialized graph
(every task the scheduler receives, with its arguments). Each is measured at 10^5 and 10^6 rows
in the same number of blocks: the same size within :data:`SLACK` bytes (file names, numbers of
more digits), and below :data:`BOUND`. Before, ``--labels y.npy`` put the labels into the
featurize graph: 8 MB at 10^6 int64 labels ("Sending large graph" at 40 million rows: 305 MiB).
"""

import importlib
import threading
import tracemalloc

import cloudpickle
import numpy as np
import pandas as pd
import pytest

from dask_kernels import GCWS, featurize
from dask_kernels.io import read_npy

featurize_module = importlib.import_module("dask_kernels.pipeline.featurize")

#: graph bytes two row counts may differ by (in the same number of blocks)
SLACK = 2048
#: bytes of any graph below, whatever the number of rows (8 blocks; 10^6 int64 labels are 8 MB)
BOUND = 256 * 1024
BLOCKS = 8
N_FEATURES = 4


def graph_bytes(*collections):
    graph = {}
    for c in collections:
        graph.update(dict(c.__dask_graph__()))
    return len(cloudpickle.dumps(graph))


def _files(tmp_path, n):
    """``(X.npy, y.npy)`` of ``n`` rows (``N_FEATURES`` float32 columns, int64 labels)."""
    d = tmp_path / str(n)
    d.mkdir()
    X = np.random.default_rng(n).random((n, N_FEATURES), dtype=np.float32)
    np.save(d / "X.npy", X)
    np.save(d / "y.npy", np.arange(n, dtype=np.int64) % 5)
    return str(d / "X.npy"), str(d / "y.npy"), d


def _gcws():
    return GCWS(n_components=8).fit(np.ones((1, N_FEATURES)))


@pytest.fixture
def write_graphs(monkeypatch):
    """The graphs featurize's write tasks run as (sizes recorded, then run as usual)."""
    sizes = []
    run = featurize_module.run_tasks

    def recording(tasks, progress=True):
        sizes.append(graph_bytes(*tasks))
        return run(tasks, progress)

    monkeypatch.setattr(featurize_module, "run_tasks", recording)
    return sizes


def _same_size(sizes):
    small, large = sizes
    assert large < BOUND, sizes
    assert abs(large - small) <= SLACK, sizes


def test_featurize_graph_holds_no_labels_or_row_ids(tmp_path, write_graphs):
    """Python API: rows of a .npy, labels and row ids of files NumPy maps (np.load mmap_mode)."""
    for n in (10**5, 10**6):
        xp, yp, d = _files(tmp_path, n)
        y = np.load(yp, mmap_mode="r")
        store = featurize(read_npy(xp, block_rows=n // BLOCKS), _gcws(), labels=y, row_ids=y,
                          store=str(d / "f.zarr"), progress=False, shards=None)
        np.testing.assert_array_equal(store.labels[-5:].compute(), np.asarray(y[-5:]))
        np.testing.assert_array_equal(store.row_ids[:5].compute(), np.asarray(y[:5]))
        assert store.row_ids.dtype == np.int64
    _same_size(write_graphs)


def test_featurize_graph_of_mapped_rows_holds_no_rows(tmp_path, write_graphs):
    """Python API: rows of a file NumPy maps (``np.load(path, mmap_mode="r")``) are read per block
    by the tasks, by path, like :func:`read_npy`'s (before: hashed whole on the client and sliced
    into the graph, 16 MB at 10^6 rows of 4 float32). What is stored is what the same rows in
    memory give, and a second run over the same file resumes (the same input)."""
    mapped = []
    for n in (10**5, 10**6):
        xp, _, d = _files(tmp_path, n)
        X = np.load(xp, mmap_mode="r")
        kw = {"block_rows": n // BLOCKS, "progress": False, "shards": None}
        before = len(write_graphs)
        store = featurize(X, _gcws(), store=str(d / "f.zarr"), **kw)
        mapped.append(sum(write_graphs[before:]))
        want = featurize(np.array(X), _gcws(), store=str(d / "m.zarr"), **kw)
        np.testing.assert_array_equal(store.features.compute(), want.features.compute())
        assert store.n_rows == n and store.n_blocks == BLOCKS
    assert featurize(X, _gcws(), store=str(d / "f.zarr"), **kw).run_stats == {"computed": 0, "skipped": BLOCKS}
    _same_size(mapped)


def test_featurize_graph_of_in_memory_labels_is_one_scattered_key(tmp_path, write_graphs):
    """In-memory labels on a distributed Client: scattered once, the graph holds only their key
    (before: the whole array, in the graph sent to the scheduler)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster):
        for n in (10**5, 10**6):
            xp, _, d = _files(tmp_path, n)
            y = np.arange(n) % 7
            store = featurize(read_npy(xp, block_rows=n // BLOCKS), _gcws(), labels=y, row_ids=y,
                              store=str(d / "f.zarr"), progress=False, shards=None)
            np.testing.assert_array_equal(store.labels.compute(), y)
            np.testing.assert_array_equal(store.row_ids.compute(), y)
    _same_size(write_graphs)


def test_featurize_graph_of_in_memory_rows_holds_scattered_blocks(tmp_path, write_graphs, local_cluster):
    """In-memory NumPy rows on a distributed Client: each block scattered once, to one worker, the
    graph holding only their keys (before: the whole array, 32 MB at 10^6 rows, in the graph sent
    to the scheduler). The features are those of the local run, whose store the Client's run
    resumes (the same job)."""
    from distributed import Client

    lazy, written = [], []
    for n in (10**5, 10**6):
        X = np.random.default_rng(n).random((n, N_FEATURES))
        kw = {"block_rows": n // BLOCKS, "progress": False, "shards": None}
        local = featurize(X, _gcws(), store=str(tmp_path / f"{n}.zarr"), **kw)
        with Client(local_cluster) as client:
            again = featurize(X, _gcws(), store=str(tmp_path / f"{n}.zarr"), **kw)
            before = len(write_graphs)
            fresh = featurize(X, _gcws(), store=str(tmp_path / f"{n}-client.zarr"), **kw)
            written.append(sum(write_graphs[before:]))
            features = featurize(X, _gcws(), **kw)
            lazy.append(graph_bytes(features))
            np.testing.assert_array_equal(features.compute(), local.features.compute())
            # each block went to one worker: none holds the rows whole
            largest = client.run_on_scheduler(lambda dask_scheduler: max(
                ts.nbytes for ts in dask_scheduler.tasks.values() if ts.who_has))
            assert largest <= X.nbytes // BLOCKS + 1024, (largest, X.nbytes)
        assert again.run_stats == {"computed": 0, "skipped": BLOCKS}
        np.testing.assert_array_equal(fresh.features.compute(), local.features.compute())
    _same_size(written)
    _same_size(lazy)


def test_cli_read_path_graph_holds_no_labels(tmp_path, write_graphs):
    """The command's read path (``read_input``: ``--labels y.npy``) then its featurize: the
    labels stay a file mapping in this process (nothing of them is loaded here) and stay out of
    the graph."""
    from dask_kernels.cli import build_parser
    from dask_kernels.cli.featurize import read_input

    for n in (10**5, 10**6):
        xp, yp, d = _files(tmp_path, n)
        args = build_parser().parse_args(["featurize", xp, str(d / "f.zarr"), "--labels", yp,
                                          "--block-rows", str(n // BLOCKS)])
        tracemalloc.start()
        X, labels, _ = read_input(args)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < n * 8 / 10, peak  # the labels are 8 bytes a row: not read here
        store = featurize(X, _gcws(), labels=labels, store=str(d / "f.zarr"), block_rows=n // BLOCKS,
                          progress=False, shards=None)
        np.testing.assert_array_equal(store.labels[:7].compute(), np.arange(7) % 5)
    _same_size(write_graphs)


def test_predict_graph_does_not_grow_with_rows(tmp_path):
    from sklearn.linear_model import SGDClassifier

    from dask_kernels import KernelModel

    g = _gcws()
    X0 = np.random.default_rng(0).random((200, N_FEATURES))
    model = KernelModel(g, SGDClassifier(loss="log_loss", max_iter=2, tol=None).fit(g.expand(g.transform(X0)), np.arange(200) % 3))
    sizes = []
    for n in (10**5, 10**6):
        xp, _, _ = _files(tmp_path, n)
        X = read_npy(xp, block_rows=n // BLOCKS)
        sizes.append(graph_bytes(model.predict(X), model.predict_proba(X)))
    _same_size(sizes)


class _Enough(Exception):
    pass


def test_fit_incremental_sends_no_rows_or_labels(tmp_path, monkeypatch):
    """Under a Client the training source is scattered once; rows and labels of files NumPy maps
    (what ``dask-kernels train X.npy --labels y.npy`` passes) travel as their paths."""
    from distributed import Client, LocalCluster
    from sklearn.linear_model import SGDClassifier

    from dask_kernels import fit_incremental

    sent = []
    scatter = Client.scatter

    def recording(self, data, *args, **kwargs):
        sent.append(sum(len(cloudpickle.dumps(x)) for x in (data if isinstance(data, list) else [data])))
        return scatter(self, data, *args, **kwargs)

    monkeypatch.setattr(Client, "scatter", recording)
    sizes = []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster):
        for n in (10**5, 10**6):
            xp, yp, _ = _files(tmp_path, n)
            X, y = np.load(xp, mmap_mode="r"), np.load(yp, mmap_mode="r")
            sent.clear()
            steps = []

            def stop(step):  # what is sent is sent before the first step: no need to train on all
                steps.append(step)
                raise _Enough

            with pytest.raises(_Enough):
                fit_incremental(SGDClassifier(max_iter=1, tol=None), X, y, epochs=1, block_rows=n // BLOCKS,
                                validation_fraction=0.01, progress=False, callback=stop)
            assert steps and steps[0]["rows"] > 0.9 * n / BLOCKS  # a step trained on the workers' rows
            sizes.append(sum(sent))
    _same_size(sizes)


# -- featurize(ddf) without a store stays lazy -------------------------------------------------
class _Reads:
    """A dask DataFrame of ``parts`` partitions whose reads are counted."""

    def __init__(self, parts=6, rows=50):
        self.count, self.parts, self.rows = 0, parts, rows
        self.lock = threading.Lock()

    def __dask_tokenize__(self):
        return ("_Reads", id(self), self.parts, self.rows)

    def __call__(self, i):
        with self.lock:
            self.count += 1
        rng = np.random.default_rng(i)
        return pd.DataFrame({"a": rng.random(self.rows), "b": rng.random(self.rows), "y": np.arange(self.rows) % 2})

    def frame(self):
        import dask.dataframe as dd

        return dd.from_map(self, range(self.parts))


def test_featurize_dataframe_without_store_reads_nothing():
    reads = _Reads()
    ddf = reads.frame()
    reads.count = 0  # dask's from_map reads one partition for the frame's columns and dtypes
    g = GCWS(n_components=8).fit(np.ones((1, 3)))
    out = featurize(ddf, g)
    assert reads.count == 0  # before: every partition read to learn its length
    assert np.isnan(out.shape[0]) and len(out.chunks[0]) == reads.parts
    values = out.compute()
    assert reads.count == reads.parts
    expected = g.transform(np.vstack([reads(i).to_numpy(np.float64) for i in range(reads.parts)]))
    np.testing.assert_array_equal(values, expected)
    assert out.compute_chunk_sizes().chunks[0] == (reads.rows,) * reads.parts


def test_lazy_features_of_unknown_sizes_downstream():
    """The lazy features of a DataFrame (row chunks of unknown size) train once their sizes are
    computed; before that, a clear error instead of int(nan)'s."""
    from sklearn.linear_model import SGDClassifier

    from dask_kernels import fit_incremental

    reads = _Reads()
    F = featurize(reads.frame(), GCWS(n_components=8).fit(np.ones((1, 3))))
    y = np.arange(reads.parts * reads.rows) % 2
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        fit_incremental(SGDClassifier(), F, y, epochs=1, progress=False)
    model = fit_incremental(SGDClassifier(), F.compute_chunk_sizes(), y, epochs=1, progress=False)
    assert model.estimator.coef_.shape == (1, F.shape[1])


def test_featurize_dataframe_store_counts_rows_in_one_pass(tmp_path):
    """With a store (which needs row offsets): one pass for the partition lengths, of the rows
    and their label column together (before: one each), then the write tasks' reads (dask reads
    a partition for the feature columns and again for the label column)."""
    reads = _Reads()
    ddf = reads.frame()
    reads.count = 0
    g = GCWS(n_components=8).fit(np.ones((1, 2)))
    store = featurize(ddf[["a", "b"]], g, labels=ddf["y"], store=str(tmp_path / "f.zarr"), progress=False)
    assert store.n_rows == reads.parts * reads.rows
    np.testing.assert_array_equal(store.labels.compute(), np.tile(np.arange(reads.rows) % 2, reads.parts))
    assert reads.count == 3 * reads.parts


def test_lazy_dataframe_error_names_the_partition():
    X = np.random.default_rng(0).random((100, 3))
    X[57, 1] = np.nan
    import dask.dataframe as dd

    ddf = dd.from_pandas(pd.DataFrame(X, columns=list("abc")), npartitions=4)
    out = featurize(ddf, GCWS(n_components=4).fit(X[:2]))
    with pytest.raises(ValueError, match=r"row 7 of partition 2, column 1"):
        out.compute()


# -- a worker's memory over many blocks ---------------------------------------------------------
def test_memory_flat_over_many_blocks(tmp_path):
    """Featurizing 4x the blocks into a store (same block size, labels mapped, dask's threaded
    scheduler: the workers are threads of this process) raises the traced peak by less than half
    a block's output per extra block: no block's rows, labels or features are retained (what
    stays is the graph and the run's per-block records, a few KiB a block)."""
    rows, k = 1000, 64
    peaks = []
    for blocks in (30, 120):
        xp, yp, d = _files(tmp_path, blocks * rows)
        X, y = read_npy(xp, block_rows=rows), np.load(yp, mmap_mode="r")
        g = GCWS(n_components=k).fit(np.ones((1, N_FEATURES)))
        featurize(X[:rows], g, store=str(d / "warm.zarr"), progress=False, shards=None)  # caches, kernels
        tracemalloc.start()
        featurize(X, g, labels=y, store=str(d / "f.zarr"), progress=False, shards=None)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    per_block = (peaks[1] - peaks[0]) / 90
    assert per_block < rows * k / 2, (peaks, per_block)
