"""End-to-end featurization rate (a .npy of dense 784-dim rows -> finished Zarr store) next to the
bare GCWS kernel rate on the same cores, in the same run, with peak memory per worker process.

    python benchmarks/bench_pipeline.py            # ~6-8 minutes on 2 cores
    python benchmarks/bench_pipeline.py --quick    # ~2 minutes

Rows are MNIST-like: 784 float32 values, ~20% nonzero. GCWS k=256, b=8 (uint8 codes).
* kernel-only: ``transform_block`` on in-memory blocks in the same worker processes (all workers
  at once), measured just before and just after the end-to-end runs; the better of the two.
  Also shown for this process, one thread per core.
* end-to-end: ``featurize(read_npy(path), gcws, store=...)`` on a LocalCluster of single-threaded
  worker processes, timed from the call to the returned, complete store (reading, validation,
  featurizing, compression, Zarr writes, done markers, consolidation); the best of ``--repeats``
  runs (3), each into a new store. Workers are warmed up first (Numba loaded from its cache,
  parameter table built), as on a long-running cluster.
  Best-of on both sides because the machine is shared: other jobs only ever add time.
* integrity overhead: every end-to-end run is made twice, alternating, with the store's integrity
  checks on (the default: CRC32C on every chunk, a digest of every written block and of its
  input rows in the done record, the input file re-checked per block, the lease checked before
  each write) and off (the dask config key ``dask_kernels.integrity = False``,
  which writes what format 1 wrote); the overhead is 1 - (rate on) / (rate off), best of each.
  Also measured in this process on the synchronous scheduler (20,000 rows, no cluster noise).
* input formats and store layouts (the last table; ``--formats-only`` runs just it): on one
  LocalCluster of single-threaded worker processes, alternating, best of ``--repeats`` each:
  the .npy path (the peer) in 64 blocks, the same rows as a Parquet file through
  ``read_parquet`` (pyarrow reads each row group, without its thread pool, then Arrow copies the
  columns into rows), and the .npy into a store sharded 8 blocks per shard (``shards=8``) next to
  one object per block (``shards=None``); "read only" rows time reading the same partitions on
  the workers without featurizing. Each row also shows the worker processes' CPU per block (user
  + system, all their threads: the event loop and Zarr's codec threads too; the least of the
  runs): what a worker pays for it, apart from the host's other load. The Parquet file is
  written with pyarrow's defaults, which are what pandas' ``to_parquet``, dask's and pyarrow's
  writers give a user: Snappy compression, dictionary encoding (each column chunk's ~1,400
  distinct values fit the dictionary: every page is dictionary-encoded, the costlier decode),
  format 2.6, data page v1, statistics; 784 float32 columns; one row group per block (so its
  partitions are the .npy path's blocks). Past a few thousand rows a row group's size does not
  change pyarrow's cost per row; the quick run's 1,406-row groups pay about twice as much per
  row (a fixed ~25 us per column chunk), so the quick run understates Parquet. The kernel-only
  rate of that table is ``transform_block`` on exactly the end-to-end rows and blocks (every
  block, all workers at once, each block copied out of the .npy before its clock starts), with
  the same map, in the same run, measured once per round of the alternating runs (best of
  ``--repeats``, as each end-to-end row). Expected: sharding costs a few percent and cuts the
  object count 8x.
* Parquet CPU per block (after that table): in this process, thread time, interleaved, best of
  each, on 4 of the file's row groups: ``read_parquet``'s task called as a worker calls it
  (open, read each row group, the footer and size/mtime checks, columns to rows), and the
  alternatives measured for each of its steps: pyarrow's ``read_row_group`` and
  ``read_row_groups`` (one call for the partition), each with and without pyarrow's thread pool
  (thread time counts only this thread: the pool's CPU is not in it, which is why a task does not
  use it: a worker has one core); the columns-to-rows copy as Arrow's column-major ``to_tensor``
  then one NumPy transpose (what the task does), as Arrow's row-major ``to_tensor``, and as one
  NumPy copy per column; and the kernel on its rows. With the .npy path's ratio r (everything
  but reading) the Parquet ratio can reach at most 1 / (1 / r + read / kernel).
* sharding CPU per block (last): in this process on the synchronous scheduler, process time (Zarr's
  codec threads included), 16 blocks into a store sharded 8 blocks per shard and into one
  object per block, alternating, best of ``--repeats``: what a shard's writing costs beyond its
  blocks', apart from how the cluster's scheduler places the tasks.
* peak RSS per worker: psutil samples every 20 ms during the runs, minus the worker's idle RSS
  (the largest over the runs).
"""

import argparse
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import dask
import numpy as np
import psutil

D, K = 784, 256


def make_rows(path, n, block=20000):
    """A .npy of n MNIST-like rows, written block by block (never all in memory)."""
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, D))
    rng = np.random.default_rng(0)
    for a in range(0, n, block):
        b = min(n, a + block)
        arr[a:b] = rng.random((b - a, D), dtype=np.float32) * (rng.random((b - a, D)) < 0.2)
    arr.flush()
    del arr


def kernel_rate(gcws, X, block_rows, threads):
    """Bare transform_block rate in this process, one thread per core, in-memory blocks."""
    blocks = [np.ascontiguousarray(X[a:a + block_rows]) for a in range(0, len(X), block_rows)]
    gcws.transform_block(blocks[0][:10])
    with ThreadPoolExecutor(threads) as pool:
        t0 = time.perf_counter()
        list(pool.map(gcws.transform_block, blocks))
        return len(X) / (time.perf_counter() - t0)


def _kernel_in_worker(path, spec_json, n_rows, block_rows):
    from dask_kernels.pipeline import rebuild_map

    return kernel_rate(rebuild_map(spec_json), np.load(path, mmap_mode="r")[:n_rows], block_rows, 1)


def _kernel_blocks_in_worker(path, spec_json, n_rows, block_rows):
    """transform_block rate over rows [0, n_rows) of the .npy in blocks of block_rows, timing only
    the kernel (each block is copied out of the file first: memory stays one block)."""
    from dask_kernels.pipeline import rebuild_map

    fmap = rebuild_map(spec_json)
    X = np.load(path, mmap_mode="r")
    fmap.transform_block(np.ascontiguousarray(X[:10]))
    seconds = 0.0
    for a in range(0, n_rows, block_rows):
        block = np.ascontiguousarray(X[a:min(a + block_rows, n_rows)])
        t0 = time.perf_counter()
        fmap.transform_block(block)
        seconds += time.perf_counter() - t0
    return n_rows / seconds


def workers_kernel_rate_all_rows(client, path, gcws, n_rows, block_rows):
    """Bare kernel rate of all worker processes at once, each over the end-to-end rows and blocks."""
    futures = [client.submit(_kernel_blocks_in_worker, path, gcws.spec_json(), n_rows, block_rows, workers=[w],
                             pure=False) for w in client.scheduler_info()["workers"]]
    return sum(client.gather(futures))


def _nbytes(block):
    return np.array([block.nbytes])


def read_only(X):
    """Read every partition of X on the cluster, featurizing nothing (returns the seconds)."""
    t0 = time.perf_counter()
    X.map_blocks(_nbytes, drop_axis=1, chunks=((1,) * X.numblocks[0],), dtype=np.int64).compute()
    return time.perf_counter() - t0


def workers_kernel_rate(client, path, gcws, n_rows, block_rows):
    """Bare kernel rate of all worker processes at once (each on its own in-memory blocks)."""
    futures = [client.submit(_kernel_in_worker, path, gcws.spec_json(), n_rows, block_rows, workers=[w], pure=False)
               for w in client.scheduler_info()["workers"]]
    return sum(client.gather(futures))


class RssSampler:
    def __init__(self, pids):
        self.procs = [psutil.Process(p) for p in pids]
        self.base = [p.memory_info().rss for p in self.procs]
        self.peak = list(self.base)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for i, p in enumerate(self.procs):
                try:
                    self.peak[i] = max(self.peak[i], p.memory_info().rss)
                except psutil.Error:
                    pass
            time.sleep(0.02)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def end_to_end(path, gcws, block_rows, workers, tmp, repeats):
    from distributed import Client, LocalCluster

    from dask_kernels import featurize
    from dask_kernels.io import read_npy

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit=0) as cluster, Client(cluster) as client:
        warm = os.path.join(tmp, "warm.zarr")
        featurize(read_npy(path, block_rows=200)[: 200 * workers * 2], gcws, store=warm, overwrite=True,
                  progress=False)
        pids = list(client.run(os.getpid).values())
        out = os.path.join(tmp, f"store-{workers}.zarr")
        X = read_npy(path, block_rows=block_rows)
        kernel = workers_kernel_rate(client, path, gcws, 20_000, block_rows)

        seconds, peak, extra = {True: np.inf, False: np.inf}, 0, 0
        try:
            for _ in range(repeats):
                for checks in (True, False):  # alternating: both see the same machine load
                    dask.config.set({"dask_kernels.integrity": checks})
                    shutil.rmtree(out, ignore_errors=True)
                    with RssSampler(pids) as mem:
                        t0 = time.perf_counter()
                        store = featurize(X, gcws, store=out, progress=False)
                        seconds[checks] = min(seconds[checks], time.perf_counter() - t0)
                    assert store.complete
                    extra = max(extra, *(p - b for p, b in zip(mem.peak, mem.base)))
                    peak = max(peak, *mem.peak)
        finally:
            dask.config.set({"dask_kernels.integrity": True})
        kernel = max(kernel, workers_kernel_rate(client, path, gcws, 20_000, block_rows))
        check = store.features[:1000].compute()
        assert np.array_equal(check, gcws.transform_block(np.load(path, mmap_mode="r")[:1000]))
        shutil.rmtree(out, ignore_errors=True)
        return X.shape[0] / seconds[True], X.shape[0] / seconds[False], kernel, peak, extra


def in_process(path, gcws, block_rows, tmp, repeats, n_rows):
    """Integrity overhead without a cluster: featurize on the synchronous scheduler in this process
    (one block at a time, so the machine's other load disturbs it least), checks on and off
    alternating; best of ``repeats`` each. Returns (rows/s with checks, rows/s without)."""
    from dask_kernels import featurize
    from dask_kernels.io import read_npy

    out = os.path.join(tmp, "sync.zarr")
    X = read_npy(path, block_rows=block_rows)[:n_rows]
    seconds = {True: np.inf, False: np.inf}
    try:
        with dask.config.set(scheduler="synchronous"):
            for _ in range(repeats):
                for checks in (True, False):
                    dask.config.set({"dask_kernels.integrity": checks})
                    shutil.rmtree(out, ignore_errors=True)
                    t0 = time.perf_counter()
                    featurize(X, gcws, store=out, progress=False)
                    seconds[checks] = min(seconds[checks], time.perf_counter() - t0)
    finally:
        dask.config.set({"dask_kernels.integrity": True})
        shutil.rmtree(out, ignore_errors=True)
    return n_rows / seconds[True], n_rows / seconds[False]


def make_parquet(npy, path, block_rows):
    """The rows of a .npy as a Parquet file, one row group per block (written block by block)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    X = np.load(npy, mmap_mode="r")
    names = [f"p{j}" for j in range(X.shape[1])]
    schema = pa.schema([(n, pa.float32()) for n in names])
    # pyarrow's defaults, as real data is written: Snappy, dictionary encoding (said here anyway)
    with pq.ParquetWriter(path, schema, compression="snappy", use_dictionary=True) as w:
        for a in range(0, X.shape[0], block_rows):
            b = np.ascontiguousarray(X[a:a + block_rows])
            w.write_table(pa.Table.from_arrays([pa.array(b[:, j]) for j in range(b.shape[1])], schema=schema),
                          row_group_size=block_rows)


def _objects(path, array="features"):
    return sum(len(files) for _, _, files in os.walk(os.path.join(path, array, "c")))


def _cpu_seconds():
    t = os.times()
    return t.user + t.system


def _workers_cpu(client):
    """CPU seconds (user + system, all threads) the worker processes have used so far."""
    return sum(client.run(_cpu_seconds).values())


def formats(npy, gcws, workers, tmp, repeats):
    """Rates (rows/s) of the .npy path, the Parquet path, and sharded vs unsharded stores.

    64 blocks, so the 8 shards of 8 blocks split evenly over the workers: with fewer shards
    than workers x a few, a sharded store runs fewer, longer tasks (parallelism is the number
    of shards; "auto" only shards stores of more than 1024 blocks)."""
    block_rows = -(-np.load(npy, mmap_mode="r").shape[0] // 64)
    from distributed import Client, LocalCluster

    from dask_kernels import featurize, read_parquet
    from dask_kernels.io import read_npy

    pq_path = os.path.join(tmp, "rows.parquet")
    make_parquet(npy, pq_path, block_rows)
    def parquet(out):
        return featurize(read_parquet(pq_path, block_rows=block_rows), gcws, store=out, progress=False, shards=None)

    runs = {
        "npy": lambda out: featurize(read_npy(npy, block_rows=block_rows), gcws, store=out, progress=False, shards=None),
        "parquet": parquet,
        "npy, shards=8": lambda out: featurize(read_npy(npy, block_rows=block_rows), gcws, store=out,
                                               progress=False, shards=8),
        "npy, read only": lambda out: read_only(read_npy(npy, block_rows=block_rows)),
        "parquet, read only": lambda out: read_only(read_parquet(pq_path, block_rows=block_rows)),
    }
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit=0) as cluster, Client(cluster) as client:
        featurize(read_npy(npy, block_rows=200)[: 200 * workers * 2], gcws, store=os.path.join(tmp, "warm.zarr"),
                  overwrite=True, progress=False)
        n = np.load(npy, mmap_mode="r").shape[0]
        best, objects, kernel = {k: np.inf for k in runs}, {}, 0.0
        cpu = {k: np.inf for k in runs}  # the workers' CPU per block (all their threads), least of the runs
        for _ in range(repeats):
            # the kernel-only rate once per round, beside the round's runs: the ratios' two sides see
            # the same load and are both the best of ``repeats``
            kernel = max(kernel, workers_kernel_rate_all_rows(client, npy, gcws, n, block_rows))
            for name, run in runs.items():  # alternating: all see the same machine load
                out = os.path.join(tmp, f"fmt-{name.replace(' ', '').replace(',', '-')}.zarr")
                shutil.rmtree(out, ignore_errors=True)
                c0, t0 = _workers_cpu(client), time.perf_counter()
                store = run(out)
                best[name] = min(best[name], time.perf_counter() - t0)
                cpu[name] = min(cpu[name], (_workers_cpu(client) - c0) / 64)
                if "read only" not in name:
                    assert store.complete
                    objects[name] = _objects(out)
                    check = store.features[:1000].compute()
                    assert np.array_equal(check, gcws.transform_block(np.load(npy, mmap_mode="r")[:1000]))
                    shutil.rmtree(out, ignore_errors=True)
    return n, {k: n / v for k, v in best.items()}, objects, kernel, cpu


def _rows_column_major(table, out):  # what read_parquet's task does (parquet._to_rows)
    from dask_kernels.io import parquet

    parquet._to_rows(table, out)


def _rows_row_major(table, out):
    start = 0
    for batch in table.to_batches():
        out[start:start + batch.num_rows] = np.asarray(batch.to_tensor(null_to_nan=True, row_major=True))
        start += batch.num_rows


def _rows_per_column(table, out):
    for j in range(table.num_columns):
        out[:, j] = table.column(j).to_numpy()


def parquet_cpu(gcws, tmp, repeats):
    """CPU per block in this process (thread time, interleaved, best of ``repeats`` x 4 rounds over 4
    blocks; no cluster, so the machine's other load disturbs it least): ``read_parquet``'s task for
    a partition called as a worker calls it (not through ``compute``, whose scheduler and result
    handling a worker's fused read-featurize-write task does not pay), the alternatives of each of
    its steps, and the kernel on its rows. Returns ``{name: seconds per block}``."""
    import pyarrow.parquet as pq

    from dask_kernels import read_parquet
    from dask_kernels.io import _layers

    path = os.path.join(tmp, "rows.parquet")
    f = pq.ParquetFile(path)
    X = read_parquet(path, block_rows=f.metadata.row_group(0).num_rows)
    _, task, parts, _ = _layers._reader_layer(X)  # the tasks' function and arguments, as the graph holds them
    parts = parts[:4]
    blocks = [task(*p) for p in parts]
    tables = [f.read_row_group(i, use_threads=False) for i in range(len(parts))]
    out = np.empty_like(blocks[0])
    for i, table in enumerate(tables):
        for copy in (_rows_column_major, _rows_row_major, _rows_per_column):
            copy(table, out)
            assert np.array_equal(out, blocks[i], equal_nan=True)
    gcws.transform_block(blocks[0][:10])
    runs = {"read_parquet's task": lambda i: task(*parts[i]),
            "read_row_group": lambda i: f.read_row_group(i, use_threads=False),
            "read_row_groups([i])": lambda i: f.read_row_groups([i], use_threads=False),
            "read_row_group, threads": lambda i: f.read_row_group(i, use_threads=True),
            "to rows: column-major + transpose": lambda i: _rows_column_major(tables[i], out),
            "to rows: row-major to_tensor": lambda i: _rows_row_major(tables[i], out),
            "to rows: column by column": lambda i: _rows_per_column(tables[i], out),
            "kernel": lambda i: gcws.transform_block(blocks[i])}
    best = {k: np.inf for k in runs}
    for _ in range(repeats * 4):
        for i in range(len(blocks)):
            for k, run in runs.items():
                t0 = time.thread_time()
                run(i)
                best[k] = min(best[k], time.thread_time() - t0)
    return best


def print_parquet_cpu(best, rates, kernel_rate):
    npy, reader, kernel = rates["npy"] / kernel_rate, best["read_parquet's task"], best["kernel"]
    print("Parquet CPU per block in one process (thread time, best of each; 'threads': this thread's "
          "share only):")
    for name, seconds in best.items():
        print(f"  {name:<36} {seconds * 1e3:>7.1f} ms   / kernel {seconds / kernel:>5.2f}")
    print(f"  -> with the .npy path's other costs ({npy:.2f} of kernel-only), Parquet end-to-end can reach at most "
          f"1 / (1 / {npy:.2f} + {reader / kernel:.2f}) = {1 / (1 / npy + reader / kernel):.2f} of kernel-only")


def print_formats(n, rates, objects, kernel, workers, cpu):
    print(f"\ninput formats and store layouts, {workers} workers, {n} rows in 64 blocks of {-(-n // 64)} rows "
          "(rows/s, best of each; the workers' CPU per block, all their threads, least of the runs):")
    print(f"{'run':<18} {'end-to-end':>11} {'/ kernel-only':>13} {'feature objects':>15} {'worker CPU/block':>16}")
    for name, rate in rates.items():
        print(f"{name:<18} {rate:>11,.0f} {rate / kernel:>13.2f} {objects.get(name, ''):>15} "
              f"{cpu[name] * 1e3:>13.1f} ms")
    print(f"kernel-only (workers): {kernel:,.0f} rows/s; Parquet / .npy end-to-end: "
          f"{rates['parquet'] / rates['npy']:.2f}; sharding cost: {1 - rates['npy, shards=8'] / rates['npy']:.1%}, "
          f"objects {objects['npy']} -> {objects['npy, shards=8']} "
          f"({objects['npy'] / max(1, objects['npy, shards=8']):.1f}x fewer)")
    print("('read only': the same partitions read on the workers, nothing featurized; load average now: "
          + ", ".join(f"{v:.1f}" for v in os.getloadavg()) + ")")


def shard_cpu(npy, gcws, tmp, repeats, n_blocks=16):
    """CPU per block of featurizing into a store sharded 8 blocks per shard and into one object
    per block, in this process on the synchronous scheduler (process time: Zarr's codec threads
    included; the first ``n_blocks`` blocks of the formats table's rows, alternating, best of
    ``repeats`` each). What a shard's writing costs beyond its blocks', without the cluster's
    scheduling (how the shards' tasks fall on the workers). Returns ``{shards: seconds per block}``."""
    from dask_kernels import featurize
    from dask_kernels.io import read_npy

    block_rows = -(-np.load(npy, mmap_mode="r").shape[0] // 64)
    X = read_npy(npy, block_rows=block_rows)[:n_blocks * block_rows]
    best = {None: np.inf, 8: np.inf}
    with dask.config.set(scheduler="synchronous"):
        for _ in range(repeats):
            for shards in best:
                out = os.path.join(tmp, f"cpu-{shards}.zarr")
                shutil.rmtree(out, ignore_errors=True)
                t0 = time.process_time()
                featurize(X, gcws, store=out, progress=False, shards=shards)
                best[shards] = min(best[shards], (time.process_time() - t0) / n_blocks)
                shutil.rmtree(out, ignore_errors=True)
    return best


def formats_table(npy, gcws, workers, tmp, repeats):
    n, rates, objects, kernel, cpu = formats(npy, gcws, workers, tmp, repeats)
    print_formats(n, rates, objects, kernel, workers, cpu)
    print_parquet_cpu(parquet_cpu(gcws, tmp, repeats), rates, kernel)
    cpu = shard_cpu(npy, gcws, tmp, repeats)
    print(f"Sharding CPU per block in one process (synchronous scheduler, process time, best of each): one object "
          f"per block {cpu[None] * 1e3:.1f} ms, shards=8 {cpu[8] * 1e3:.1f} ms ({cpu[8] / cpu[None] - 1:+.1%})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small datasets (~1 minute)")
    ap.add_argument("--block-rows", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=3, help="end-to-end runs per row of the table (best is kept)")
    ap.add_argument("--formats-only", action="store_true", help="only the input formats / store layouts table")
    args = ap.parse_args()
    from dask_kernels import GCWS

    small, large = (30_000, 90_000) if args.quick else (150_000, 450_000)
    cores = min(2, os.cpu_count())
    tmp = tempfile.mkdtemp(prefix="bench-pipeline-")
    try:
        gcws = GCWS(n_components=K, bits=8, seed=0).fit(np.zeros((1, D), np.float32))
        paths = {}
        for n in (small, large):
            paths[n] = os.path.join(tmp, f"rows-{n}.npy")
            make_rows(paths[n], n)
        print("load average at the start: " + ", ".join(f"{v:.1f}" for v in os.getloadavg()))
        if args.formats_only:
            formats_table(paths[large], gcws, cores, tmp, args.repeats)
            return
        Xk = np.load(paths[small], mmap_mode="r")[:20_000]
        k1 = kernel_rate(gcws, Xk, args.block_rows, 1)
        k2 = kernel_rate(gcws, Xk, args.block_rows, cores)
        block_mb = args.block_rows * D * 4 / 2**20
        sync_on, sync_off = in_process(paths[small], gcws, args.block_rows, tmp, args.repeats, 20_000)
        rows = [("1 worker", small, *end_to_end(paths[small], gcws, args.block_rows, 1, tmp, args.repeats))]
        for n in (small, large):
            rows.append((f"{cores} workers", n, *end_to_end(paths[n], gcws, args.block_rows, cores, tmp, args.repeats)))
        print(f"\nGCWS k={K} b=8 on {D} dense float32 inputs (~20% nonzero); {args.block_rows} rows per block "
              f"= {block_mb:.1f} MiB of input; {cores} cores")
        print(f"kernel only in this process: {k1:,.0f} rows/s on 1 thread, {k2:,.0f} rows/s on {cores} threads")
        print(f"{'workers':<10} {'rows':>8} {'end-to-end':>11} {'no checks':>10} {'overhead':>8} {'kernel-only':>11} "
              f"{'ratio':>6} {'peak RSS/worker':>15} {'peak - idle':>11} {'in blocks':>9}")
        for what, n, rate, bare, kernel, peak, extra in rows:
            print(f"{what:<10} {n:>8} {rate:>11,.0f} {bare:>10,.0f} {1 - rate / bare:>8.1%} {kernel:>11,.0f} "
                  f"{rate / kernel:>6.2f} {peak / 2**20:>11.0f} MiB {extra / 2**20:>7.0f} MiB "
                  f"{extra / 2**20 / block_mb:>9.1f}")
        print("\n(rates in rows/s; kernel-only = transform_block on in-memory blocks in the same worker "
              "processes, best of before and after the end-to-end runs; end-to-end: best of "
              f"{args.repeats} runs with the integrity checks, 'no checks': best of {args.repeats} runs "
              "without, alternating with them; overhead = 1 - end-to-end / no checks)")
        print(f"in this process, synchronous scheduler, 20000 rows: {sync_on:,.0f} rows/s with the integrity "
              f"checks, {sync_off:,.0f} without: overhead {1 - sync_on / sync_off:.1%}")
        print(f"{cores} workers / 1 worker, end-to-end on {small} rows: {rows[1][2] / rows[0][2]:.2f}x; "
              f"{large} / {small} rows end-to-end rate: {rows[2][2] / rows[1][2]:.2f}")
        formats_table(paths[large], gcws, cores, tmp, args.repeats)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
