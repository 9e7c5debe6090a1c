"""Where a run's training steps come from: one interface, three places.

A :class:`Feed` trains the estimator on one epoch of the run's steps (:meth:`Feed.epoch`,
from a step to resume at) and reads the held-out rows of the training source
(:meth:`Feed.held_out`). The training loop (:mod:`.incremental`) only sees this interface:

* :class:`LocalFeed` prepares the steps in this process (:func:`.shuffle.local_steps`: the next
  window read and the next step expanded in background threads), keeping every block's stored
  rows from epoch to epoch when they fit in the windows in flight (:func:`.shuffle.keeps_rows`);
* :class:`.remote.WorkerFeed` prepares them on the workers of a distributed Client;
* :class:`.replicas.Replicas` trains copies of the model on shards of the blocks and averages
  them: one step per epoch.

Every feed follows the run's :class:`.shuffle.Order`, so the coefficients are bitwise the same
wherever the steps are prepared (and, for replicas, wherever the replicas train).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from functools import cached_property
from typing import Any

from .learner import Fitter
from .shuffle import EpochPlan, KeptRows, Order, auto_window, held_out_cap, keep, keeps_rows, local_steps, \
    reader_thread, scored_rows


class Feed:
    """The steps of a run, prepared and trained one after the other.

    Parameters
    ----------
    src : BlockSource
    order : Order
        The run's seed, shuffle window, held-out fraction and blocks per step.
    fit : Fitter
        The run's ``partial_fit`` call.
    epochs : int
        The run's number of epochs (a feed may read the next epoch's rows ahead).
    prefetch : bool
        Prepare the next steps while one trains.
    """

    def __init__(self, src: Any, order: Order, fit: Fitter, epochs: int, prefetch: bool) -> None:
        self.src, self.order, self.fit, self.epochs, self.prefetch = src, order, fit, int(epochs), bool(prefetch)

    @cached_property
    def n_steps(self) -> int:
        """Steps (``partial_fit`` calls) per epoch: the positions a checkpoint may hold."""
        return self.order.plan(self.src, 0).n_steps

    def __enter__(self) -> Feed:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def held_out_items(self) -> list[tuple]:
        """``[(block, held-out rows scored)]`` of the training source (the order's fraction;
        above :func:`.shuffle.held_out_cap` rows a uniform sample of that many:
        :func:`.shuffle.scored_rows`)."""
        o = self.order
        return scored_rows(o.seed, self.src.bounds, o.fraction, held_out_cap(self.src))

    def held_out(self) -> list[tuple]:
        """The held-out rows scored, ``[(X, y)]`` in stored form (blocks that have some)."""
        return [self.src.read(i, rows) for i, rows in self.held_out_items() if rows.size]

    def epoch(self, estimator: Any, epoch: int, start: int) -> Iterator[tuple[int, int]]:
        """Train ``estimator`` on the steps of ``epoch`` from ``start``; after each step yield
        ``(steps done in the epoch, its training rows)``."""
        for pos, (F, y, n) in enumerate(self.steps(self.plan(epoch), start, estimator), start):
            if n:
                self.fit(estimator, F, y)
            del F, y  # trained: released before the feed prepares or receives the step after next
            yield pos + 1, n

    def plan(self, epoch: int) -> EpochPlan:
        return self.order.plan(self.src, epoch)

    def steps(self, plan: EpochPlan, start: int, estimator: Any) -> Iterator[tuple]:
        """Prepared steps ``(features, labels, n)`` of ``plan`` from ``start``."""
        raise NotImplementedError


class LocalFeed(Feed):
    """Steps prepared in this process, the next window read ahead by a reader thread kept for
    the run (it also reads the next epoch's first window while an epoch's last one trains and
    the held-out set is scored).

    ``keep_rows`` (with one process and one learner): when every block fits in the windows in
    flight (:func:`.shuffle.keeps_rows`) and the rows are read more than once (several epochs,
    or held-out rows), the stored training rows are read once per run and kept from epoch to
    epoch (:class:`.shuffle.KeptRows`).
    """

    def __init__(self, src: Any, order: Order, fit: Fitter, epochs: int, prefetch: bool) -> None:
        super().__init__(src, order, fit, epochs, prefetch)
        # kept only if they are read again (a later epoch, or the held-out rows read with them):
        # for one epoch without held-out rows, copying every block into the kept array (its pages
        # touched for the first time) cost as much CPU as decompressing them
        again = self.epochs > 1 or order.fraction > 0
        self.cache = KeptRows(src.n_rows) if again and keeps_rows(src, order.window, prefetch) else None
        self._stack, self.reader, self._next = ExitStack(), None, None

    def __enter__(self) -> LocalFeed:
        self.reader = self._stack.enter_context(reader_thread(self.prefetch))
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.close()
        self.reader = None

    def held_out(self) -> list[tuple]:
        if self.cache is None:
            return super().held_out()
        return _read_once(self.src, self.held_out_items(), self.cache, self.order.plan(self.src, 0),
                          self.order.window or auto_window(self.src))

    def plan(self, epoch: int) -> EpochPlan:
        nxt = self._next
        plan = nxt if nxt is not None and nxt.epoch == epoch else self.order.plan(self.src, epoch, cache=self.cache)
        self._next = self.order.plan(self.src, epoch + 1, cache=self.cache) \
            if self.reader is not None and epoch + 1 < self.epochs else None
        return plan

    def steps(self, plan: EpochPlan, start: int, estimator: Any) -> Iterator[tuple]:
        return local_steps(plan, start, estimator, self.prefetch, self.reader, self._next,
                           in_place=self.fit.in_place(estimator))


def _read_once(src, items, cache, plan, window):
    """Held-out rows ``items`` (``[(block, rows)]``) and, into ``cache``, the training rows that
    ``plan`` reads (:meth:`.shuffle.EpochPlan.load`), from one read of each block; ``window``
    blocks (the run's shuffle window) at a time, so that whole blocks never take more than the
    run's window besides the cache."""
    held, group = [], window
    for k in range(0, len(items), group):
        chunk = items[k:k + group]
        blocks = [i for i, _ in chunk]
        parts = src.read_split(blocks, [(rows, plan.training_rows(i)) for i, rows in chunk])
        held += [rows for rows, _ in parts]
        trains = [train for _, train in parts]
        del parts  # (each block's read rows are freed once kept)
        keep(cache, blocks, trains)
    return held
