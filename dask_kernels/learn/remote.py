"""Learning where the data is: under a distributed Client, training steps are prepared on the workers.

:class:`WorkerFeed` runs the epoch plan of :mod:`.shuffle` on the cluster: one task per window
reads the window's blocks (store blocks, or raw rows featurized with the map) on a worker and
keeps them there; one task per step gathers the step's rows from that window and turns them into
what the learner receives (:func:`.sources.learner_features`, e.g. GCWS codes -> one-hot CSR).
Steps are submitted :data:`AHEAD` at a time, with the next window's read, so the workers stay
ahead of the learner; only prepared steps reach this process, in order: while the learner trains
one, a background thread fetches the next (:data:`FETCH_AHEAD`; a future's result is only
transferred when asked for: a 10000 x 256 float64 step took ~140 ms wall and ~40 ms of this
process's CPU on 2 loaded cores, as long as training it, and the learner used to wait for each).
The steps after it wait on the workers: fetching every step as soon as it was ready put six
steps in this process at once (a block's features each, 30 MB of GCWS-128 codes). When the
blocks fit in the two windows in flight anyway (:func:`.shuffle.keeps_rows`, the local run's
rule), each window's stored rows stay on its worker, and the next epoch's windows take their
blocks from the last epoch's (read once per run). Every task is a pure function of the seed,
the epoch and the step, so the coefficients equal the local run's bitwise.
"""

from __future__ import annotations

import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator
from typing import Any

from .feeds import Feed
from .learner import Fitter
from .shuffle import EpochPlan, Order, keeps_rows, step_features

#: Steps in flight on the workers ahead of the learner.
AHEAD = 4
#: Of those, steps transferred to this process ahead of the one training (the rest stay on the
#: workers until then): with one, the next step's transfer overlaps the current step's training.
FETCH_AHEAD = 1


def get_client(client: Any = None) -> Any:
    """``client`` if given (False: none), else the active distributed Client, else None."""
    if client is False:
        return None
    if client is not None:
        return client
    if "distributed" not in sys.modules:  # no Client can be active without the module loaded
        return None
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        return None


def _load_window(src: Any, order: Order, epoch: int, wi: int, previous: list[tuple] = ()) -> tuple:
    """Window ``wi`` of the epoch, and the stored rows by block it was built from (its blocks
    only); a block that one of the ``previous`` epoch's windows holds is not read again."""
    plan = order.plan(src, epoch, cache={})
    mine = {int(b) for b in plan.windows[wi]}
    plan.cache.update((b, rows) for p in previous for b, rows in p[3].items() if b in mine)
    return plan.load(wi) + (plan.cache,)


def _prepare(src: Any, loaded: tuple, j: int, estimator: Any) -> tuple:
    X, y, pieces, _ = loaded
    return step_features(src, X, y, pieces[j], estimator)


def _read(src: Any, i: int, rows: Any) -> tuple:
    return src.read(i, rows)


class WorkerFeed(Feed):
    """Prepared training steps computed on the workers of ``client`` (a :class:`.feeds.Feed`).

    Parameters
    ----------
    client : distributed.Client
    src : BlockSource
        Sent to the cluster once (its reads then run inside the workers' tasks).
    estimator : estimator
        The learner; only its parameters travel (an unfitted clone), for the feeding rule.
    order, fit, epochs, prefetch
        As for :class:`.feeds.Feed` (the workers always prepare :data:`AHEAD` steps ahead).
    """

    def __init__(self, client: Any, src: Any, estimator: Any, order: Order, fit: Fitter, epochs: int = 1,
                 prefetch: bool = True) -> None:
        from .._estimator import clone

        super().__init__(src, order, fit, epochs, prefetch)
        self.client = client
        self.n_blocks = src.n_blocks
        self.remote_src = client.scatter(src.synchronous(), hash=False)
        self.estimator = client.scatter(clone(estimator), hash=False)
        self._kept = []  # the last epoch's windows (every block between them), kept on the workers

    def held_out(self) -> list[tuple]:
        """The held-out rows scored (:meth:`.feeds.Feed.held_out`), read on the workers."""
        futures = [self.client.submit(_read, self.remote_src, i, rows, pure=False)
                   for i, rows in self.held_out_items() if rows.size]
        return self.client.gather(futures)

    def steps(self, plan: EpochPlan, start: int, estimator: Any = None) -> Iterator[tuple]:
        """``(features, labels, n)`` of the steps of ``plan`` from ``start``, in order."""
        client, args = self.client, (self.order, plan.epoch)
        wi, first = plan.window_of(start)
        jobs = [(w, j) for w in range(wi, len(plan.windows))
                for j in range(start - first if w == wi else 0, plan.window_steps[w])]
        windows, pending = {}, deque()

        # every block fits in the two windows in flight (this one and the next, read ahead):
        # this epoch's windows take their blocks from the last epoch's, and are kept for the next
        keep = plan.part is None and keeps_rows(plan.src, plan.window)
        previous, self._kept = (self._kept if keep else []), []
        unsubmitted = set(range(wi, len(plan.windows)))

        def window(w):
            nonlocal previous
            if w in unsubmitted:
                windows[w] = client.submit(_load_window, self.remote_src, *args, w, previous, pure=False)
                if keep:
                    self._kept.append(windows[w])
                unsubmitted.discard(w)
                if not unsubmitted:
                    previous = []  # every window of this epoch has its blocks: the last epoch's may go
            return windows.get(w)

        def submit(k):
            w, j = jobs[k]
            window(w + 1)  # read ahead: the next window is read while this one is served
            pending.append([w, client.submit(_prepare, self.remote_src, window(w), j, self.estimator, pure=False),
                            None])

        def fetch(n):
            """Start transferring the first ``n`` pending steps, in order (one fetch thread)."""
            for item in list(pending)[:n]:
                if item[2] is None:
                    item[2] = fetcher.submit(item[1].result)

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dask-kernels-fetch") as fetcher:
            nxt = 0
            try:
                while nxt < len(jobs) and len(pending) < AHEAD:
                    submit(nxt)
                    nxt += 1
                while pending:
                    fetch(1)
                    w, _, fetched = pending.popleft()
                    out = fetched.result()
                    if nxt < len(jobs):
                        submit(nxt)
                        nxt += 1
                    fetch(FETCH_AHEAD)  # the next step arrives while this one trains
                    if not pending or pending[0][0] != w:
                        windows.pop(w, None)  # its steps are done: the workers may free it
                    yield out
            finally:  # stopped early (an error, a callback): fetches not started are dropped
                for _, fut, fetched in pending:
                    if fetched is not None:
                        fetched.cancel()
                    fut.cancel()
