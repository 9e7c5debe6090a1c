"""Data-parallel training by iterative parameter mixing: ``fit_incremental(..., replicas=n)``.

Every epoch, ``n`` copies of the estimator start from the current model and train, in parallel,
each on its own *shard* of the blocks (disjoint, fixed for the run, in a new order every epoch:
:class:`.shuffle.EpochPlan` with ``part=(r, n)``); then
their learned arrays are averaged into the model (Mann et al. 2009; McDonald, Hall & Mann 2010;
Zinkevich et al. 2010). The held-out score, the schedule, early stopping and checkpoints then act
on the averaged model exactly as after a sequential epoch.

Averaging is sound only for models that are *linear in their parameters and trained on a convex
loss*: then the average of the replicas' parameters has a loss no larger than the replicas' mean
loss (Jensen), and mixing after every epoch converges like sequential SGD. That is the SGD family
of scikit-learn (:data:`MIXABLE`): SGDClassifier, SGDRegressor, Perceptron and the
passive-aggressive models. Others are refused: naive Bayes keeps counts (they add, they do not
average), k-means' clusters are exchangeable (replica A's centroid 3 need not be replica B's), and
neural networks are neither convex nor identifiable.

Accuracy at the same number of epochs, and why the mixing is once per epoch: while the model is
far from the optimum, each replica moves it about as far as one learner would on its share of
the rows, and the average moves it by the mean of those steps (like a mini-batch ``n`` times
larger): slower progress along the slowly converging directions. Near the optimum, a
constant-rate learner's final model jitters around it, and the average of ``n`` replicas
jitters less. Mixing after every round of blocks instead of every epoch changes neither effect
to first order (the average of ``n`` steps from the same start is the same either way), only
the cost of synchronising (on the training benchmark's data, mixing every epoch and after
every round of blocks gave the same accuracy over 5 seeds). So replicas are mixed once per epoch, and their
accuracy is compared with sequential training over several seeds (one seed's model differs
from another's by more than the replicas' effect: ``benchmarks/bench_train.py``).

Where the replicas run: under a distributed Client, one task per replica on the workers, each
reading its own shard where it runs (nothing but the estimators travels; a shard that fits one
shuffle window is read once and kept on its worker); otherwise in threads of this process
(scikit-learn's SGD releases the GIL). Each replica's work is a pure function of the
start model, the seed and the epoch, and the average is taken in a fixed order, so a run is
bitwise reproducible and does not depend on where the replicas ran.

References
----------
Mann, G., McDonald, R., Mohri, M., Silberman, N. & Walker, D. (2009). Efficient large-scale
distributed training of conditional maximum entropy models. NIPS.
McDonald, R., Hall, K. & Mann, G. (2010). Distributed training strategies for the structured
perceptron. NAACL.
Zinkevich, M., Weimer, M., Li, L. & Smola, A. (2010). Parallelized stochastic gradient descent.
NIPS.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .feeds import Feed
from .learner import Fitter
from .shuffle import Order, local_steps, shard
from .sources import SGD_FAMILY, in_sgd_family
from .state import _scalar, _unscalar, get_state, set_state

#: Estimator classes whose coefficients may be averaged (linear models, convex losses), by name.
MIXABLE = SGD_FAMILY


#: Sample counters and their value in a freshly initialized estimator: scikit-learn's SGD counts
#: the samples seen in ``t_`` (from 1), which sets the "optimal" and "invscaling" rates.
_COUNTERS = {"t_": 1.0}


def check_replicas(estimator: Any, replicas: Any, n_blocks: int, checkpoint_every: Any) -> int:
    """``replicas`` as an int, or ValueError/TypeError naming what is wrong."""
    if not isinstance(replicas, (int, np.integer)) or isinstance(replicas, bool) or replicas < 1:
        raise ValueError(f"replicas must be an integer >= 1, got {replicas!r}")
    replicas = int(replicas)
    if replicas == 1:
        return 1
    if not in_sgd_family(estimator):
        raise TypeError(f"replicas={replicas}: averaging the coefficients of {type(estimator).__name__} is not "
                        "sound (only linear models with a convex loss can be mixed: "
                        f"{', '.join(MIXABLE)}); use replicas=1")
    if replicas > n_blocks:
        raise ValueError(f"replicas={replicas} but the training input has only {n_blocks} blocks: every "
                         "replica needs at least one (use smaller block_rows or fewer replicas)")
    if checkpoint_every:
        raise ValueError("checkpoint_every cannot be used with replicas > 1: replicas are checkpointed after "
                         "every epoch, once their coefficients are averaged")
    return replicas


def train_replica(estimator: Any, src: Any, order: Order, epoch: int, part: tuple[int, int], fit: Fitter,
                  prefetch: bool, on_worker: bool = False, cache: dict | None = None) -> tuple[Any, int]:
    """Train ``estimator`` (in place, with ``fit``: one thread, the replicas are the
    parallelism) on replica ``part``'s shard for one epoch; return it and its number of
    training rows. On a worker, reads run in the task's own thread; ``cache`` holds the
    shard's stored rows when they are kept from epoch to epoch."""
    if on_worker:
        src = src.synchronous()
    rows = 0
    plan = order.plan(src, epoch, part=part, cache=cache)
    for F, yb, n in local_steps(plan, 0, estimator, prefetch, in_place=fit.in_place(estimator)):
        if n:
            fit(estimator, F, yb)
        rows += n
    return estimator, rows


def mix(estimator: Any, trained: list) -> None:
    """Set ``estimator`` to the average of the ``trained`` replicas (all started from it).

    Floating-point arrays are averaged (in float64, in replica order); other arrays (classes)
    are the same in every replica, and so are scalars other than the sample counters
    (:data:`_COUNTERS`, SGD's ``t_``): for those the model gets its own value plus every
    replica's increment, as if one learner had seen all the rows.
    """
    states = [get_state(e) for e in trained]
    start = get_state(estimator)[1]["scalars"] if _fitted(estimator) else {}
    arrays0, meta = states[0]
    arrays = {}
    for key, a in arrays0.items():
        if np.issubdtype(a.dtype, np.floating):
            acc = np.zeros(a.shape, dtype=np.float64)
            for s, _ in states:
                acc += s[key]
            arrays[key] = (acc / len(states)).astype(a.dtype)
        else:
            arrays[key] = a
    meta = copy.deepcopy(meta)
    for key, initial in _COUNTERS.items():
        if key in meta["scalars"]:
            values = [_unscalar(s[1]["scalars"][key]) for s in states]
            base = _unscalar(start[key]) if key in start else initial
            meta["scalars"][key] = _scalar(type(values[0])(base + sum(v - base for v in values)))
    set_state(estimator, arrays, meta, where="replica average")


def _fitted(estimator: Any) -> bool:
    return any(k.endswith("_") and not k.startswith("__") for k in vars(estimator))


def _shard_rows(src: Any, order: Order, part: tuple[int, int]) -> dict:
    """Stored training rows of a shard by block (kept on the worker that reads them)."""
    src = src.synchronous()
    blocks = [int(b) for b in shard(src.n_blocks, order.seed, part)]
    plan = order.plan(src, 0, part=part)  # (training_rows depends on the seed and the fraction only)
    return dict(zip(blocks, src.read_blocks(blocks, [plan.training_rows(b) for b in blocks])))


class Replicas(Feed):
    """The replicas of one run (a :class:`.feeds.Feed` of one step per epoch, the average):
    where they train, and their shards' rows when kept.

    When one window holds a whole shard (``keep``), each replica's rows are read once per run
    and kept where the replica trains (a dict in this process, or a task result on its worker);
    otherwise every epoch reads its windows again, as sequential training does. Under a
    ``client`` the held-out rows are read on the workers (``feed``, a :class:`.remote.WorkerFeed`).
    """

    def __init__(self, n: int, src: Any, order: Order, fit: Fitter, epochs: int, prefetch: bool, *,
                 client: Any = None, feed: Any = None) -> None:
        super().__init__(src, order, fit, epochs, prefetch)
        self.n, self.client, self.feed = n, client, feed
        src_future = feed.remote_src if feed is not None else None
        self.src_future = src_future
        keep = order.window >= -(-src.n_blocks // n)
        self.caches: list = [None] * n
        if client is not None:
            workers = sorted(client.scheduler_info()["workers"])
            self.workers = [[workers[r % len(workers)]] for r in range(n)]
            if keep:
                self.caches = [client.submit(_shard_rows, src_future, order, (r, n), pure=False,
                                             workers=self.workers[r]) for r in range(n)]
        elif keep:
            self.caches = [{} for _ in range(n)]

    def held_out(self) -> list[tuple]:
        return self.feed.held_out() if self.feed is not None else super().held_out()

    def epoch(self, estimator: Any, epoch: int, start: int) -> Iterator[tuple[int, int]]:
        """One epoch of iterative parameter mixing (``start`` is 0: replicas are checkpointed
        between epochs only); ``estimator`` becomes the average."""
        yield self.src.n_blocks, self.run_epoch(estimator, epoch)

    def run_epoch(self, estimator: Any, epoch: int) -> int:
        """One epoch of iterative parameter mixing; ``estimator`` becomes the average. Returns
        the number of training rows."""
        n, fit, prefetch = self.n, self.fit.single(), self.prefetch
        if self.client is not None:
            futures = [self.client.submit(train_replica, estimator, self.src_future, self.order, epoch, (r, n), fit,
                                          prefetch, True, self.caches[r], pure=False,
                                          workers=self.workers[r], allow_other_workers=True) for r in range(n)]
            results = self.client.gather(futures)
        else:
            with ThreadPoolExecutor(max_workers=n) as pool:
                results = list(pool.map(lambda r: train_replica(copy.deepcopy(estimator), self.src, self.order, epoch,
                                                                (r, n), fit, prefetch, cache=self.caches[r]),
                                        range(n)))
        mix(estimator, [e for e, _ in results])
        return sum(rows for _, rows in results)
