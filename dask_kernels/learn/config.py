"""The options of :func:`~dask_kernels.fit_incremental`, as one validated object.

:class:`TrainConfig` holds every option of a training run besides the estimator and the data;
``fit_incremental(estimator, source, y, feature_map=..., **options)`` builds one from its
keyword arguments (or takes ``config=TrainConfig(...)``, the keyword arguments then override
its fields). Every value that does not depend on the data is checked here, once, with an
error naming the option.
"""

from __future__ import annotations

import dataclasses
import numbers
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .metrics import LOWER_IS_BETTER


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check_client(client: Any) -> None:
    """``client`` must be None, False or a running distributed Client: anything else (an
    address, a closed Client) would fail only once the run's inputs were read, deep in
    distributed."""
    if client is None or client is False:
        return
    cls = getattr(sys.modules.get("distributed"), "Client", None)  # a Client object loaded the module
    if cls is None or not isinstance(client, cls):
        raise TypeError(f"client must be a distributed Client, None (the active one) or False (none), got "
                        f"{client!r}" + (": connect with Client(address)" if isinstance(client, str) else ""))
    if client.status in ("closing", "closed"):
        raise ValueError(f"client is {client.status}: pass a running Client, None (the active one) or False "
                         "(train in this process)")


@dataclass(frozen=True)
class TrainConfig:
    """The options of a training run (:func:`~dask_kernels.fit_incremental`).

    Parameters
    ----------
    epochs : int, default=5
        Maximum number of passes over the training rows.
    validation_fraction : float or None, default=0.1
        Fraction of the training rows held out and scored after every epoch (a seeded random
        subset, read in one pass before training and kept in memory in stored form, e.g.
        codes). None (or 0) holds out nothing; without ``validation_data`` that disables
        evaluation, the schedule and early stopping.
    validation_data : BlockSource, store, (X, y) tuple, optional
        A separate held-out set (featurized with the same map) scored after every epoch
        instead of a fraction of the training rows (``validation_fraction`` is then ignored).
        ``X`` of a tuple may be a pandas or dask DataFrame: when the training input's columns
        have names, its columns are read by those names (as the model reads tables).
    seed : int, default=0
        Seed of the shuffles and of the held-out selection.
    block_rows : int, optional
        Rows per block (default: the store's row chunks or the dask chunks; 10000 for NumPy).
    shuffle_window : "auto" or int, default="auto"
        Rows are shuffled across this many blocks at a time (a seeded shuffle buffer, see
        :mod:`dask_kernels.learn.shuffle`): each step (one ``partial_fit`` call) draws its rows
        from every block of its window, so label-sorted input trains like shuffled input.
        "auto" takes as many blocks as fit in about 128 MiB of stored features (every block of
        a small data set: a global permutation); 1 only shuffles rows within blocks (cheapest).
        Locally, when every block fits in two windows (the memory of a window and the next one
        read ahead; one without ``prefetch``), the stored training rows are read once and kept
        from epoch to epoch.
    step_blocks : int, default=1
        Rows per step (per ``partial_fit`` call): this many blocks' worth, drawn from the
        window as above (at most a window; a window of fewer blocks is one step). Fewer, longer
        calls pay scikit-learn's fixed cost per call less often and give the one-vs-rest
        threads (``n_jobs``) longer tasks, so 10000-row blocks with ``step_blocks=5`` train
        faster on 2 cores; but at a high constant ``eta0`` the model can be several points
        less accurate than with 1 (at a small ``eta0`` the difference is within noise). That is
        the estimator's, not the feeding's: ``partial_fit`` in memory on the very same rows in
        the same calls gives the same models (bitwise with ``shuffle=False``). Keep the default
        unless you have measured on your data. Checkpoints, ``checkpoint_every``
        and ``callback`` count steps. Memory: two prepared steps (the next is prepared while one
        trains). Keep SGD's own ``shuffle=True`` although the rows already come in a seeded
        random order: with ``shuffle=False`` it is faster (no random access to the step's
        rows) but the one-vs-rest problems all see the rows in one order, which cost several
        points of test accuracy in the training benchmark (``benchmarks/bench_train.py``).
    prefetch : bool, default=True
        Read the next window (after an epoch's last one, the next epoch's first) and expand
        the next step in background threads while the current step trains (under a Client the
        workers always prepare a few steps ahead).
    schedule : {"auto", None}, default="auto"
        The thesis' learning-rate schedule: halve ``eta0`` when the held-out metric improved by
        less than ``min_improvement`` (only for estimators with ``eta0`` and a constant,
        "invscaling" or "adaptive" learning rate; with SGD's default "optimal" rate nothing
        can be halved), revert to the start-of-epoch model when it got worse.
    min_improvement : float, default=0.01
        Relative improvement below which the learning rate is halved.
    metric : str, default="auto"
        Held-out metric driving the schedule and early stopping: "erp" for probabilistic
        classifiers, "error" (1 - accuracy) for other classifiers, "mse" for regressors,
        "inertia" for clusterers; or "log_loss", "accuracy", "r2".
    early_stopping : bool, default=True
        Stop after ``n_iter_no_change`` epochs without a new best held-out metric, but never
        before ``min_epochs`` epochs.
    n_iter_no_change : int, default=3
        Epochs without a new best held-out metric after which training stops.
    min_epochs : int, default=5
        Early stopping never stops a run before this many epochs. Under the schedule every
        epoch that got worse is reverted and halves ``eta0``, so in the worst case (a too high
        initial rate: every epoch after the first reverted) epochs 2 to 5 train at ``eta0``,
        ``eta0``/2, ``eta0``/4 and ``eta0``/8: rates down to an eighth of the initial one are
        tried before a run may give up. With 1, such a run stops at epoch ``n_iter_no_change``
        + 1 = 4 with its one-epoch model, having gone down only to ``eta0``/4. 5 is also the
        default ``epochs``: a default run is never stopped early. 1 lets ``n_iter_no_change``
        alone decide.
    replicas : int, default=1
        Data-parallel training by iterative parameter mixing (:mod:`dask_kernels.learn.replicas`):
        every epoch, this many copies of the model train in parallel on disjoint shares of the
        blocks (on the workers under a Client, else in threads) and their coefficients are
        averaged; the held-out score, the schedule, early stopping and checkpoints then act on
        the average as in sequential mode. Averaging is sound only for linear models with a
        convex loss: SGDClassifier, SGDRegressor, Perceptron and the passive-aggressive
        models; any other estimator is refused. Checkpoints are written after every epoch
        (``checkpoint_every`` is refused). A fixed seed gives bitwise the same model wherever
        the replicas run.
    n_jobs : int or None, default=None
        Threads for the one-vs-rest problems of a multiclass SGDClassifier, Perceptron or
        passive-aggressive classifier in each ``partial_fit`` call that has enough work to pay
        for them (:mod:`dask_kernels.learn.learner`; e.g. 10000 rows x 256 features x 4
        classes): bitwise the coefficients of one thread, as the classes are independent
        problems. None: every usable CPU when called from the main
        thread, 1 from any other (never nested inside Dask's or a user's threads); -1: every
        usable CPU. Used only when the estimator's own ``n_jobs`` is None (the estimator is not
        changed); each replica of ``replicas`` > 1 trains on one thread. While this process
        reads and prepares the next steps (``prefetch``, no Client) an SGDClassifier on dense
        rows trains up to four classes together on one thread (threads only for more): the
        background work takes about a core, and four classes split over two threads cost
        ~1.3x the CPU.
    client : distributed.Client or False, optional
        Cluster to prepare the blocks on (default: the active Client, if any; False: none).
        With a Client, blocks are read, featurized (raw input) and expanded on the workers,
        several steps ahead, and only prepared steps reach this process; the coefficients are
        bitwise those of the local run. An address or a closed Client is refused before any work.
    checkpoint : path or URL, optional
        File (npz + JSON, no pickle) rewritten atomically after every epoch and every
        ``checkpoint_every`` blocks: estimator state, the start-of-epoch model, the position,
        the learning rate and the history. A local path, a ``file://`` URL or an fsspec URL
        such as ``s3://bucket/run.ckpt`` (uploaded whole, then read back and compared; see
        :mod:`dask_kernels.learn.checkpointer`).
    checkpoint_every : int, optional
        Also checkpoint every this many steps (one per ``step_blocks`` blocks) within an epoch.
    checkpoint_seconds : float, optional
        Also checkpoint after the first step that ends this many seconds after the last
        checkpoint (a bound on the work a killed run loses, whatever the size of an epoch).
        Resuming from such a checkpoint gives the same model as from any other.
    resume : bool, default=True
        If ``checkpoint`` exists, continue from it (it must come from the same source, seed
        and estimator parameters) instead of starting over.
    classes : array-like, optional
        Classes of a classifier; by default found in one pass over the labels.
    callback : callable, optional
        Called as ``callback(info)`` after every step (one ``partial_fit`` call; with
        ``replicas`` > 1 after every epoch's average) with a dict (epoch, position: steps done
        in the epoch, rows); raising from it stops training (the last checkpoint remains).
    progress : bool, default=True
        Show progress on stderr: within an epoch a bar on a terminal, else a line at least
        every 10 seconds (``PROGRESS_SECONDS`` of :mod:`dask_kernels.learn.incremental`); each epoch's
        row of the table (:mod:`dask_kernels.learn.report`) as soon as the epoch ends.

    Examples
    --------
    >>> from dask_kernels.learn.config import TrainConfig
    >>> cfg = TrainConfig(epochs=3, validation_fraction=None)
    >>> cfg.epochs, cfg.fraction
    (3, 0.0)
    >>> TrainConfig(step_blocks=0)
    Traceback (most recent call last):
    ...
    ValueError: step_blocks must be an integer >= 1, got 0
    """

    epochs: int = 5
    validation_fraction: float | None = 0.1
    validation_data: Any = None
    seed: int = 0
    block_rows: int | None = None
    shuffle_window: str | int = "auto"
    step_blocks: int = 1
    prefetch: bool = True
    schedule: str | None = "auto"
    min_improvement: float = 0.01
    metric: str = "auto"
    early_stopping: bool = True
    n_iter_no_change: int = 3
    min_epochs: int = 5
    replicas: int = 1
    n_jobs: int | None = None
    client: Any = None
    checkpoint: Any = None
    checkpoint_every: int | None = None
    checkpoint_seconds: float | None = None
    resume: bool = True
    classes: Any = None
    callback: Callable[[dict], Any] | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        v = self.n_iter_no_change
        if not _is_int(v) or v < 1:
            raise ValueError(f"n_iter_no_change must be an integer >= 1, got {v!r}")
        if not _is_int(self.min_epochs) or self.min_epochs < 1:
            raise ValueError(f"min_epochs must be an integer >= 1, got {self.min_epochs!r}")
        c = self.checkpoint_seconds
        if c is not None and not (isinstance(c, numbers.Real) and not isinstance(c, bool) and 0 < c < float("inf")):
            raise ValueError(f"checkpoint_seconds must be a positive number of seconds or None, got {c!r}")
        if c is not None and _is_int(self.replicas) and self.replicas > 1:
            raise ValueError("checkpoint_seconds cannot be used with replicas > 1: replicas are checkpointed after "
                             "every epoch, once their coefficients are averaged")
        f = self.validation_fraction
        if f is not None and not (isinstance(f, numbers.Real) and not isinstance(f, bool)):
            raise ValueError(f"validation_fraction must be a number in [0, 1) or None, got {f!r} "
                             "(a separate held-out set goes in validation_data)")
        if f and self.validation_data is None and not 0.0 < f < 1.0:
            raise ValueError(f"validation_fraction must be in [0, 1), got {f}")
        if int(self.epochs) < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.schedule not in ("auto", None, False):
            raise ValueError(f"schedule must be 'auto' or None, got {self.schedule!r}")
        if self.metric != "auto" and self.metric not in LOWER_IS_BETTER:
            raise ValueError(f"unknown metric {self.metric!r}; choose from {sorted(LOWER_IS_BETTER)}")
        w = self.shuffle_window
        if not (isinstance(w, str) and w == "auto") and (not _is_int(w) or w < 1):
            raise ValueError(f"shuffle_window must be 'auto' or an integer >= 1, got {w!r}")
        if not _is_int(self.step_blocks) or self.step_blocks < 1:
            raise ValueError(f"step_blocks must be an integer >= 1, got {self.step_blocks!r}")
        if not _is_int(self.replicas) or self.replicas < 1:
            raise ValueError(f"replicas must be an integer >= 1, got {self.replicas!r}")
        _check_client(self.client)

    @property
    def fraction(self) -> float:
        """The held-out fraction of the training rows (0 with ``validation_data`` or none)."""
        return 0.0 if self.validation_data is not None else float(self.validation_fraction or 0.0)

    @classmethod
    def from_options(cls, config: TrainConfig | None, options: dict) -> TrainConfig:
        """``config`` (default: the defaults) with ``options`` (``fit_incremental``'s keyword
        arguments) replacing its fields; the deprecated ``validation`` and ``patience`` are
        taken with a FutureWarning."""
        options = dict(options)
        if "validation" in options:
            warnings.warn("fit_incremental(validation=...) is deprecated and will be removed in the next release: "
                          "use validation_fraction=<float> for a held-out fraction or validation_data=<set> for a "
                          "separate held-out set", FutureWarning, stacklevel=3)
            old = options.pop("validation")
            real = old is None or (isinstance(old, numbers.Real) and not isinstance(old, bool))
            options["validation_fraction"], options["validation_data"] = (old, None) if real else (None, old)
        if "patience" in options:
            warnings.warn("fit_incremental(patience=...) is deprecated and will be removed in the next release: "
                          "use n_iter_no_change (scikit-learn's name)", FutureWarning, stacklevel=3)
            options["n_iter_no_change"] = options.pop("patience")
        unknown = sorted(set(options) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise TypeError(f"fit_incremental() got an unexpected keyword argument {unknown[0]!r} (its options are "
                            f"the fields of TrainConfig: {', '.join(f.name for f in dataclasses.fields(cls))})")
        if config is not None and not isinstance(config, cls):
            raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
        return dataclasses.replace(config or cls(), **options)
