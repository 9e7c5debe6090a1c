"""What the schedule must have done, recomputed from the metric column of a run's history."""

from dask_kernels.learn.metrics import LOWER_IS_BETTER


def check_history(history, n_iter_no_change=3, min_epochs=5, min_improvement=0.01):
    """Assert that every epoch's action is what the schedule's rule says of its metric column."""
    metric = history[0]["metric"]
    s = 1.0 if LOWER_IS_BETTER[metric] else -1.0
    ref = best = None
    stale = 0
    for r in history:
        m = r[metric]
        assert r["metric"] == metric and r["baseline"] == ref, r
        if ref is None:
            want = "first"
        elif s * (m - ref) > 0:
            want = "revert"
        elif s * (ref - m) < min_improvement * abs(ref):
            want = "halve"
        else:
            want = "keep"
        assert r["action"] == want, (r, ref)
        if want != "revert":
            ref = m
        if best is None or s * m < s * best:
            best, stale = m, 0
        else:
            stale += 1
        assert r["stop"] == (stale >= n_iter_no_change and r["epoch"] >= min_epochs), r
    return [r["action"] for r in history]
