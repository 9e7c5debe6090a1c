"""Timing shared by the benchmark scripts (imported as a sibling module: run them as scripts)."""

import resource
import time


def best_time(fn, repeat, warmup=True):
    """Best wall time of ``fn()`` over ``repeat`` runs, after one untimed run (compilation,
    parameter tables, page cache) unless ``warmup`` is False. The best, not the mean: on a
    shared machine other jobs only ever add time."""
    if warmup:
        fn()
    return best_times([fn], repeat)[0]


def best_times(fns, repeat):
    """Best wall time of each of ``fns`` over ``repeat`` rounds, the rounds interleaved (every
    function once per round, in turn): a burst of load from other jobs then slows all of them
    alike instead of one. No warm-up round: compile before calling."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best_times_cpu(fns, repeat):
    """:func:`best_times` and, for each function, its least CPU seconds over the rounds (user +
    system, every thread of the process): on a machine shared with other jobs the CPU a run
    needs is steadier than its wall time. No warm-up round: compile before calling."""
    best, cpu = [float("inf")] * len(fns), [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            c, t0 = _cpu(), time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
            cpu[i] = min(cpu[i], _cpu() - c)
    return best, cpu
