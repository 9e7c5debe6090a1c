"""Data-parallel training by iterative parameter mixing: ``fit_incremental(..., replicas=n)``.

Every epoch, ``n`` copies of the estimator start from the current model and train, in parallel,
on disjoint shares of the epoch's blocks (:class:`.shuffle.EpochPlan` with ``part=(r, n)``); then
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

Where the replicas run: under a distributed Client, one task per replica on the workers, each
reading its own blocks where it runs (nothing but the estimators travels); otherwise in threads of
this process (scikit-learn's SGD releases the GIL). Each replica's work is a pure function of the
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
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from sklearn import linear_model

from .shuffle import EpochPlan, local_steps
from .state import get_state, set_state

#: Estimator classes whose coefficients may be averaged (linear models, convex losses).
MIXABLE = tuple(getattr(linear_model, n) for n in ("SGDClassifier", "SGDRegressor", "Perceptron",
                                                   "PassiveAggressiveClassifier",
                                                   "PassiveAggressiveRegressor") if hasattr(linear_model, n))


#: Counters' values in a freshly initialized estimator (scikit-learn's SGD starts ``t_`` at 1).
_INITIAL = {"t_": 1.0}


def check_replicas(estimator: Any, replicas: Any, n_blocks: int, checkpoint_every: Any) -> int:
    """``replicas`` as an int, or ValueError/TypeError naming what is wrong."""
    if not isinstance(replicas, (int, np.integer)) or isinstance(replicas, bool) or replicas < 1:
        raise ValueError(f"replicas must be an integer >= 1, got {replicas!r}")
    replicas = int(replicas)
    if replicas == 1:
        return 1
    if not isinstance(estimator, MIXABLE):
        raise TypeError(f"replicas={replicas}: averaging the coefficients of {type(estimator).__name__} is not "
                        "sound (only linear models with a convex loss can be mixed: "
                        f"{', '.join(c.__name__ for c in MIXABLE)}); use replicas=1")
    if replicas > n_blocks:
        raise ValueError(f"replicas={replicas} but the training input has only {n_blocks} blocks: every "
                         "replica needs at least one (use smaller block_rows or fewer replicas)")
    if checkpoint_every:
        raise ValueError("checkpoint_every cannot be used with replicas > 1: replicas are checkpointed after "
                         "every epoch, once their coefficients are averaged")
    return replicas


def train_replica(estimator: Any, src: Any, seed: int, epoch: int, window: int, fraction: float,
                  part: tuple[int, int], fit_args: dict, supervised: bool, prefetch: bool,
                  on_worker: bool = False) -> tuple[Any, int]:
    """Train ``estimator`` (in place) on replica ``part``'s share of the epoch; return it and
    its number of training rows. On a worker, reads run in the task's own thread."""
    if on_worker:
        src = src.synchronous()
    rows = 0
    plan = EpochPlan(src, seed, epoch, window, fraction, part=part)
    for F, yb, n in local_steps(plan, 0, estimator, prefetch):
        if n:
            estimator.partial_fit(F, *((yb,) if supervised else ()), **fit_args)
        rows += n
    return estimator, rows


def mix(estimator: Any, trained: list) -> None:
    """Set ``estimator`` to the average of the ``trained`` replicas (all started from it).

    Floating-point arrays are averaged (in float64, in replica order); other arrays (classes)
    are the same in every replica; numeric scalars that differ are counters (SGD's ``t_``, the
    number of samples seen, which sets the learning rate of the "optimal" and "invscaling"
    schedules): the model gets its own value plus every replica's increment, as if one learner
    had seen all the rows.
    """
    states = [get_state(e) for e in trained]
    start = get_state(estimator)[1]["scalars"] if _fitted(estimator) else _INITIAL
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
    for key, v in meta["scalars"].items():
        values = [s[1]["scalars"][key] for s in states]
        if isinstance(v, (int, float)) and not isinstance(v, bool) and any(x != v for x in values):
            base = start.get(key, 0)
            base = base if isinstance(base, (int, float)) and not isinstance(base, bool) else 0
            meta["scalars"][key] = type(v)(base + sum(x - base for x in values))
    set_state(estimator, arrays, meta, where="replica average")


def _fitted(estimator: Any) -> bool:
    return any(k.endswith("_") and not k.startswith("__") for k in vars(estimator))


def run_epoch(estimator: Any, src: Any, *, replicas: int, seed: int, epoch: int, window: int,
              fraction: float, fit_args: dict, supervised: bool, prefetch: bool, client: Any = None,
              src_future: Any = None) -> int:
    """One epoch of iterative parameter mixing; ``estimator`` becomes the average. Returns the
    number of training rows."""
    args = (seed, epoch, window, fraction)
    if client is not None:
        workers = sorted(client.scheduler_info()["workers"])
        futures = [client.submit(train_replica, estimator, src_future, *args, (r, replicas), fit_args,
                                 supervised, prefetch, True, pure=False, workers=[workers[r % len(workers)]],
                                 allow_other_workers=True) for r in range(replicas)]
        results = client.gather(futures)
    else:
        with ThreadPoolExecutor(max_workers=replicas) as pool:
            results = list(pool.map(lambda r: train_replica(copy.deepcopy(estimator), src, *args, (r, replicas),
                                                            fit_args, supervised, prefetch), range(replicas)))
    mix(estimator, [e for e, _ in results])
    return sum(n for _, n in results)
