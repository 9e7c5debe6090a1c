"""Timing shared by the benchmark scripts (imported as a sibling module: run them as scripts)."""

import time


def best_time(fn, repeat, warmup=True):
    """Best wall time of ``fn()`` over ``repeat`` runs, after one untimed run (compilation,
    parameter tables, page cache) unless ``warmup`` is False. The best, not the mean: on a
    shared machine other jobs only ever add time."""
    if warmup:
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
