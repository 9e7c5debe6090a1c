"""The training loop's state and the thesis' learning-rate schedule, as small typed objects.

:class:`LoopState` is everything besides the estimator that a checkpoint must hold to resume a
run exactly: the position ``(epoch, position)``, the schedule's memory (``prev``, ``best``,
``stale``, ``eta0``), the per-epoch history and the counters of the epoch in progress.
:meth:`LoopState.from_json` validates a state read from a file, naming the key it refuses.

:class:`Schedule` applies the thesis' rule (docs: the training recipe) to a lower-is-better held-out
loss after every epoch: "first" (nothing to compare with), "keep", "halve" (improved by less
than ``min_improvement``, relative: ``eta0`` is halved) or "revert" (got worse: the model goes
back to the start of the epoch, and ``eta0`` is halved too); plus early stopping after
``n_iter_no_change`` epochs without a new best, never before ``min_epochs`` epochs.
"""

from dataclasses import asdict, dataclass, field

import numpy as np


def _is_int(v, lo=0, hi=None):
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)


def _is_real(v, positive=False):
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and bool(np.isfinite(v))
    return ok and (not positive or v > 0)


def is_eta0(v, halvable):
    """A learning rate a checkpoint may set: finite, and positive if the schedule halves it."""
    return _is_real(v) and (v > 0 if halvable else v >= 0)


@dataclass
class LoopState:
    """Where a run is and what the schedule remembers (all of it is checkpointed)."""

    epoch: int = 0
    position: int = 0          #: steps (``partial_fit`` calls) done in the current epoch
    history: list = field(default_factory=list)
    prev: float | None = None  #: held-out loss the schedule compares with
    best: float | None = None
    stale: int = 0             #: epochs since the last new best
    done: bool = False         #: early stopping fired
    eta0: float | None = None
    epoch_rows: int = 0
    epoch_seconds: float = 0.0

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, loop, where, n_steps, epochs, eta0, halvable):
        """Validate a state read from ``where``: raise ValueError naming the key, else return it."""
        def bad(key, what):
            raise ValueError(f"{where}: loop.{key} {what}; delete the checkpoint or pass "
                             "resume=False to start over")

        if not isinstance(loop, dict):
            raise ValueError(f"{where}: loop must be an object")
        for key in ("epoch", "position", "history", "prev", "best", "stale", "done", "eta0",
                    "epoch_rows", "epoch_seconds"):
            if key not in loop:
                bad(key, "is missing")
        if set(loop) != {f for f in cls.__dataclass_fields__}:
            bad(sorted(set(loop) - set(cls.__dataclass_fields__))[0], "is not a loop key")
        if not _is_int(loop["epoch"], 0, epochs):
            bad("epoch", f"must be an integer in [0, {epochs}], got {loop['epoch']!r}")
        if not _is_int(loop["position"], 0, n_steps - 1):
            bad("position", f"must be an integer in [0, {n_steps - 1}] ({n_steps} steps), "
                            f"got {loop['position']!r}")
        if loop["position"] and loop["epoch"] >= epochs:
            bad("position", "must be 0 once every epoch is done")
        hist = loop["history"]
        if not isinstance(hist, list) or len(hist) != loop["epoch"] or not all(isinstance(r, dict) for r in hist):
            bad("history", f"must be a list of {loop['epoch']} records (one per finished epoch)")
        for key in ("prev", "best"):
            if loop[key] is not None and not _is_real(loop[key]):
                bad(key, f"must be a finite number or null, got {loop[key]!r}")
        if not _is_int(loop["stale"]):
            bad("stale", f"must be a non-negative integer, got {loop['stale']!r}")
        if not isinstance(loop["done"], bool):
            bad("done", f"must be true or false, got {loop['done']!r}")
        if (eta0 is None) != (loop["eta0"] is None) or (eta0 is not None and not is_eta0(loop["eta0"], halvable)):
            bad("eta0", f"must be {'null' if eta0 is None else 'the finite learning rate params.eta0'}, "
                        f"got {loop['eta0']!r}")
        if not _is_int(loop["epoch_rows"]):
            bad("epoch_rows", f"must be a non-negative integer, got {loop['epoch_rows']!r}")
        if not _is_real(loop["epoch_seconds"]) or loop["epoch_seconds"] < 0:
            bad("epoch_seconds", f"must be a non-negative number, got {loop['epoch_seconds']!r}")
        return cls(**loop)


@dataclass(frozen=True)
class Schedule:
    """The thesis' halve/revert rule and early stopping on a lower-is-better held-out loss.

    Parameters
    ----------
    min_improvement : float
        Relative improvement below which the learning rate is halved.
    halve : bool
        The estimator has an ``eta0`` the rule may halve.
    revert : bool
        Revert to the start-of-epoch model when the loss got worse.
    early_stopping : bool
    n_iter_no_change : int
        Epochs without a new best after which training stops.
    min_epochs : int
        Early stopping never stops before this many epochs.

    Examples
    --------
    >>> from dask_kernels.learn.loop import LoopState, Schedule
    >>> rule, state = Schedule(halve=True, revert=True), LoopState(eta0=0.1)
    >>> [rule.step(state, loss, can_revert=True) for loss in (1.0, 0.5, 0.499, 0.7)]
    ['first', 'keep', 'halve', 'revert']
    >>> state.eta0, state.prev
    (0.025, 0.499)

    References
    ----------
    May, A. (2018). Kernel Approximation Methods for Speech Recognition. PhD thesis, Columbia
    University (the learning-rate schedule of its training recipe).
    """

    min_improvement: float = 0.01
    halve: bool = False
    revert: bool = False
    early_stopping: bool = True
    n_iter_no_change: int = 3
    min_epochs: int = 1

    def action(self, prev, loss, can_revert):
        """"first", "keep", "halve" or "revert" for an epoch that ended with ``loss``."""
        if prev is None:
            return "first"
        if loss > prev and self.revert and can_revert:
            return "revert"
        if prev - loss < self.min_improvement * abs(prev) and self.halve:
            return "halve"
        return "keep"

    def step(self, state, loss, can_revert):
        """Apply the rule to ``state`` (in place) and return the action; the caller restores
        the snapshot on "revert" and sets the estimator's ``eta0`` to ``state.eta0``."""
        action = self.action(state.prev, loss, can_revert)
        if self.halve and action in ("halve", "revert"):
            halved = float(state.eta0) / 2.0
            if halved < np.finfo(np.float64).tiny:
                # halving further reaches subnormals, then 0.0: a rate that no longer moves the
                # model (and a saved model must keep a positive eta0), so the run is over
                state.done = True
            else:
                state.eta0 = halved
        if action != "revert":
            state.prev = loss
        if state.best is None or loss < state.best:
            state.best, state.stale = loss, 0
        else:
            state.stale += 1
        # state.epoch is the index of the epoch that just ended: state.epoch + 1 epochs are done
        if self.early_stopping and state.stale >= self.n_iter_no_change and state.epoch + 1 >= self.min_epochs:
            state.done = True
        return action
