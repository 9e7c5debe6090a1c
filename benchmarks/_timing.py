"""Timing shared by the benchmark scripts (imported as a sibling module: run them as scripts)."""

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
