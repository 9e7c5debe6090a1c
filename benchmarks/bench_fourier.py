"""Rows per second of RFF, NRFF and Fastfood against scikit-learn's RBFSampler, and FWHT speed.

Run: ``python benchmarks/bench_fourier.py [--quick] [--threads 2] [--repeats N] [--case 1024x16384]``

Peer mode: ``python benchmarks/bench_fourier.py --peer --rows 20000 [--case 1024x16384 ...]``
times only RBFSampler float32 in its best configuration (float32 input, one call, BLAS at its
default thread count) and our RFF and NRFF public ``transform`` (default ``n_jobs``), at a row
count where the transform's product runs on all rows at once, interleaved, best of the
repeats, and prints the wall-clock ratio of each against RBFSampler and the process CPU time.
With ``--phases`` it also prints where each one's time goes, median over the repeats: for RFF and
NRFF the phases of their public transform as they log them (``dask_kernels.maps._parallel`` at
DEBUG: at d k >= 2**23 the SGEMM on the BLAS's threads, then the cosine on the thread pool), and
for RBFSampler its ``transform``'s two steps timed apart in one more interleaved run (the SGEMM
``X @ W`` with the input check, then the offset, ``np.cos`` and scale passes; checked to give
``transform``'s bytes).

What is compared, all in one run, with the same number of threads (``--threads``):

* ours: the public ``transform`` with ``n_jobs=--threads`` (row blocks on a thread pool, for
  RFF and NRFF cut into column panels when the rows alone would leave a thread idle; BLAS held
  to one thread per task; the float32 cosine is ``cos32v2``, fused), column ``public``.
* RBFSampler, the peer, in the better of two configurations: ``blas`` (one call on the whole
  block, BLAS with ``--threads`` threads: how it is normally used) and ``pool`` (the block cut
  into 256-row chunks on a thread pool, BLAS 1 thread each).

The ceiling of RFF and NRFF, measured in the same run: their cost is almost all one SGEMM, the
same as RBFSampler's, so they can beat RBFSampler only by what it spends beyond that SGEMM. Two
reference rows time ``X @ W`` alone (RBFSampler's float32 ``W``): into a fresh output (what a
transform returns: the page faults of its first write included) and into a preallocated one, in
the ``blas`` and ``pool`` configurations and as ``tiles``, the column panels our public transform
cuts the product into (one BLAS thread per tile, :func:`dask_kernels.maps._fourier.projection_tiles`).
The line under each size gives RBFSampler float32's best time over the best fresh-output SGEMM
time: no map doing that SGEMM and anything else can beat RBFSampler float32 by more.

Ratios compare our ``public`` figure with RBFSampler's best. On a shared machine wall-clock figures
swing with the other processes' load; the last column, ``cpu/RBF32``, is a steadier proxy: the
process CPU time (all threads) of RBFSampler float32's least-CPU configuration over the method's,
each the least over the repeats (with every thread busy, the wall-clock ratio on a quiet machine;
OpenBLAS's threads spin while they wait, so its ``blas`` runs count their waits too). Parameter tables are built before
timing (their build time is printed). Input is dense float32 (float64 for RBFSampler float64);
each figure is the best of a few repeats, interleaved across methods so that a slow spell of a
shared machine hits every method alike.

Each timed call starts on a settled process (``SETTLE`` seconds of sleep first, for every
method alike): after a multi-threaded BLAS call OpenBLAS's worker threads keep spinning for
2**28 cycles (about 0.1 s at 2.5 GHz; ``OPENBLAS_THREAD_TIMEOUT``), so without the pause the
method timed right after RBFSampler's ``blas`` run shares its cores with a spinning thread
(measured: our 2-thread transforms 1.3-1.9x slower right after it). A user calling one of the
transforms alone does not pay that, so neither does any method here.

The Fastfood limit: a Fastfood row costs at least ``ceil(k / d)`` x (two FWHTs of d values and
d cosines). With the one-thread FWHT (d values, in L1) and cos32v2 (arguments in L2) speeds
measured here, that gives a rows/s limit for ``--threads`` threads; the table prints the
fraction of it that Fastfood's transform reaches (the rest is the sign, permutation, Gaussian,
scale and phase passes, writing the output, and thread overhead). At 16 <= d <= 512 the float32
kernel transforms 16 rows at a time, interleaved, with butterflies between whole vectors: cheaper
per value than the one-row FWHT this limit takes, so there the limit is a yardstick, not a bound. A second figure adds the
cost of the first write of a fresh output array of that size (page faults: the transform
returns new memory, and so does RBFSampler), measured here per element and assumed to split
evenly over the threads.
"""

import argparse
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
from sklearn.kernel_approximation import RBFSampler
from sklearn.utils.validation import validate_data
from threadpoolctl import threadpool_limits

from dask_kernels import NRFF, RFF, Fastfood
from dask_kernels.maps._cos32 import cos32_array, cos32v2_array, shift_cos32v2
from dask_kernels.maps._fourier import projection_tiles
from dask_kernels.maps._fwht import fwht


#: Seconds of sleep before each timed call: longer than OpenBLAS's spin after a threaded call.
SETTLE = 0.3


def rows_per_second(fn, X, repeats, mode, threads, chunk):
    """Best rows/s of ``fn`` over ``repeats`` runs on X in configuration ``mode``, and the least
    process CPU seconds (all threads) of a run."""
    best, cpu = np.inf, np.inf
    for _ in range(repeats):
        time.sleep(SETTLE)
        if mode == "public":  # our transform manages its own threads and BLAS
            t0, c0 = time.perf_counter(), time.process_time()
            fn(X)
            t, c = time.perf_counter() - t0, time.process_time() - c0
        elif mode in ("blas", "tiles"):  # tiles: fn runs its own pool, one BLAS thread per tile
            with threadpool_limits(threads if mode == "blas" else 1, user_api="blas"):
                t0, c0 = time.perf_counter(), time.process_time()
                fn(X)
                t, c = time.perf_counter() - t0, time.process_time() - c0
        else:
            parts = [X[i : i + chunk] for i in range(0, len(X), chunk)]
            with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
                t0, c0 = time.perf_counter(), time.process_time()
                list(pool.map(fn, parts))
                t, c = time.perf_counter() - t0, time.process_time() - c0
        best, cpu = min(best, t), min(cpu, c)
    return len(X) / best, cpu


def sgemm_runs(W, fmap, threads):
    """The reference rows: ``X @ W`` alone into a fresh output (modes blas, pool, tiles) and into
    a preallocated one (blas, tiles), ``W`` the (d, k) float32 frequencies, ``fmap`` a fitted
    RFF whose public transform's tiles the ``tiles`` mode uses."""
    pool, out = ThreadPoolExecutor(threads), {}

    def tiles(X, into=None):
        C = into if into is not None else np.empty((len(X), W.shape[1]), dtype=np.float32)
        list(pool.map(lambda t: np.matmul(X[t[0] : t[1]], W[:, t[2] : t[3]], out=C[t[0] : t[1], t[2] : t[3]]),
                      projection_tiles(fmap, len(X))))
        return C

    def preallocated(X):
        if out.get("C") is None or out["C"].shape[0] != len(X):
            out["C"] = np.zeros((len(X), W.shape[1]), dtype=np.float32)
        return out["C"]

    def fresh(X, mode):
        return tiles(X) if mode == "tiles" else X @ W

    def into(X, mode):
        return tiles(X, preallocated(X)) if mode == "tiles" else np.matmul(X, W, out=preallocated(X))

    return [("SGEMM X@W, fresh out", fresh, ("blas", "pool", "tiles")),
            ("SGEMM X@W, into out", into, ("blas", "tiles"))]


def cos_ns_per_element(fn, n, repeats):
    """``fn`` (a cosine) over n float32 values (arguments like Fastfood's), one thread, L2-sized
    arrays (the maps apply it to values in cache): best ns/element."""
    x = (np.random.default_rng(1).standard_normal(n) * 3).astype(np.float32)
    fn(x[:16])
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(64):
            fn(x)
        best = min(best, (time.perf_counter() - t0) / 64)
    return best / n * 1e9


def fwht_ns_per_element(d, rows, repeats):
    """FWHT of a (rows, d) float32 block, in place, one thread: best ns per element."""
    X = np.random.default_rng(0).standard_normal((rows, d)).astype(np.float32)
    fwht(X[:2])
    best = np.inf
    for _ in range(repeats):
        for _ in range(4):  # H H = d I: rescale to keep values bounded
            t0 = time.perf_counter()
            fwht(X)
            best = min(best, time.perf_counter() - t0)
            X *= np.float32(1.0 / np.sqrt(d))
    return best / X.size * 1e9


def first_write_ns_per_element(n, repeats):
    """Writing n float32 values into freshly allocated memory (what a transform returns):
    best ns per element, page faults included."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.empty(n, dtype=np.float32).fill(1.0)
        best = min(best, time.perf_counter() - t0)
    return best / n * 1e9


class _PhaseLog(logging.Handler):
    """Collects the ``(number, kind, wall, cpu)`` of each phase our public transforms log."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.phases = []

    def emit(self, record):
        if hasattr(record, "phase"):
            self.phases.append(record.phase)


def rbf_steps(rbf):
    """RBFSampler's ``transform`` in its two steps, each timed: ``(Z, [(step, wall, cpu), ...])``."""

    def run(X):
        t0, c0 = time.perf_counter(), time.process_time()
        Z = validate_data(rbf, X, accept_sparse="csr", reset=False) @ rbf.random_weights_
        t1, c1 = time.perf_counter(), time.process_time()
        Z += rbf.random_offset_
        np.cos(Z, Z)
        Z *= (2.0 / rbf.n_components) ** 0.5
        t2, c2 = time.perf_counter(), time.process_time()
        return Z, [("SGEMM", t1 - t0, c1 - c0), ("offset, cos, scale", t2 - t1, c2 - c1)]

    return run


def peer_table(cases, n_rows, repeats, phases=False):
    """The peer mode: RBFSampler float32 (one call, default BLAS threads), RFF and NRFF public
    transforms (default ``n_jobs``), interleaved, best wall-clock time of ``repeats``; with
    ``phases``, also each one's time by phase (median over the repeats)."""
    print(f"peer mode: rows={n_rows} repeats={repeats}, default BLAS threads and n_jobs; load average at start "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'d':>5} {'k':>6} {'method':<20} {'best s':>8} {'rows/s':>9} {'vs RBF32':>8} {'cpu s':>7}")
    results, split = [], []
    log, parallel_log = _PhaseLog(), logging.getLogger("dask_kernels.maps._parallel")
    if phases:
        parallel_log.addHandler(log)
        parallel_log.setLevel(logging.DEBUG)
    for d, k in cases:
        X = np.random.default_rng(d).standard_normal((n_rows, d)).astype(np.float32)
        runs = {"RBFSampler float32": RBFSampler(n_components=k, gamma=1.0 / d, random_state=0).fit(X),
                "RFF (float32)": RFF(n_components=k, gamma=1.0 / d).fit(X),
                "NRFF (float32)": NRFF(n_components=k).fit(X)}
        best, cpu = dict.fromkeys(runs, np.inf), dict.fromkeys(runs, np.inf)
        steps = {name: [] for name in runs}  # per repeat: [(phase, wall, cpu), ...]
        for m in runs.values():
            m.transform(X[:8])  # tables and compilation before timing
        if phases:
            rbf = rbf_steps(runs["RBFSampler float32"])
            assert np.array_equal(rbf(X[:64])[0], runs["RBFSampler float32"].transform(X[:64]))
        for _ in range(repeats):
            for name, m in runs.items():
                time.sleep(SETTLE)
                log.phases.clear()
                t0, c0 = time.perf_counter(), time.process_time()
                m.transform(X)
                wall, used = time.perf_counter() - t0, time.process_time() - c0
                best[name], cpu[name] = min(best[name], wall), min(cpu[name], used)
                if phases and name != "RBFSampler float32":
                    named = [(f"phase {n}: {'SGEMM, BLAS threads' if kind == 'blas' else 'thread pool'}", w, c)
                             for n, kind, w, c in log.phases]
                    rest = (wall - sum(w for _, w, _ in named), used - sum(c for _, _, c in named))
                    steps[name].append(named + [("rest", *rest)])
            if phases:
                time.sleep(SETTLE)
                steps["RBFSampler float32"].append(rbf(X)[1])
        for name in runs:
            ratio = best["RBFSampler float32"] / best[name]
            print(f"{d:5d} {k:6d} {name:<20} {best[name]:8.3f} {n_rows / best[name]:9.0f} {ratio:8.2f} "
                  f"{cpu[name]:7.2f}")
            results.append((d, k, name, n_rows / best[name], ratio))
            if phases:
                split.append((d, k, name, steps[name]))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    if phases:
        parallel_log.removeHandler(log)
        print("where the time goes, median over the repeats (RBFSampler: its steps timed apart in one more "
              "run per repeat):")
        print(f"{'d':>5} {'k':>6} {'method':<20} {'phase':<30} {'wall s':>8} {'cpu s':>7}")
        for d, k, name, per_repeat in split:
            for i, (label, *_) in enumerate(per_repeat[0]):
                wall = np.median([r[i][1] for r in per_repeat])
                used = np.median([r[i][2] for r in per_repeat])
                print(f"{d:5d} {k:6d} {name:<20} {label:<30} {wall:8.3f} {used:7.2f}")
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", action="store_true", help="only RBFSampler float32 against RFF and NRFF (see above)")
    ap.add_argument("--phases", action="store_true", help="with --peer: also each method's time by phase")
    ap.add_argument("--rows", type=int, default=None, help="rows of the input (default 1024, --quick 512, "
                                                             "--peer 20000)")
    ap.add_argument("--quick", action="store_true", help="fewer rows and repeats (about 1 min)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=None,
                    help="interleaved repeats per figure (default 2 with --quick, else 4); ratios 10 %% apart "
                         "need more than 2 on a machine whose runs spread by 10 %%")
    ap.add_argument("--case", action="append", metavar="DxK", type=lambda v: tuple(int(x) for x in v.split("x")),
                    help="only this input dimension d and feature count k, e.g. 1024x16384 (repeatable)")
    args = ap.parse_args()
    n_rows, repeats = (512, 2) if args.quick else (1024, 4)
    repeats = args.repeats or repeats
    if args.peer:
        return peer_table(args.case or [(1024, 16384), (1024, 2048), (64, 2048)], args.rows or 20000, repeats,
                          phases=args.phases)
    n_rows = args.rows or n_rows
    cases = args.case or [(256, 4096), (1024, 16384)] + ([] if args.quick else [(256, 16384), (784, 4096)])
    chunk = 256
    fwht_ns = fwht_ns_per_element(1024, 256, 3)
    cos_v1 = cos_ns_per_element(cos32_array, 1 << 14, 5)
    # the limit takes the faster of cos32v2's two loops: the plain one, and the 512-bit one that
    # the maps use, which also forms the argument (x * 1 + 0 here)
    ones, zeros = np.float32(1.0), np.zeros(1 << 14, dtype=np.float32)
    fused = lambda x: shift_cos32v2(x, ones, zeros[: x.size], np.empty_like(x), ones)  # noqa: E731
    cos_ns = min(cos_ns_per_element(cos32v2_array, 1 << 14, 5), cos_ns_per_element(fused, 1 << 14, 5))
    cos_np = cos_ns_per_element(np.cos, 1 << 14, 5)
    print(f"threads={args.threads} rows={n_rows} repeats={repeats} (rows/s, higher is better); "
          f"load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"one thread: FWHT d=1024 {fwht_ns:.2f} ns/element, cos32v2 {cos_ns:.2f} ns/element (the faster "
          f"of its two loops; limits use these); cos32 (previous specs) {cos_v1:.2f}, numpy float32 cos {cos_np:.2f}")
    head = f"{'d':>5} {'k':>6} {'method':<20} {'blas':>8} {'pool':>8} {'tiles':>8} {'public':>8} {'best':>8}"
    print(head + f" {'vs RBF32':>8} {'vs RBF64':>8} {'cpu/RBF32':>9}")
    results = []
    for d, k in cases:
        X32 = np.random.default_rng(d).standard_normal((n_rows, d)).astype(np.float32)
        X64 = X32.astype(np.float64)
        gamma = 1.0 / d
        rbf32 = RBFSampler(n_components=k, gamma=gamma, random_state=0).fit(X32)
        rbf64 = RBFSampler(n_components=k, gamma=gamma, random_state=0).fit(X64)
        maps = {
            "RFF (float32)": RFF(n_components=k, gamma=gamma, n_jobs=args.threads).fit(X32),
            "NRFF (float32)": NRFF(n_components=k, gamma=1.0, n_jobs=args.threads).fit(X32),
            "Fastfood (float32)": Fastfood(n_components=k, gamma=gamma, n_jobs=args.threads).fit(X32),
        }
        builds = {}
        for name, m in maps.items():
            t0 = time.perf_counter()
            m.transform_block(X32[:4])  # builds the parameter table, compiles nothing new
            builds[name] = time.perf_counter() - t0
        runs = [
            ("RBFSampler float32", rbf32.transform, X32, ("blas", "pool")),
            ("RBFSampler float64", rbf64.transform, X64, ("blas", "pool")),
        ] + [(name, m.transform, X32, ("public",)) for name, m in maps.items()]
        W32 = np.asarray(rbf32.random_weights_, dtype=np.float32)
        runs += [(name, fn, X32, modes) for name, fn, modes in sgemm_runs(W32, maps["RFF (float32)"], args.threads)]
        best_of = {(name, mode): 0.0 for name, _, _, modes in runs for mode in modes}
        cpu_of = {(name, mode): np.inf for name, _, _, modes in runs for mode in modes}
        for name, fn, X, modes in runs:
            if name.startswith("SGEMM"):  # also allocates the preallocated output
                for mode in modes:
                    fn(X, mode=mode)
            else:
                fn(X[:8])
        for _ in range(repeats):
            for name, fn, X, modes in runs:
                for mode in modes:
                    call = partial(fn, mode=mode) if name.startswith("SGEMM") else fn
                    r, c = rows_per_second(call, X, 1, mode, args.threads, chunk)
                    best_of[name, mode] = max(best_of[name, mode], r)
                    cpu_of[name, mode] = min(cpu_of[name, mode], c)
        rows = {name: {mode: best_of[name, mode] for mode in modes} for name, _, _, modes in runs}
        cpus = {name: min(cpu_of[name, mode] for mode in modes) for name, _, _, modes in runs}
        ref32, ref64 = max(rows["RBFSampler float32"].values()), max(rows["RBFSampler float64"].values())
        for name, r in rows.items():
            cells = " ".join(f"{r[mode]:8.0f}" if mode in r else f"{'-':>8}"
                             for mode in ("blas", "pool", "tiles", "public"))
            best = max(r.values())
            cpu_ratio = cpus["RBFSampler float32"] / cpus[name]
            print(f"{d:5d} {k:6d} {name:<20} {cells} {best:8.0f} {best / ref32:8.2f} {best / ref64:8.2f} "
                  f"{cpu_ratio:8.2f}")
            results.append((d, k, name, best, best / ref32, best / ref64))
        gemm = max(rows["SGEMM X@W, fresh out"].values())
        gemm_cpu = cpus["SGEMM X@W, fresh out"]
        ceiling, ceiling_cpu = gemm / ref32, cpus["RBFSampler float32"] / gemm_cpu
        reach = ", ".join(f"{n.split()[0]} {max(rows[n].values()) / ref32 / ceiling:.0%}" for n in ("RFF (float32)",
                                                                                              "NRFF (float32)"))
        print(f"      same-SGEMM ceiling: the best fresh-output SGEMM alone is {ceiling:.2f}x RBFSampler float32 "
              f"(CPU time {ceiling_cpu:.2f}x): RFF/NRFF with that SGEMM cannot beat it by more; they reach {reach} "
              f"of that ceiling")
        pd = 1 << (d - 1).bit_length()
        fwht_pd = fwht_ns if pd == 1024 else fwht_ns_per_element(pd, 256, 3)
        limit = args.threads / (-(-k // pd) * pd * (2 * fwht_pd + cos_ns) * 1e-9)
        write_ns = first_write_ns_per_element(n_rows * k, 3)
        limit_out = args.threads / ((-(-k // pd) * pd * (2 * fwht_pd + cos_ns) + k * write_ns) * 1e-9)
        ff = rows["Fastfood (float32)"]["public"]
        print(f"      Fastfood: {ff / limit:.0%} of the FWHT + cosine limit ({limit:.0f} rows/s on {args.threads} "
              f"threads); {ff / limit_out:.0%} of that limit plus a fresh output's first write "
              f"({write_ns:.2f} ns/element, {limit_out:.0f} rows/s)")
        print("      table build (s): " + ", ".join(f"{n.split()[0]} {t:.2f}" for n, t in builds.items()))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return results, fwht_ns


if __name__ == "__main__":
    main()
