"""Training throughput from a feature store: fit_incremental against the learner in memory and dask-ml.

One run, two stores of the same synthetic rows, written with ``dask_kernels.featurize`` in
10000-row blocks with featurize's default codecs: NRFF k = 256 (dense float32 rows, stored
raw) and GCWS k = 256, b = 8 (uint8 codes, Zstandard).
One epoch, every row trains (no held-out set), the same constant rate for every row of a
store. For each store and each learner, ``SoftmaxSGD`` (the CLI's default, ``train
--estimator softmax``; on a GCWS store it reads the codes, ``code_bits=8``) and
``SGDClassifier(loss="log_loss")`` (``--estimator sgd``):

* **in memory**: the learner's ``partial_fit`` over the same blocks held in RAM, in a seeded
  order of the blocks, through fit_incremental's own learner call
  (``dask_kernels.learn.learner.partial_fit``: for SGDClassifier the SGD fast path, on every
  usable CPU as fit_incremental runs it; the rows as the store holds them, float32, and the
  one-hot CSR of the codes for SGDClassifier): the ceiling of any out-of-core run ("x mem");
* **fit_incremental**: the same learner from the store, the defaults (reading, checking and,
  for the codes, decompressing blocks; the cross-block shuffle; prefetching), ``client=False``;
* **dask-ml**: ``Incremental(SGDClassifier(log_loss), shuffle_blocks=True)`` over the store's
  dask array, one ``partial_fit`` pass (the threaded scheduler reads blocks in parallel). Its
  configurations, all tried in the same run, the fastest is the peer ("x dask-ml"): float rows
  cast to float64 (scikit-learn's faster dtype on dense rows) and codes expanded to one-hot
  CSR in its graph; ``n_jobs`` 1 (block-sized calls) and 2 (50000-row calls, where threads pay).

Every run is timed ``--repeat`` times, interleaved (every run once per round after an untimed
round: compilation, page cache), keeping the best: a burst of load from other jobs then slows
all of them alike. rows/s = training rows / best wall time of the whole call; rows/CPU s =
training rows / least CPU seconds of the process over the call (every thread: reading, the
learner's threads); the accuracy is on 20000 held-out rows. The load average is printed: on a
shared machine compare the ratios, and on a loaded one (where a run gets the CPU it needs, not
two free cores) the CPU ratios.

Then, because one epoch at a constant rate ends on a model whose accuracy varies from seed
to seed by a point or two, each learner's test accuracy in memory over ``--seeds`` seeds
(the order of the blocks and the learner's ``random_state``), and the paired difference.

Run: ``python benchmarks/bench_train.py [--rows 200000] [--classes 4] [--repeat 3] [--seeds 3] [--quick]
[--stores nrff,gcws] [--learners softmax,sgd]`` (``--quick``: 60000 rows, 2 repeats; the seeds'
comparison needs both learners and ``--seeds`` of 2 or more). Needs the ``bench`` extra (dask-ml).

The shuffle window holds 128 MiB of stored rows (50 blocks of these codes, 12 of these floats)
and the first window of a run is read before its first step trains, so on a few hundred
thousand rows that wait is a large share of the run; ``--rows 4000000 --stores gcws --learners
softmax`` measures the rate a long run settles at.
"""

import argparse
import atexit
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import dask.array as da  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402

import dask_kernels  # noqa: E402
from dask_kernels import GCWS, NRFF, SoftmaxSGD, fit_incremental  # noqa: E402

from _timing import best_times_cpu  # noqa: E402
from bench_accuracy import synthetic  # noqa: E402  (4 classes from 10 Gaussian inputs)

BLOCK = 10_000
BIG = 5 * BLOCK  # dask-ml's n_jobs=2 calls
ALPHA = 1e-5


def synthetic10(n, d=10, seed=0):
    """10 classes: quintiles of the product term of :func:`synthetic` times its radius term."""
    X, _ = synthetic(n, d, seed)
    t = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2])
    q = np.searchsorted(np.quantile(t, [0.2, 0.4, 0.6, 0.8]), t)
    return X, 2 * q + (X[:, 3] ** 2 + X[:, 4] ** 2 > 1.4)


def sgd(eta0, n_jobs=None, seed=0):
    return SGDClassifier(loss="log_loss", alpha=ALPHA, learning_rate="constant", eta0=eta0, random_state=seed,
                         n_jobs=n_jobs)


def softmax(eta0, code_bits=None, seed=0):
    return SoftmaxSGD(code_bits=code_bits, alpha=ALPHA, eta0=eta0, random_state=seed)


def in_memory(make, F, y, classes, seed=0):
    """``make()``'s partial_fit over the blocks of ``F`` in an order drawn from ``seed``,
    through fit_incremental's learner call (the same threads and fast paths)."""
    from dask_kernels.learn import learner

    est = make()
    threads = learner.learner_threads(est, None)
    starts = np.arange(0, F.shape[0], BLOCK)
    for a in starts[np.random.default_rng(seed).permutation(starts.size)]:
        learner.partial_fit(est, F[a:a + BLOCK], y[a:a + BLOCK], {"classes": classes}, threads=threads, finite=True)
    return est


def from_store(make, store, classes):
    return fit_incremental(make(), store, epochs=1, validation_fraction=None, classes=classes, client=False,
                           progress=False).estimator


def dask_ml(store, eta0, classes, n_jobs, expand=None):
    """dask-ml's Incremental on the store's dask array: float rows cast to float64, or codes
    expanded to one-hot CSR (``expand``) in its graph."""
    import scipy.sparse as sp
    from dask_ml.wrappers import Incremental

    chunk = BLOCK if n_jobs == 1 else BIG
    F, y = store.features.rechunk({0: chunk, 1: -1}), store.labels.rechunk(chunk)
    if expand is None:
        F = F.astype(np.float64)
    else:
        width = store.features.shape[1] << expand.bits
        F = F.map_blocks(expand.expand, dtype=np.float32, chunks=(F.chunks[0], (width,)),
                         meta=sp.csr_matrix((0, 0), dtype=np.float32))
    inc = Incremental(sgd(eta0, n_jobs=n_jobs), shuffle_blocks=True, random_state=0)
    inc.partial_fit(F, y, classes=classes)
    return inc.estimator_


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--classes", type=int, choices=(4, 10), default=4)
    ap.add_argument("--repeat", type=int, default=3, help="interleaved timed rounds (best of)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds of the accuracy comparison")
    ap.add_argument("--quick", action="store_true", help="60000 rows, 2 repeats")
    ap.add_argument("--stores", default="nrff,gcws", help="comma-separated, from: nrff, gcws")
    ap.add_argument("--learners", default="softmax,sgd",
                    help="comma-separated, from: softmax, sgd (dask-ml's SGDClassifier always runs, as the peer; "
                         "without sgd no one-hot copy of the codes is held, for runs of millions of rows)")
    args = ap.parse_args()
    n, repeat = (60_000, 2) if args.quick else (args.rows, args.repeat)
    X, y = (synthetic if args.classes == 4 else synthetic10)(n + 20_000)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    classes = np.unique(ytr)
    tmp = tempfile.mkdtemp(prefix="bench_train-")
    atexit.register(shutil.rmtree, tmp, True)  # the stores written here are removed at exit

    def stored(fmap, name):
        fmap = fmap.fit(Xtr)
        s = dask_kernels.featurize(da.from_array(Xtr, chunks=(BLOCK, -1)), fmap, labels=ytr,
                                   store=os.path.join(tmp, name), progress=False)
        return dask_kernels.open_store(s.path), fmap

    stores, learners = set(args.stores.split(",")), set(args.learners.split(","))
    eta_f, eta_c = 0.5, 0.5 / 256  # 0.5 / mean squared row norm: NRFF rows have norm 1, one-hot rows k ones
    runs = []  # (store, learner, how, call returning the trained estimator, test rows)
    if "nrff" in stores:
        nrff_store, nrff = stored(NRFF(n_components=256, gamma=0.5, seed=0), "nrff.zarr")
        D = np.asarray(nrff_store.features.compute())  # float32, as stored
        Dte = nrff.transform(Xte)
        if "softmax" in learners:
            runs += [
                ("NRFF", "SoftmaxSGD", "in memory", lambda: in_memory(lambda: softmax(eta_f), D, ytr, classes), Dte),
                ("NRFF", "SoftmaxSGD", "fit_incremental",
                 lambda: from_store(lambda: softmax(eta_f), nrff_store, classes), Dte)]
        if "sgd" in learners:
            runs += [
                ("NRFF", "SGDClassifier", "in memory", lambda: in_memory(lambda: sgd(eta_f), D, ytr, classes), Dte),
                ("NRFF", "SGDClassifier", "fit_incremental",
                 lambda: from_store(lambda: sgd(eta_f), nrff_store, classes), Dte)]
        runs += [("NRFF", "SGDClassifier", "dask-ml, n_jobs=1", lambda: dask_ml(nrff_store, eta_f, classes, 1), Dte),
                 ("NRFF", "SGDClassifier", "dask-ml, n_jobs=2", lambda: dask_ml(nrff_store, eta_f, classes, 2), Dte)]
    if "gcws" in stores:
        gcws_store, gcws = stored(GCWS(n_components=256, bits=8, seed=0), "gcws.zarr")
        codes = np.asarray(gcws_store.features.compute())
        Cte = gcws.transform(Xte)
        Ote = gcws.expand(Cte)
        if "softmax" in learners:
            runs += [
                ("GCWS", "SoftmaxSGD", "in memory", lambda: in_memory(lambda: softmax(eta_c, 8), codes, ytr, classes),
                 Cte),
                ("GCWS", "SoftmaxSGD", "fit_incremental",
                 lambda: from_store(lambda: softmax(eta_c, 8), gcws_store, classes), Cte)]
        if "sgd" in learners:
            onehot = gcws.expand(codes)  # rows x k nonzeros: the in-memory SGDClassifier's input
            runs += [
                ("GCWS", "SGDClassifier", "in memory", lambda: in_memory(lambda: sgd(eta_c), onehot, ytr, classes),
                 Ote),
                ("GCWS", "SGDClassifier", "fit_incremental",
                 lambda: from_store(lambda: sgd(eta_c), gcws_store, classes), Ote)]
        runs += [("GCWS", "SGDClassifier", "dask-ml, n_jobs=1", lambda: dask_ml(gcws_store, eta_c, classes, 1, gcws),
                  Ote),
                 ("GCWS", "SGDClassifier", "dask-ml, n_jobs=2", lambda: dask_ml(gcws_store, eta_c, classes, 2, gcws),
                  Ote)]
    fitted = {}
    for i, (*_, fn, _te) in enumerate(runs):  # untimed round: imports, Numba caches, page cache
        fitted[i] = fn()
    load = os.getloadavg()
    seconds, cpu = best_times_cpu([lambda i=i, fn=fn: fitted.__setitem__(i, fn())
                                   for i, (*_, fn, _te) in enumerate(runs)], repeat)
    rps, rpc = [n / s for s in seconds], [n / c for c in cpu]
    acc = [fitted[i].score(te, yte) for i, (*_, te) in enumerate(runs)]

    def find(store, learner, how):
        return next(i for i, r in enumerate(runs) if r[:3] == (store, learner, how))

    print(f"\n{n} training rows, {len(classes)} classes, one epoch, blocks of {BLOCK}, test on {len(yte)} rows; "
          f"best of {repeat} interleaved")
    print(f"{'store':<6} {'learner':<14} {'run':<18} {'rows/s':>10} {'rows/CPU s':>11} {'test acc':>9}  "
          "ratios (wall; CPU)")
    for i, (store, learner, how, *_rest) in enumerate(runs):
        peers = [j for j, r in enumerate(runs) if r[0] == store and r[2].startswith("dask-ml")]
        peer, peer_cpu = max(rps[j] for j in peers), max(rpc[j] for j in peers)
        ratio = ""
        if how == "fit_incremental":
            mem = find(store, learner, "in memory")
            ratio = (f"{rps[i] / rps[mem]:.2f}x mem, {rps[i] / peer:.2f}x dask-ml; "
                     f"{rpc[i] / rpc[mem]:.2f}x mem, {rpc[i] / peer_cpu:.2f}x dask-ml")
        elif how.startswith("dask-ml"):
            ratio = f"{rps[i] / peer:.2f}x dask-ml; {rpc[i] / peer_cpu:.2f}x dask-ml"
        print(f"{store:<6} {learner:<14} {how:<18} {rps[i]:>10,.0f} {rpc[i]:>11,.0f} {acc[i]:>9.4f}  {ratio}")
    both = {"softmax", "sgd"} <= learners
    for store in [name for name in ("NRFF", "GCWS") if both and name.lower() in stores]:
        a, b = find(store, "SoftmaxSGD", "fit_incremental"), find(store, "SGDClassifier", "fit_incremental")
        print(f"{store}: fit_incremental with SoftmaxSGD {rps[a] / rps[b]:.2f}x SGDClassifier's rows/s "
              f"({rpc[a] / rpc[b]:.2f}x its rows per CPU s), test accuracy {acc[a] - acc[b]:+.4f}")
    # with a constant rate one epoch's final model varies from seed to seed by a point or two:
    # the learners' accuracies over seeds (row orders and random_state), in memory
    compared = []  # (store, softmax's rows and test rows, SGDClassifier's, eta0, code bits)
    if both and args.seeds >= 2 and "nrff" in stores:
        compared.append(("NRFF", D, Dte, D, Dte, eta_f, None))
    if both and args.seeds >= 2 and "gcws" in stores:
        compared.append(("GCWS", codes, Cte, onehot, Ote, eta_c, 8))
    for store, F, Fte, G, Gte, eta, bits in compared:
        acc_s = [fitted_s.score(Fte, yte) for fitted_s in (
            in_memory(lambda s=s: softmax(eta, bits, s), F, ytr, classes, s) for s in range(args.seeds))]
        acc_g = [fitted_g.score(Gte, yte) for fitted_g in (
            in_memory(lambda s=s: sgd(eta, seed=s), G, ytr, classes, s) for s in range(args.seeds))]
        d = np.subtract(acc_s, acc_g)
        print(f"{store}: test accuracy over {args.seeds} seeds, mean (sd): SoftmaxSGD {np.mean(acc_s):.4f} "
              f"({np.std(acc_s, ddof=1):.4f}), SGDClassifier {np.mean(acc_g):.4f} ({np.std(acc_g, ddof=1):.4f}), "
              f"difference {d.mean():+.4f} (standard error {d.std(ddof=1) / np.sqrt(args.seeds):.4f})")
    print(f"load average: {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end ({os.cpu_count()} cores; "
          "figures of a loaded machine are noisy)")


if __name__ == "__main__":
    main()
