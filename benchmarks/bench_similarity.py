"""Similarity join on binary rows: dask_kernels against Spark MLlib and datasketch, same data, same run.

Data: ``n`` sparse binary rows over 10,000 columns, 40 ones each (random rows have Jaccard about
0.002), of which 10 % are near duplicates of an earlier row (one or two of its ones moved: Jaccard
0.90 to 0.95) and 1 % exact duplicates. On binary rows GMM is Jaccard, so all three search
the same pairs: those at Jaccard >= 0.8. Truth is the planted pairs (every pair of rows of one
family); a reported pair counts as correct when its exact Jaccard is >= 0.75.

* dask_kernels: GCWS codes (k = 128, b = 8, DartMinHash) computed on a LocalCluster of
  ``--workers`` processes, then :func:`~dask_kernels.similarity.similarity_join` with the raw
  rows (bands from the threshold; candidates whose code estimate is within the margin kept on
  their exact Jaccard, as Spark keeps its candidates on their exact distance).
* Spark MLlib: ``MinHashLSH(numHashTables=--spark-tables)`` fit, then
  ``approxSimilarityJoin(df, df, 0.2)`` (exact Jaccard distance), ``local[--workers]``.
* datasketch: ``MinHash`` (128 permutations, ``MinHash.bulk``), ``MinHashLSH(threshold=0.8)``:
  insert every row, then query every row.

* ``from store`` (skip with ``--skip "from store"``): the same codes written to a feature store
  first (not timed), then the join reading the store's blocks without raw rows: the workers'
  peak is the join's own, to compare across row counts.

Wall time covers hashing and the join (the input already in memory in each system's form:
building Spark's DataFrame is not counted). Peak memory: the largest peak resident set of the
dask workers (each worker's is printed too); datasketch's process (which also holds the input;
its peak is reset before the run); Spark's JVM. Run:
``python benchmarks/bench_similarity.py --rows 100000``. Spark needs Java and pyspark (the
project's ``bench`` extra: ``pip install -e ".[bench]"``); if ``java`` is missing, install it
(``apt-get install -y openjdk-17-jre-headless``). Without either, the Spark row is skipped, not
failed.
"""

import argparse
import os
import shutil
import sys
import threading
import time

import numpy as np
import scipy.sparse as sp

D, ONES, T = 10_000, 40, 0.8


def make_data(n, seed=0):
    """CSR binary rows and the families of planted duplicates (lists of row ids)."""
    rng = np.random.default_rng(seed)
    rows = [np.sort(rng.choice(D, ONES, replace=False)) for _ in range(n)]
    parent = np.arange(n)
    for i in rng.choice(np.arange(n // 2, n), n // 10 + n // 100, replace=False):
        src = int(rng.integers(0, n // 2))
        r = rows[src].copy()
        if rng.random() > 1 / 11:  # near duplicate: move one or two ones
            m = int(rng.integers(1, 3))
            keep = rng.choice(ONES, ONES - m, replace=False)
            new = np.setdiff1d(rng.choice(D, m + 8, replace=False), r)[:m]  # columns not in r
            r = np.sort(np.concatenate([r[keep], new]))
        rows[i], parent[i] = r, src
    X = sp.csr_matrix((np.ones(n * ONES, np.float32), np.concatenate(rows), np.arange(0, n * ONES + 1, ONES)),
                      shape=(n, D))
    families = {}
    for i, p in enumerate(parent):
        families.setdefault(int(p), []).append(i)
    return X, [f for f in families.values() if len(f) > 1]


def jaccard(X, i, j):
    a, b = X[i], X[j]
    inter = np.asarray(a.multiply(b).sum(axis=1)).ravel()
    return inter / (ONES * 2 - inter)


def truth_pairs(X, families):
    pairs = {(min(a, b), max(a, b)) for f in families for x, a in enumerate(f) for b in f[x + 1:]}
    p = np.array(sorted(pairs))
    return {tuple(x) for x in p[jaccard(X, p[:, 0], p[:, 1]) >= T]}


def score(X, found, truth):
    found = {(min(a, b), max(a, b)) for a, b in found}
    p = np.array(sorted(found)) if found else np.empty((0, 2), int)
    ok = int((jaccard(X, p[:, 0], p[:, 1]) >= T - 0.05).sum()) if len(p) else 0
    return len(found & truth) / max(1, len(truth)), ok / max(1, len(found)), len(found)


def peak_mb(pid="self"):
    """Peak resident set (VmHWM) of a process, in MB (None where /proc does not tell)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return None


def reset_peak():
    """Reset this process's VmHWM to its current resident set (Linux 4.0+; else left alone)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _transform(gcws, X):
    return gcws.transform(X)


def run_ours(X, workers, pass_memory=None):
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    import dask_kernels.maps.base  # noqa: F401
    from dask_kernels import GCWS
    from dask_kernels.similarity import similarity_join

    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        gcws = GCWS(n_components=128, bits=8, seed=0, sampler="dart").fit(X[:1000])
        # one copy of the fitted map per worker: its tables are built once there, not per task
        fitted = client.scatter(gcws, broadcast=True)
        block = 20_000
        parts = [da.from_delayed(dask.delayed(_transform)(fitted, X[a:a + block]),
                                 shape=(min(block, X.shape[0] - a), 128), dtype=np.uint8)
                 for a in range(0, X.shape[0], block)]
        # warm-up, outside the timing (as Spark's JVM is up): every worker loads the kernels and
        # builds the fitted map's tables
        wait([client.submit(_transform, fitted, X[:100], workers=[w], pure=False)
              for w in client.scheduler_info()["workers"]])
        similarity_join(gcws.transform(X[:2000]), T, bits=8, X=X[:2000]).compute()
        t0 = time.perf_counter()
        codes = da.concatenate(parts).persist()
        kw = {} if pass_memory is None else {"pass_memory": pass_memory}
        pairs = similarity_join(codes, T, bits=8, X=X, **kw).compute()
        seconds = time.perf_counter() - t0
        peaks = sorted(client.run(peak_mb).values())
    print(f"dask_kernels workers' peak resident sets, MB: {', '.join(f'{p:.0f}' for p in peaks)}", flush=True)
    return seconds, list(zip(pairs["i"].tolist(), pairs["j"].tolist())), max(peaks)


def run_from_store(X, workers, pass_memory=None):
    """The join as a pipeline runs it: codes in a feature store (written first, not timed), the
    join reading its blocks, no raw rows (pairs verified on their codes). Each worker's peak is
    reset after the store is written, so it is the join's own."""
    import tempfile

    from distributed import Client, LocalCluster

    from dask_kernels import GCWS, featurize
    from dask_kernels.similarity import similarity_join

    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        gcws = GCWS(n_components=128, bits=8, seed=0, sampler="dart").fit(X[:1000])
        store = os.path.join(tmp, "codes.zarr")
        featurize(X, gcws, store=store, progress=False)
        similarity_join(store, T, bits=8).head(1)  # warm-up: every kernel loaded
        client.run(reset_peak)
        t0 = time.perf_counter()
        kw = {} if pass_memory is None else {"pass_memory": pass_memory}
        pairs = similarity_join(store, T, bits=8, **kw).compute()
        seconds = time.perf_counter() - t0
        peaks = sorted(client.run(peak_mb).values())
    print(f"from a store: workers' peak resident sets, MB: {', '.join(f'{p:.0f}' for p in peaks)}", flush=True)
    return seconds, list(zip(pairs["i"].tolist(), pairs["j"].tolist())), max(peaks)


def run_datasketch(X):
    from datasketch import MinHash, MinHashLSH

    sets = [X.indices[X.indptr[i]:X.indptr[i + 1]].astype(np.uint32).view(np.uint8).reshape(-1, 4)
            for i in range(X.shape[0])]
    sets = [[bytes(x) for x in s] for s in sets]
    reset_peak()
    t0 = time.perf_counter()
    hashes = MinHash.bulk(sets, num_perm=128)
    lsh = MinHashLSH(threshold=T, num_perm=128)
    for i, h in enumerate(hashes):
        lsh.insert(i, h)
    found = [(i, j) for i, h in enumerate(hashes) for j in lsh.query(h) if j != i]
    return time.perf_counter() - t0, found, peak_mb()


def run_spark(X, workers, tables, timeout=None):
    if shutil.which("java") is None:
        print("spark: skipped, no `java` on PATH (apt-get install -y openjdk-17-jre-headless)", file=sys.stderr)
        return None
    try:
        from pyspark.ml.feature import MinHashLSH
        from pyspark.ml.linalg import SparseVector
        from pyspark.sql import SparkSession
    except ImportError:
        print("spark: skipped, pyspark is not installed (pip install pyspark)", file=sys.stderr)
        return None
    spark = (SparkSession.builder.master(f"local[{workers}]").config("spark.driver.memory", "6g")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        data = [(i, SparseVector(D, X.indices[X.indptr[i]:X.indptr[i + 1]].tolist(), [1.0] * ONES))
                for i in range(X.shape[0])]
        df = spark.createDataFrame(data, ["id", "features"]).repartition(workers * 4).cache()
        df.count()
        # --spark-timeout: Spark's jobs are cancelled after that many seconds, and the row gives
        # the time as a lower bound ("> N"), with no recall
        timer = threading.Timer(timeout, spark.sparkContext.cancelAllJobs) if timeout else None
        t0 = time.perf_counter()
        if timer:
            timer.start()
        try:
            model = MinHashLSH(inputCol="features", outputCol="hashes", numHashTables=tables, seed=0).fit(df)
            out = model.approxSimilarityJoin(df, df, 1 - T, distCol="d")
            rows = out.filter("datasetA.id < datasetB.id").select("datasetA.id", "datasetB.id").collect()
        except Exception:
            if timer is None or timer.is_alive():
                raise
            return time.perf_counter() - t0, None, jvm_peak_mb()
        finally:
            if timer:
                timer.cancel()
        seconds = time.perf_counter() - t0
        return seconds, [(r[0], r[1]) for r in rows], jvm_peak_mb()
    finally:
        spark.stop()


def jvm_peak_mb():
    """Peak resident set of the Spark JVM (a child process of this one), in MB."""
    import psutil

    peaks = [peak_mb(p.pid) for p in psutil.Process().children(recursive=True) if "java" in p.name()]
    return max((p for p in peaks if p is not None), default=None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--spark-tables", type=int, default=5)
    ap.add_argument("--spark-timeout", type=float, help="cancel Spark's join after this many seconds and "
                                                           "report its time as a lower bound")
    ap.add_argument("--skip", action="append", default=[], choices=["dask_kernels", "spark", "datasketch", "from store"])
    ap.add_argument("--pass-memory", help="both joins' pass_memory, e.g. 64MiB (default: the join's)")
    args = ap.parse_args()
    X, families = make_data(args.rows)
    truth = truth_pairs(X, families)
    print(f"{args.rows} rows, {len(truth)} pairs at Jaccard >= {T}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'system':<14}{'seconds':>10}{'recall':>9}{'precision':>11}{'pairs':>10}{'peak MB':>9}"
          f"{'ours faster':>13}", flush=True)
    ours = None
    runs = [("dask_kernels", lambda: run_ours(X, args.workers, args.pass_memory)), ("datasketch", lambda: run_datasketch(X)),
            ("spark", lambda: run_spark(X, args.workers, args.spark_tables, args.spark_timeout)),
            ("from store", lambda: run_from_store(X, args.workers, args.pass_memory))]
    for name, run in runs:
        if name in args.skip:
            continue
        result = run()
        if result is None:
            continue
        seconds, found, peak = result
        ours = seconds if ours is None else ours
        if found is None:  # cancelled at --spark-timeout
            print(f"{name:<14}{'> %.0f' % seconds:>10}{'-':>9}{'-':>11}{'-':>10}{'-':>9}"
                  f"{'> %.1f' % (seconds / ours):>12}x (cancelled; load average {os.getloadavg()[0]:.1f})", flush=True)
            continue
        recall, precision, n = score(X, found, truth)
        peak = "?" if peak is None else f"{peak:.0f}"
        ratio = "" if name == "from store" else f"{seconds / ours:.1f}x"  # another form of ours
        print(f"{name:<14}{seconds:>10.1f}{recall:>9.4f}{precision:>11.4f}{n:>10}{peak:>9}{ratio:>13} "
              f"(load average {os.getloadavg()[0]:.1f})", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
