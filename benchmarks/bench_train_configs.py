"""fit_incremental's configurations with SGDClassifier (shuffles, step_blocks, replicas, a cluster) against dask-ml and partial_fit.

One run, one float store (synthetic 4-class data, NRFF k = 256, float32 features, 10000-row
blocks) written with ``dask_kernels.featurize``; the same SGDClassifier (log loss, constant
rate) and the same number of epochs for every row. Every learner gets its best configuration,
tried in the same run: scikit-learn's SGDClassifier fits one binary problem per class, on
``n_jobs`` threads (bitwise the same model), so the peers run with ``n_jobs=1`` and ``2``:

* ``SGDClassifier.partial_fit`` on the features held in memory (float64, no reading), looping
  over the same block size, ``n_jobs`` 1 and 2; and with the estimator's ``shuffle=False``,
  also in calls of ``STEP_BLOCKS`` blocks: the ceiling of every out-of-core learner ("x pf":
  against the fastest of these rows);
* the same loop (``n_jobs=None``) through ``fit_incremental``'s learner call, so through the
  SGD fast path (``dask_kernels.learn.sgd_fast``, bitwise the same model; the first call too) on 1
  and 2 threads: the learner's own speed (not a peer; "x pf" is against scikit-learn's rows);
* dask-ml's ``Incremental`` on the store's dask array (the threaded scheduler reading blocks
  in parallel, ``shuffle_blocks=True``), one ``partial_fit`` pass per epoch: on the stored
  float32, and cast to float64 in its graph (scikit-learn's SGD trains about 20% faster on
  float64 rows) with ``n_jobs`` 1 and 2, the estimator's ``shuffle`` on and off, on the
  store's row chunks (the same call sizes) and rechunked to ``STEP_BLOCKS`` blocks in its graph
  (the same call sizes as ``step_blocks``), and persisted (read once per run, kept in memory as
  float64, as ``fit_incremental`` keeps this store's rows): the fastest is the peer ("x dask-ml");
* ``fit_incremental`` (local, no held-out set, so every row trains as in the peers) with its
  defaults (cross-block shuffle, ``n_jobs=None``: the classes on every usable CPU), with the
  within-block shuffle (``shuffle_window=1``: the difference is the cost of the true shuffle),
  with ``n_jobs=1``, with the SGD fast path off (dask config ``dask_kernels.sgd_fast``: every step through
  scikit-learn's own ``partial_fit``, the same model bitwise; the A/B of the fast path), with
  every step gathered into a float64 array (``dask_kernels.sgd_fast_in_place`` off: the A/B of the gather-free
  steps, where the fast path reads the kept float32 rows in place), and with
  ``step_blocks=STEP_BLOCKS`` (one ``partial_fit`` call per 5 blocks'
  rows): with the automatic window, with one window of every block (a global permutation), and
  with the estimator's ``shuffle=False`` (faster, but see the accuracy over seeds). The store's
  20 blocks fit in the two automatic windows in flight, so the sequential local rows (not the
  within-block shuffle's 1-block windows) read and decompress them once per run and keep them
  (``dask_kernels.learn.shuffle.keeps_rows``; hence dask-ml's persisted row);
* ``fit_incremental(..., replicas=2)`` in two threads of this process (no Client): iterative
  parameter mixing on both cores.

These runs are timed interleaved (every run once per round, ``--repeat`` rounds after one
untimed round, the best time of each: a burst of load from other jobs then slows all of them
alike). Then the test accuracy of sequential training and of ``replicas=2`` over ``--seeds``
seeds (with a constant rate the final model's accuracy varies from seed to seed by a point or
two, more than the replicas' effect: one seed cannot compare them).

* on a 2-worker LocalCluster (one thread each): ``fit_incremental`` with the steps prepared on
  the workers (``cluster read``: one learner, in this process), and ``replicas=2`` (iterative
  parameter mixing: two replicas train on the workers, read their own blocks there, and are
  averaged after every epoch), compared with the one-learner runs (cluster read and local).
  Both run once untimed first on the same cluster (imports, scattering, the first reads), then
  are timed with the same epochs (best of 2).

Then a GCWS store (b = 8, k = 256) of the same rows: ``fit_incremental`` against ``partial_fit``
(``n_jobs`` 1 and 2) on the same one-hot CSR held in memory, interleaved. Rows/s count training
rows times epochs over the best wall time of the whole call; classes are passed to every
learner, so nobody pays a pass over the labels; test accuracy on 20000 untouched rows is
printed beside each.

Run: ``python benchmarks/bench_train_configs.py [--rows 200000] [--epochs 3] [--repeat 3] [--seeds 5]
[--quick] [--no-cluster]`` (``--quick``: 60000 rows, 2 epochs; the full run takes about 8
minutes on 2 idle cores). The default learners from a store, one epoch: ``bench_train.py``.
Needs the ``bench`` extra (dask-ml). On a shared machine the figures are noisy: compare the
ratios.
"""

import argparse
import atexit
import os
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import dask  # noqa: E402
import dask.array as da  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402

import dask_kernels  # noqa: E402
from dask_kernels import GCWS, NRFF, fit_incremental  # noqa: E402

from _timing import best_times  # noqa: E402
from bench_accuracy import synthetic  # noqa: E402  (4 classes from 10 Gaussian inputs)

BLOCK = 10_000
STEP_BLOCKS = 5  # fit_incremental(step_blocks=...): blocks' rows per partial_fit call in its fast rows


def sgd(eta0, random_state=0, n_jobs=None, shuffle=True):
    return SGDClassifier(loss="log_loss", alpha=1e-5, learning_rate="constant", eta0=eta0,
                         random_state=random_state, n_jobs=n_jobs, shuffle=shuffle)


def timed(fn, repeat=3):
    """``(fn(), best wall time of repeat runs)``: every run is seeded, so each returns the same
    model; the best, not the mean, because on a shared machine other jobs only add time."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def in_memory(F, y, eta0, epochs, classes, n_jobs=None, shuffle=True, step=BLOCK, learner_threads=None):
    """The estimator's ``partial_fit`` over the blocks in a seeded order; with ``learner_threads``
    through fit_incremental's learner call instead (``dask_kernels.learn.learner``: the SGD
    fast path, bitwise the same model, on that many threads)."""
    from dask_kernels.learn import learner

    est = sgd(eta0, n_jobs=n_jobs, shuffle=shuffle)
    rng = np.random.default_rng(0)
    starts = np.arange(0, F.shape[0], step)
    for _ in range(epochs):
        for a in starts[rng.permutation(starts.size)]:
            if learner_threads is None:
                est.partial_fit(F[a:a + step], y[a:a + step], classes=classes)
            else:
                learner.partial_fit(est, F[a:a + step], y[a:a + step], {"classes": classes},
                                    threads=learner_threads, finite=True)
    return est


def dask_ml_incremental(store, eta0, epochs, classes, dtype=None, n_jobs=None, shuffle=True, chunk=BLOCK,
                        persist=False):
    from dask_ml.wrappers import Incremental

    inc = Incremental(sgd(eta0, n_jobs=n_jobs, shuffle=shuffle), shuffle_blocks=True, random_state=0)
    F, y = store.features.rechunk({0: chunk, 1: -1}), store.labels.rechunk(chunk)
    F = F if dtype is None else F.astype(dtype)
    if persist:  # read once per run (timed) and kept in memory, as fit_incremental keeps a small store's rows
        F, y = F.persist(), y.persist()
    for _ in range(epochs):
        inc.partial_fit(F, y, classes=classes)
    return inc.estimator_


def accuracy_over_seeds(store, eta0, epochs, classes, Fte, yte, seeds):
    """Test accuracy of sequential training (defaults, and ``step_blocks=STEP_BLOCKS`` with the
    estimator's ``shuffle=False``) and of replicas=2 over ``seeds`` seeds (the seed of the
    shuffles and the estimator's random_state): with a constant rate the final model's accuracy
    varies from seed to seed by more than these configurations' effect, so one seed cannot tell
    them apart. Replicas on a cluster give bitwise the local replicas' model, so this holds for
    them too."""
    configs = {"sequential": ({}, True), f"step_blocks={STEP_BLOCKS}": ({"step_blocks": STEP_BLOCKS}, True),
               f"step_blocks={STEP_BLOCKS}, shuffle=False": ({"step_blocks": STEP_BLOCKS}, False),
               "replicas=2": ({"replicas": 2}, True)}
    acc = {name: [] for name in configs}
    for seed in range(seeds):
        for name, (kw, shuffle) in configs.items():
            model = fit_incremental(sgd(eta0, random_state=seed, shuffle=shuffle), store, epochs=epochs,
                                    validation_fraction=None, classes=classes, seed=seed, client=False,
                                    progress=False, **kw)
            acc[name].append(model.estimator.score(Fte, yte) * 100)
    one = np.array(acc["sequential"])
    parts = []
    for name, a in acc.items():
        a = np.array(a)
        part = f"{name} {a.mean():.2f} ({a.std(ddof=1):.2f})"
        if name != "sequential":
            d = a - one
            part += f", {d.mean():+.2f} points vs sequential (standard error {d.std(ddof=1) / np.sqrt(seeds):.2f})"
        parts.append(part)
    return f"test accuracy over {seeds} seeds, {epochs} epochs (mean, sd): " + "; ".join(parts)


def on_cluster(store, sgd, eta0, epochs, classes, Fte, row, ref, local):
    """The LocalCluster rows: steps prepared on the workers; replicas 1 and 2 on the workers."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.run(lambda: None)  # workers up before the clock starts

        def fit(**kw):
            return fit_incremental(sgd(eta0), store, epochs=epochs, validation_fraction=None, classes=classes,
                                   client=client, progress=False, **kw)

        fit()  # warm-up of both modes: imports, scattering and the first reads on the workers
        fit(replicas=2)
        model, s = timed(fit, 2)
        one = row("fit_incremental, cluster read (2 workers)", model.estimator, s, Fte, ref)
        model, s = timed(lambda: fit(replicas=2), 2)
        rps = row("fit_incremental, replicas=2 on 2 workers", model.estimator, s, Fte, ref)
        row.rows[-1] = row.rows[-1][:3] + (f"{rps / ref:.2f}x pf, {rps / one:.2f}x cluster read, "
                                           f"{rps / local:.2f}x local",)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="60000 rows, 2 epochs")
    ap.add_argument("--no-cluster", action="store_true", help="skip the LocalCluster rows")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved timed rounds (best of)")
    ap.add_argument("--seeds", type=int, default=5, help="seeds of the accuracy comparison")
    args = ap.parse_args()
    load = os.getloadavg()
    n, epochs = (60_000, 2) if args.quick else (args.rows, args.epochs)
    X, y = synthetic(n + 20_000)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    classes = np.unique(ytr)
    tmp = tempfile.mkdtemp(prefix="bench_train-")
    atexit.register(shutil.rmtree, tmp, True)  # the stores written here are removed at exit
    rows = []

    def row(name, est_or_model, seconds, Fte, ref=None):
        acc = est_or_model.score(Fte, yte)
        rps = n * epochs / seconds
        rows.append((name, rps, acc, "" if ref is None else f"{rps / ref:.2f}x"))
        return rps

    row.rows = rows

    # -- float store: NRFF k = 256 -------------------------------------------------------------
    nrff = NRFF(n_components=256, gamma=0.5, seed=0).fit(Xtr)
    store = dask_kernels.featurize(da.from_array(Xtr, chunks=(BLOCK, -1)), nrff, labels=ytr,
                                   store=os.path.join(tmp, "nrff.zarr"), progress=False)
    store = dask_kernels.open_store(store.path)
    Fte = nrff.transform(Xte)
    eta0 = 0.5  # NRFF rows have unit norm: eta0 = 0.5 / E||x||^2
    Fmem = np.asarray(store.features.compute(), dtype=np.float64)

    def local(shuffle=True, fast=True, rows=True, **kw):
        def run():
            # the switches of the SGD fast path (A/B): docs/guide/training.md, Configuration
            with dask.config.set({"dask_kernels.sgd_fast": fast, "dask_kernels.sgd_fast_in_place": rows}):
                return fit_incremental(sgd(eta0, shuffle=shuffle), store, epochs=epochs, validation_fraction=None,
                                       classes=classes, progress=False, **kw).estimator
        return run

    big = STEP_BLOCKS * BLOCK
    runs = [  # (name, call returning the trained estimator); timed interleaved, best of --repeat
        ("partial_fit, features in memory (float64), n_jobs=1", lambda: in_memory(Fmem, ytr, eta0, epochs, classes)),
        ("partial_fit, features in memory (float64), n_jobs=2",
         lambda: in_memory(Fmem, ytr, eta0, epochs, classes, n_jobs=2)),
        (f"partial_fit, in memory, n_jobs=2, {big}-row calls",
         lambda: in_memory(Fmem, ytr, eta0, epochs, classes, n_jobs=2, step=big)),
        (f"partial_fit, in memory, n_jobs=2, {big}-row calls, shuffle=False",
         lambda: in_memory(Fmem, ytr, eta0, epochs, classes, n_jobs=2, shuffle=False, step=big)),
        ("SGD fast path in memory (float64), 1 thread",
         lambda: in_memory(Fmem, ytr, eta0, epochs, classes, learner_threads=1)),
        ("SGD fast path in memory (float64), 2 threads",
         lambda: in_memory(Fmem, ytr, eta0, epochs, classes, learner_threads=2)),
    ]
    # dask-ml: as stored; then float64 (its faster dtype) with n_jobs 1 and 2, the estimator's
    # shuffle on and off, on the stored 10000-row chunks and rechunked to big ones in its graph
    for dtype, n_jobs, shuffle, chunk in ((None, 1, True, BLOCK), (np.float64, 1, True, BLOCK),
                                          (np.float64, 1, False, BLOCK), (np.float64, 2, True, BLOCK),
                                          (np.float64, 2, False, BLOCK), (np.float64, 2, True, big),
                                          (np.float64, 2, False, big)):
        label = "float32 as stored" if dtype is None else "cast to float64"
        runs.append((f"dask-ml Incremental, {label}, n_jobs={n_jobs}" + ("" if shuffle else ", shuffle=False")
                     + ("" if chunk == BLOCK else f", {chunk}-row chunks"),
                     lambda dtype=dtype, n_jobs=n_jobs, shuffle=shuffle, chunk=chunk: dask_ml_incremental(
                         store, eta0, epochs, classes, dtype, n_jobs, shuffle, chunk)))
    runs.append(("dask-ml Incremental, cast to float64 and persisted, n_jobs=1",
                 lambda: dask_ml_incremental(store, eta0, epochs, classes, np.float64, 1, True, BLOCK, persist=True)))
    runs += [("fit_incremental, float store, cross-block shuffle", local()),
             ("fit_incremental, float store, cross-block shuffle, SGD fast path off", local(fast=False)),
             ("fit_incremental, float store, cross-block shuffle, gathered steps", local(rows=False)),
             ("fit_incremental, float store, within-block shuffle", local(shuffle_window=1)),
             ("fit_incremental, float store, cross-block, n_jobs=1", local(n_jobs=1)),
             (f"fit_incremental, step_blocks={STEP_BLOCKS}", local(step_blocks=STEP_BLOCKS)),
             (f"fit_incremental, step_blocks={STEP_BLOCKS}, one window of every block",
              local(step_blocks=STEP_BLOCKS, shuffle_window=store.features.numblocks[0])),
             (f"fit_incremental, step_blocks={STEP_BLOCKS}, shuffle=False", local(False, step_blocks=STEP_BLOCKS)),
             ("fit_incremental, replicas=2 in 2 local threads", local(replicas=2, client=False))]
    fitted = {}
    for name, fn in runs:  # warm-up: imports, numba caches, page cache
        fitted[name] = fn()
    seconds = best_times([lambda name=name, fn=fn: fitted.__setitem__(name, fn()) for name, fn in runs],
                         args.repeat)
    rps = {name: row(name, fitted[name], s, Fte) for (name, _), s in zip(runs, seconds)}
    ref = max(v for k, v in rps.items() if k.startswith("partial_fit"))
    peer = max(v for k, v in rps.items() if k.startswith("dask-ml"))
    # the estimator's shuffle=False is faster but less accurate (one-vs-rest problems that all
    # see the rows in one order): also compare the fastest rows that keep it
    shuffled = {k: v for k, v in rps.items() if "shuffle=False" not in k}
    best_ours = max((v, k) for k, v in shuffled.items() if k.startswith("fit_incremental") and "replicas" not in k)
    best_peer = max((v, k) for k, v in shuffled.items() if k.startswith("dask-ml"))
    shuffled_line = (f"fastest with the estimator's shuffle=True: {best_ours[1]} {best_ours[0]:,.0f} rows/s, "
                     f"{best_peer[1]} {best_peer[0]:,.0f} rows/s: {best_ours[0] / best_peer[0]:.2f}x dask-ml")
    local_rps = rps["fit_incremental, float store, cross-block shuffle"]
    for i, (name, *_rest) in enumerate(rows):
        r = rps[name]
        ratio = f"{r / ref:.2f}x pf"
        if name.startswith(("dask-ml", "fit_incremental")):
            ratio += f", {r / peer:.2f}x dask-ml"
        if "replicas" in name:
            ratio += f", {r / local_rps:.2f}x local"
        rows[i] = rows[i][:3] + (ratio,)
    seeds_line = accuracy_over_seeds(store, eta0, epochs, classes, Fte, yte, args.seeds)
    if not args.no_cluster:
        on_cluster(store, sgd, eta0, epochs, classes, Fte, row, ref, local_rps)

    # -- GCWS store: b = 8, k = 256 ------------------------------------------------------------
    gcws = GCWS(n_components=256, bits=8, seed=0).fit(Xtr)
    gstore = dask_kernels.featurize(da.from_array(Xtr, chunks=(BLOCK, -1)), gcws, labels=ytr,
                                    store=os.path.join(tmp, "gcws.zarr"), progress=False)
    gstore = dask_kernels.open_store(gstore.path)
    Gte = gcws.expand(gcws.transform(Xte))
    geta0 = 0.5 / 256  # one-hot rows have squared norm k
    Gmem = gcws.expand(np.asarray(gstore.features.compute()))
    gruns = [("partial_fit, one-hot CSR in memory, n_jobs=1", lambda: in_memory(Gmem, ytr, geta0, epochs, classes)),
             ("partial_fit, one-hot CSR in memory, n_jobs=2",
              lambda: in_memory(Gmem, ytr, geta0, epochs, classes, n_jobs=2)),
             ("fit_incremental, GCWS store", lambda: fit_incremental(
                 sgd(geta0), gstore, epochs=epochs, validation_fraction=None, classes=classes,
                 progress=False).estimator)]
    for name, fn in gruns:
        fitted[name] = fn()
    seconds = best_times([lambda name=name, fn=fn: fitted.__setitem__(name, fn()) for name, fn in gruns],
                         args.repeat)
    grps = [row(name, fitted[name], s, Gte) for (name, _), s in zip(gruns, seconds)]
    rows[-1] = rows[-1][:3] + (f"{grps[2] / max(grps[:2]):.2f}x pf",)

    print(f"\n{n} training rows x {epochs} epochs, blocks of {BLOCK} rows, test on {len(yte)} rows "
          f"(SGDClassifier log loss, constant eta0)")
    print(f"{'run':<84} {'rows/s':>12} {'test acc':>9}  ratio")
    for name, rps, acc, ratio in rows:
        print(f"{name:<84} {rps:>12,.0f} {acc:>9.4f}  {ratio}")
    print(shuffled_line)
    print(seeds_line)
    print(f"load average: {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end ({os.cpu_count()} cores; "
          "figures of a loaded machine are noisy)")


if __name__ == "__main__":
    main()
