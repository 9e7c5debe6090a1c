"""The order rows are trained in: a seeded shuffle buffer spanning several blocks.

Rows sorted by label (as many files ship) are not shuffled by permuting rows within blocks and
blocks among themselves: every block still holds one or two labels and SGD drifts towards the
last ones it saw. Here each epoch

1. permutes the blocks (``default_rng((seed, epoch))``),
2. cuts that order into *windows* of at most ``window`` blocks (sizes differing by at most one),
3. reads a window's training rows (held-out rows excluded) in stored form, permutes them
   together (``default_rng((seed, epoch, window_index))``) and serves them as one *step* (one
   ``partial_fit`` call) per ``step_blocks`` blocks of the window (rounded up), of equal size.

So with ``step_blocks=1`` there are as many steps per epoch as blocks, every row is used once
per epoch, and a step's rows come from every block of its window. Larger steps (several blocks'
rows in one call) make fewer, longer ``partial_fit`` calls: each call's fixed cost (validation,
and handing the one-vs-rest problems to threads) is paid less often and the threads get longer
tasks; a step never spans two windows. With one window holding every block the order is a
global permutation; ``window=1`` is the cheaper within-block shuffle. Memory: the stored form of
one window (and the next one, read ahead); a local run keeps every block's stored rows from
epoch to epoch instead when they fit in as many blocks (:func:`keeps_rows`), dense floats in one
array (:class:`KeptRows`), so the SGD fast path reads a step's rows there instead of a gathered
copy. Every permutation is a pure function of its key, so
a run resumed at ``(epoch, step)`` trains on exactly the rows an uninterrupted run would.

With ``part=(r, n)`` (replica ``r`` of ``n``, see :mod:`.replicas`) the plan covers replica
``r``'s *shard* only: every ``n``-th block of a permutation keyed by the seed alone, the same in
every epoch (so a replica can keep its rows where it runs), served in an order and with window
permutations of its own per epoch. The shards are disjoint and together are every block.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._gather import StepRows, gather_rows

_HELD_OUT_KEY = 0x5EED  # rng key component of the held-out selection (not used by shuffles)
_SHARD_KEY = 0x5AAD  # rng key component of the replicas' shards

_SCORED_KEY = 0x5C0D  # rng key component of the sample of held-out rows scored (above the cap)
_HYPERGEOMETRIC_MAX = 10**9  # Generator.hypergeometric takes ngood, nbad below this

#: Stored bytes of one window when the window is chosen automatically.
WINDOW_BYTES = 128 * 2**20
#: Bytes of the held-out rows scored after each epoch (stored form, with 8-byte labels): up to
#: that many every held-out row is scored; above it a uniform sample of that many bytes
#: (:func:`scored_rows`), so that the process scoring them holds O(budget), not O(rows).
HELD_OUT_BYTES = 128 * 2**20


def held_out_rows(seed, block, n, fraction):
    """Rows of block ``block`` (of ``n`` rows) held out for validation."""
    return np.flatnonzero(np.random.default_rng((seed, _HELD_OUT_KEY, block)).random(n) < fraction)


def held_out_cap(src: Any, budget: int | None = None) -> int:
    """Held-out rows scored at most: ``budget`` (default :data:`HELD_OUT_BYTES`) over the
    stored bytes of a row and its label."""
    budget = HELD_OUT_BYTES if budget is None else budget
    return max(1, int(budget) // (int(src.row_bytes()) + 8))


def scored_rows(seed: int, bounds: list, fraction: float, cap: int) -> list[tuple[int, np.ndarray]]:
    """``[(block, rows)]`` of every block: the held-out rows scored after each epoch.

    Every held-out row (:func:`held_out_rows`) while there are at most ``cap`` of them, kept
    as they are found (the list never holds more than ``cap`` rows). Beyond that, a uniform
    sample of exactly ``cap`` of them: how many from each block by sequential hypergeometric
    draws (``default_rng((seed, key))``; binomial ones while more than NumPy's 10^9 are to
    come), which rows within it by ``default_rng((seed, key, block))``, pure functions of the
    seed, so every process picks the same rows. The held-out rows not sampled still do not
    train: only the score is of a sample.
    """
    items, total = [], 0
    for i, (a, b) in enumerate(bounds):
        rows = held_out_rows(seed, i, b - a, fraction)
        total += rows.size
        if total > cap:
            break
        items.append((i, rows))
    else:
        return items
    counts = [held_out_rows(seed, i, b - a, fraction).size for i, (a, b) in enumerate(bounds)]
    left, need, rng, items = sum(counts), int(cap), np.random.default_rng((seed, _SCORED_KEY)), []
    for i, (a, b) in enumerate(bounds):
        k = counts[i]
        left -= k
        if not (k and need):
            take = 0
        elif left < _HYPERGEOMETRIC_MAX:
            take = int(rng.hypergeometric(k, left, need))
        else:  # NumPy's limit (10^9 held-out rows to come): the binomial, as close, at most ``cap`` in all
            take = min(k, int(rng.binomial(need, k / (k + left))))
        need -= take
        rows = held_out_rows(seed, i, b - a, fraction) if take else np.empty(0, dtype=np.int64)
        if take < k:
            rows = rows[np.sort(np.random.default_rng((seed, _SCORED_KEY, i)).choice(k, take, replace=False))]
        items.append((i, rows))
    return items


def auto_window(src, budget=WINDOW_BYTES):
    """Blocks per window so that a window's stored form takes about ``budget`` bytes."""
    rows = max((b - a for a, b in src.bounds), default=1)
    return int(max(1, min(src.n_blocks, budget // max(1, rows * src.row_bytes()))))


def keeps_rows(src: Any, window: int, prefetch: bool = True) -> bool:
    """Whether a local run keeps every block's stored training rows from epoch to epoch (read
    once per run): when they fit in the memory the windows in flight take anyway, i.e. when
    every block fits in one window, or in two with ``prefetch`` (a window and the next one,
    read ahead). A 200 MB store of float32 rows in two automatic windows otherwise pays its
    reading and decompression again every epoch, taking CPU from the learner's threads."""
    return src.n_blocks <= (2 if prefetch else 1) * window


def shard(n_blocks, seed, part):
    """Blocks of replica ``part[0]`` of ``part[1]``: the same in every epoch, disjoint."""
    r, n = part
    return np.random.default_rng((int(seed), _SHARD_KEY)).permutation(n_blocks)[r::n]


@dataclass(frozen=True)
class Order:
    """What fixes a run's training order: the seed, the shuffle window (blocks), the held-out
    fraction (0: every row trains) and the blocks per step. :meth:`plan` gives an epoch's steps.

    Examples
    --------
    >>> from dask_kernels.learn.shuffle import Order
    >>> order = Order(seed=0, window=3, step_blocks=2)  # the plans of EpochPlan's example, 2 blocks a step
    >>> order.fraction, order.step_blocks
    (0.0, 2)
    """

    seed: int
    window: int
    fraction: float = 0.0
    step_blocks: int = 1

    def plan(self, src: Any, epoch: int, part: tuple[int, int] | None = None, cache: dict | None = None) -> EpochPlan:
        """The :class:`EpochPlan` of ``epoch`` (of replica ``part`` if given; ``cache``: see there)."""
        return EpochPlan(src, self.seed, epoch, self.window, self.fraction, part=part, cache=cache,
                         step_blocks=self.step_blocks)


class KeptRows(dict):
    """Stored training rows by block, kept from epoch to epoch (:func:`keeps_rows`): ``{block:
    (rows, labels)}``, dense float rows placed one after another in one array, :attr:`arena`
    (so a step's rows, from any blocks, are rows of one array: the SGD fast path reads them in
    place, :class:`._gather.StepRows`, instead of gathering a copy). The arena holds each kept
    row once (as the blocks did) and is allocated for ``capacity`` rows, pages touched only
    as rows arrive; rows of another kind or shape are kept as they are.
    """

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity, self.arena, self.used = int(capacity), None, 0
        self.offsets: dict = {}  # block -> its first row in the arena

    def __setitem__(self, block: int, item: tuple) -> None:
        X, y = item
        if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype in (np.float32, np.float64):
            if self.arena is None:
                self.arena = np.empty((self.capacity, X.shape[1]), dtype=X.dtype)
            a = self.arena
            if X.dtype == a.dtype and X.shape[1] == a.shape[1] and self.used + X.shape[0] <= a.shape[0]:
                a[self.used:self.used + X.shape[0]] = X
                X, self.offsets[block] = a[self.used:self.used + X.shape[0]], self.used
                self.used += X.shape[0]
        super().__setitem__(block, (X, y))

    def update(self, items: Any = (), **kw: Any) -> None:
        for block, item in dict(items, **kw).items():
            self[block] = item


def keep(cache: dict, blocks: list[int], parts: list[tuple]) -> None:
    """``cache.update(zip(blocks, parts))``, emptying ``parts`` as it goes: into a
    :class:`KeptRows` each block's read rows are freed once copied, so a window's reads never
    sit beside all of their copies (at most one block more than the kept rows)."""
    parts.reverse()
    for b in blocks:
        cache[b] = parts.pop()


class _Window:
    """The stored rows of a window's blocks, indexed as one array without concatenating them:
    a step's rows are gathered from the blocks straight into the step (one copy), or, when the
    blocks are rows of one kept array (``base``, from ``offsets``), named there
    (:meth:`step_rows`)."""

    def __init__(self, parts, base=None, offsets=None):
        self.parts, self.base = parts, base
        self.offsets = None if base is None else np.asarray(offsets, dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum([p.shape[0] for p in parts])]).astype(np.int64)
        self.shape = (int(self.starts[-1]),) + parts[0].shape[1:]
        self.dtype = parts[0].dtype
        if len(parts) > 1 and sp.issparse(parts[0]):  # raw sparse rows: stack once
            self.parts, self.starts = [sp.vstack(parts, format="csr")], self.starts[[0, -1]]

    def take(self, rows: np.ndarray, dtype: Any = None) -> Any:
        """``self[rows]``, dense rows (floats, GCWS codes) gathered in one pass, C-ordered;
        floats straight into ``dtype`` (the learner's: :func:`.sources.sgd_target`)."""
        first = self.parts[0]
        if isinstance(first, np.ndarray) and first.ndim == 2 and first.dtype.kind in "fiu":
            return gather_rows(self.parts, self.starts, rows, dtype)
        return self[rows]

    def step_rows(self, rows: np.ndarray, dtype: Any) -> StepRows:
        """``self[rows]`` as rows of ``base`` (read in ``dtype``), without a copy."""
        rows = np.asarray(rows, dtype=np.int64)
        owner = np.searchsorted(self.starts, rows, side="right") - 1
        return StepRows(self.base, rows + (self.offsets - self.starts[:-1])[owner], dtype)

    def __getitem__(self, rows):
        if len(self.parts) == 1:
            return self.parts[0][rows]
        owner = np.searchsorted(self.starts, rows, side="right") - 1
        first = self.parts[0]
        out = np.empty((rows.size,) + first.shape[1:], dtype=first.dtype)
        for j, part in enumerate(self.parts):
            sel = owner == j
            if sel.any():
                out[sel] = part[rows[sel] - self.starts[j]]
        return out


class EpochPlan:
    """The steps of one epoch.

    Parameters
    ----------
    src : BlockSource
    seed, epoch : int
    window : int
        Blocks per window (>= 1).
    fraction : float
        Held-out fraction (0: every row trains).
    step_blocks : int, default=1
        Blocks' rows per step (per ``partial_fit`` call), within a window.
    part : (int, int), optional
        ``(r, n)``: only replica ``r``'s shard of the blocks (:func:`shard`).
    cache : dict, optional
        Stored training rows by block, kept from epoch to epoch (pass the same dict to every
        epoch's plan when :func:`keeps_rows`: the rows are then read once per run, not once
        per epoch, in the memory two windows take anyway).

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels.learn import ArraySource
    >>> from dask_kernels.learn.shuffle import EpochPlan
    >>> src = ArraySource(np.zeros((60, 1)), np.arange(60), block_rows=10)
    >>> plan = EpochPlan(src, seed=0, epoch=0, window=3, fraction=0.0)
    >>> [w.size for w in plan.windows], plan.n_steps
    ([3, 3], 6)
    >>> EpochPlan(src, seed=0, epoch=0, window=3, fraction=0.0, step_blocks=2).n_steps  # 2 per window
    4
    >>> steps = [y[rows] for _, y, rows in plan.steps(0)]
    >>> sorted(np.concatenate(steps).tolist()) == list(range(60))  # every row once
    True
    """

    def __init__(self, src, seed, epoch, window, fraction, part=None, cache=None, step_blocks=1):
        self.src, self.seed, self.epoch, self.fraction = src, int(seed), int(epoch), float(fraction)
        self.cache, self.step_blocks = cache, int(step_blocks)
        self.window, self.part = int(window), part
        self._key = (self.seed, self.epoch)
        if part is None:
            order = np.random.default_rng(self._key).permutation(src.n_blocks)
        else:  # a replica's fixed shard, in an order of its own per epoch
            order = shard(src.n_blocks, self.seed, part)
            self._key = (self.seed, self.epoch, part[1], part[0])
            order = order[np.random.default_rng(self._key).permutation(order.size)]
        self.windows = [w for w in np.array_split(order, max(1, math.ceil(order.size / window))) if w.size]
        #: steps of each window (the same in every epoch: only the order of the blocks changes)
        self.window_steps = [-(-w.size // self.step_blocks) for w in self.windows]
        self.starts = np.concatenate([[0], np.cumsum(self.window_steps)]).astype(np.int64)
        self._first = None  # window 0 read ahead (a future): see preload

    @property
    def n_steps(self):
        return int(self.starts[-1])

    def window_of(self, step):
        """``(window_index, first_step_of_that_window)`` of ``step``."""
        wi = int(np.searchsorted(self.starts, step, side="right") - 1)
        return wi, int(self.starts[wi])

    def training_rows(self, block):
        """Rows of ``block`` that train (all but the held-out ones), or None for all."""
        a, b = self.src.bounds[block]
        if not self.fraction:
            return None
        keep = np.ones(b - a, dtype=bool)
        keep[held_out_rows(self.seed, block, b - a, self.fraction)] = False
        return np.flatnonzero(keep)

    def load(self, wi):
        """Stored rows, labels and per-step row selections of window ``wi``."""
        blocks = [int(b) for b in self.windows[wi]]
        cache = {} if self.cache is None else self.cache
        missing = [b for b in blocks if b not in cache]
        if missing:
            keep(cache, missing, self.src.read_blocks(missing, [self.training_rows(b) for b in missing]))
        parts = [cache[b] for b in blocks]
        kept = isinstance(cache, KeptRows) and all(b in cache.offsets for b in blocks)
        X = _Window([X for X, _ in parts], cache.arena if kept else None,
                    [cache.offsets[b] for b in blocks] if kept else None)
        y = None if parts[0][1] is None else np.concatenate([y for _, y in parts])
        perm = np.random.default_rng(self._key + (wi,)).permutation(X.shape[0])
        return X, y, np.array_split(perm, self.window_steps[wi])

    def preload(self, pool: ThreadPoolExecutor) -> None:
        """Start reading window 0 in the thread ``pool`` (e.g. while the previous epoch's last
        window trains and its held-out score is computed); :meth:`steps` then takes it."""
        if self._first is None and self.n_steps:
            self._first = pool.submit(self.load, 0)

    def steps(self, start: int, pool: ThreadPoolExecutor | None = None,
              then: EpochPlan | None = None) -> Iterator[tuple]:
        """Yield ``(window_rows, window_labels, selection)`` of steps ``start, start + 1, ...``
        in order (the step's rows are ``window_rows[selection]``); with a thread ``pool`` the
        next window is read while the current one is served, and after the last window the
        first of the plan ``then`` (the next epoch's)."""
        if start >= self.n_steps:
            return
        wi, first = self.window_of(start)
        pending = None
        if pool is not None:
            pending = self._first if wi == 0 and self._first is not None else pool.submit(self.load, wi)
        for w in range(wi, len(self.windows)):
            X, y, pieces = pending.result() if pool is not None else self.load(w)
            if pool is not None and w + 1 < len(self.windows):
                pending = pool.submit(self.load, w + 1)
            elif pool is not None and then is not None:
                then.preload(pool)  # the rows do not depend on the model: read on across epochs
            skip = start - first if w == wi else 0
            for rows in pieces[skip:]:
                yield X, y, rows


def step_features(src, X, y, rows, estimator=None, in_place=False):
    """``(learner features or None, labels, n)`` of the step ``rows`` of a window's stored rows.

    Dense float rows (whose learner features are the rows themselves) are gathered straight
    into the dtype the learner trains in (:func:`.sources.sgd_target`): one pass, no
    conversion afterwards; or, kept rows (:class:`KeptRows`) when the learner reads them
    in place (``in_place``: the learner's call, :func:`.sgd_fast.takes_rows`), not gathered:
    :class:`._gather.StepRows`."""
    from .sources import sgd_target

    if not rows.size:
        return None, None, 0
    labels = None if y is None else y[rows]
    if isinstance(X, _Window):
        target = sgd_target(X.dtype, estimator)
        if in_place and X.base is not None and X.dtype.kind == "f" and _identity_expand(src):
            return X.step_rows(rows, target or X.dtype), labels, int(rows.size)
        stored = X.take(rows, target)
    else:
        stored = X[rows]
    return src.expand(stored, estimator), labels, int(rows.size)


def _identity_expand(src: Any) -> bool:
    """The learner features of ``src``'s stored rows are the rows themselves."""
    from ..maps.base import FeatureMap

    fmap = src.feature_map
    return not src.codes and (fmap is None or type(fmap).expand is FeatureMap.expand)


@contextmanager
def reader_thread(enabled: bool = True) -> Iterator[ThreadPoolExecutor | None]:
    """A one-thread pool for reading windows ahead, kept for a whole run (None if not
    ``enabled``); on exit, reads not started are cancelled."""
    pool = ThreadPoolExecutor(max_workers=1) if enabled else None
    try:
        yield pool
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def local_steps(plan: EpochPlan, start: int, estimator: Any = None, prefetch: bool = True,
                reader: ThreadPoolExecutor | None = None, then: EpochPlan | None = None,
                in_place: bool = False) -> Iterator[tuple]:
    """Prepared steps of ``plan`` from ``start`` in this process; with ``prefetch`` the next
    window is read and the next step expanded in two background threads (the reader may be
    the run's :func:`reader_thread`, which then also reads the first window of the plan
    ``then`` while the last one trains). ``in_place``: see :func:`step_features`."""
    src = plan.src
    if not prefetch:
        for X, y, rows in plan.steps(start):
            yield step_features(src, X, y, rows, estimator, in_place)
        return
    with reader_thread(reader is None) as own, ThreadPoolExecutor(max_workers=1) as expander:
        reader = reader or own
        pending = None
        try:
            for X, y, rows in plan.steps(start, reader, then if own is None else None):
                nxt = expander.submit(step_features, src, X, y, rows, estimator, in_place)
                if pending is not None:
                    yield pending.result()
                pending = nxt
            if pending is not None:
                yield pending.result()
        finally:
            expander.shutdown(wait=True, cancel_futures=True)
