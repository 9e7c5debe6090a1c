"""How :func:`~dask_kernels.fit_incremental` calls the learner's ``partial_fit``.

Costs the learner would otherwise pay on every step, removed where that is exact:

* **One-vs-rest on several threads.** A multiclass SGDClassifier, Perceptron or
  passive-aggressive classifier fits one binary problem per class through
  ``joblib.Parallel(n_jobs=self.n_jobs, require="sharedmem")``; the problems are independent
  (each writes its own row of ``coef_``, with a seed drawn before any of them starts), so they
  may run on several threads and give bitwise the coefficients of one thread. When the
  estimator's own ``n_jobs`` is None, the call runs under
  ``joblib.parallel_config(backend=PoolBackend(threads))``: the estimator's parameters are never
  changed, and its own ``n_jobs``, when set, still decides (joblib's default then). Only for
  calls with enough work to pay for handing the classes to threads (:data:`MIN_THREADED_WORK`).
* **No polling.** joblib's own threading backend starts a thread pool per ``Parallel`` call
  (1.5-6 ms) and its caller waits for results by sleeping 10 ms at a time while the next one is
  pending: a 100-row call took 16 ms on 2 threads against 4.8 ms on one. :class:`PoolBackend`
  (joblib's public custom-backend API) runs the tasks on a thread pool kept for the process and
  blocks on each result in turn (``supports_retrieve_callback = False``: joblib then waits in
  :meth:`PoolBackend.retrieve_result` instead of polling).
* **The finite check.** scikit-learn scans every block for NaN and infinity. Features that a
  feature map computed from rows that passed its input contract (finite, bounded:
  :meth:`~dask_kernels.maps.base.FeatureMap.validate_block`), read back from a store whose
  blocks are checked against their digests, are finite by construction; for those sources
  (``BlockSource.finite``) the check runs under ``sklearn.config_context(assume_finite=True)``
  (once scikit-learn is imported: an estimator that checks nothing with it, SoftmaxSGD on GCWS
  codes, trains without importing it). Raw rows given without a map, and stores read
  unverified, keep it.

* **scikit-learn's SGD loop.** An SGDClassifier (fitted, or its first call) on dense rows trains through
  :mod:`.sgd_fast`, a Numba replica of the loop that gives bitwise the same model with up to
  four classes per core (one-vs-rest groups on the same threads); every other call is
  ``estimator.partial_fit``.

Both contexts are thread-local and wrap the ``partial_fit`` call alone (never the user's
callback).
"""

from __future__ import annotations

import sys
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

import joblib
import numpy as np

from ..maps._parallel import _pool, effective_n_jobs
from . import sgd_fast, softmax
from ._gather import StepRows
from .sources import sgd_dtype


def learner_threads(estimator: Any, n_jobs: int | None) -> int:
    """Threads for the one-vs-rest problems of ``estimator``'s ``partial_fit`` calls made from
    the current thread: :func:`~dask_kernels.maps._parallel.effective_n_jobs` (None: every
    usable CPU on the main thread, 1 on any other, so never nested inside Dask's or a user's
    threads); 1 if the estimator has no ``n_jobs`` parameter to take them."""
    if n_jobs is not None and (not isinstance(n_jobs, (int, np.integer)) or isinstance(n_jobs, bool) or n_jobs == 0):
        raise ValueError(f"n_jobs must be None or a non-zero integer (-1: every usable CPU), got {n_jobs!r}")
    if "n_jobs" not in estimator.get_params(deep=False):
        return 1
    return effective_n_jobs(n_jobs)


#: Least work of one ``partial_fit`` call (stored nonzeros of the step times classes) run on
#: threads: handing the classes to the kept pool costs ~0.3 ms CPU per call (measured on 2
#: loaded cores), so a call should take several ms (10000 dense rows x 256 features x 4
#: classes: 10M, 30-75 ms; 1000 rows: 1M, 3-7 ms).
MIN_THREADED_WORK = 2**20


class PoolBackend(joblib.ParallelBackendBase):
    """joblib backend: a ``Parallel`` call's tasks on the process's kept pool of ``threads``
    threads (:func:`dask_kernels.maps._parallel._pool`), the caller blocking on each result.

    For scikit-learn's ``Parallel(n_jobs=self.n_jobs, require="sharedmem")`` loops over
    independent problems (one-vs-rest), under ``joblib.parallel_config(backend=PoolBackend(n))``.
    ``Parallel(n_jobs=1)`` stays sequential.

    Examples
    --------
    >>> import joblib
    >>> from dask_kernels.learn.learner import PoolBackend
    >>> with joblib.parallel_config(backend=PoolBackend(2)):
    ...     joblib.Parallel()(joblib.delayed(pow)(i, 2) for i in range(4))
    [0, 1, 4, 9]
    """

    supports_retrieve_callback = False  # joblib then calls retrieve_result: a blocking wait
    supports_timeout = False
    supports_sharedmem = True
    uses_threads = True

    def __init__(self, threads: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.threads = int(threads)
        self.default_n_jobs = self.threads

    def effective_n_jobs(self, n_jobs: int | None) -> int:
        return 1 if n_jobs == 1 else self.threads

    def configure(self, n_jobs: int | None = 1, parallel: Any = None, **kwargs: Any) -> int:
        self.parallel = parallel
        return self.effective_n_jobs(n_jobs)

    def submit(self, func: Any, callback: Any = None) -> Future:
        future = _pool(self.threads).submit(func)
        if callback is not None:
            future.add_done_callback(callback)
        return future

    def retrieve_result(self, out: Future, timeout: float | None = None) -> Any:
        return out.result()


def _threaded(F: Any, fit_args: dict, threads: int) -> bool:
    """Threads pay for this call: several classes (a binary problem is one job) and enough work."""
    n_classes = len(fit_args.get("classes", ()))
    if threads <= 1 or n_classes <= 2:
        return False
    nonzeros = F.nnz if hasattr(F, "nnz") else getattr(F, "size", 0)
    return nonzeros * n_classes >= MIN_THREADED_WORK


def partial_fit(estimator: Any, F: Any, y: Any, fit_args: dict, *, threads: int = 1, finite: bool = False,
                whole_groups: bool = False) -> None:
    """``estimator.partial_fit(F[, y], **fit_args)`` (``y`` None: unsupervised) on ``threads``
    one-vs-rest threads (:class:`PoolBackend`) when that pays (:data:`MIN_THREADED_WORK`), without the finite check if
    ``finite`` (see the module docstring). An SGDClassifier on dense rows (fitted, or its first call) takes the bitwise
    replica :mod:`.sgd_fast` where it :func:`~.sgd_fast.applies` (``whole_groups``: its classes in groups
    of four, threads only for more, see there; ``F`` may then be a step's
    rows where they are kept, :class:`._gather.StepRows`; a SoftmaxSGD on dense rows reads them in place too when
    ``finite``: gathered for any other call)."""
    classes = fit_args.get("classes")
    if y is not None and set(fit_args) <= {"classes"} and sgd_fast.applies(estimator, F, y, classes=classes):
        # the threads scikit-learn's call would take: the estimator's own n_jobs, else ours when they pay
        if estimator.n_jobs is not None:
            threads = joblib.effective_n_jobs(estimator.n_jobs)
        elif not _threaded(F, fit_args, threads):
            threads = 1
        sgd_fast.partial_fit(estimator, F, y, classes, threads=threads, finite=finite, whole_groups=whole_groups)
        return
    if isinstance(F, StepRows) and finite and set(fit_args) <= {"classes"} and softmax.takes_rows(estimator):
        estimator._partial_fit_rows(F, y, classes)  # the kept rows read in place: bitwise the gathered call
        return
    if isinstance(F, StepRows):
        F = F.gather()
    with ExitStack() as stack:
        if _threaded(F, fit_args, threads) and estimator.get_params(deep=False).get("n_jobs") is None:
            stack.enter_context(joblib.parallel_config(backend=PoolBackend(threads), n_jobs=threads))
        if finite and "sklearn" in sys.modules:  # its config reaches only estimators that imported it
            import sklearn

            stack.enter_context(sklearn.config_context(assume_finite=True))
        estimator.partial_fit(F, *(() if y is None else (y,)), **fit_args)


@dataclass(frozen=True)
class Fitter:
    """One run's ``partial_fit`` call: ``fit(estimator, F, y)`` trains on a prepared step.

    Parameters
    ----------
    fit_args : dict
        Keyword arguments of every call (a classifier's ``classes``).
    supervised : bool
        False for clusterers: the labels are not passed.
    threads : int, default=1
        One-vs-rest threads (:func:`learner_threads`).
    finite : bool, default=False
        The features are finite by construction (:func:`partial_fit`).
    whole_groups : bool, default=False
        The SGD fast path keeps its classes in groups of four (:mod:`.sgd_fast`): less CPU, for
        a run whose own threads prepare the next steps meanwhile.
    """

    fit_args: dict
    supervised: bool
    threads: int = 1
    finite: bool = False
    whole_groups: bool = False

    def __call__(self, estimator: Any, F: Any, y: Any) -> None:
        # (sgd_dtype: a no-op unless a worker prepared F for an unfitted clone)
        partial_fit(estimator, sgd_dtype(F, estimator), y if self.supervised else None, self.fit_args,
                    threads=self.threads, finite=self.finite, whole_groups=self.whole_groups)

    def single(self) -> Fitter:
        """The same calls on one thread (each replica's: the replicas are the parallelism)."""
        return replace(self, threads=1)

    @staticmethod
    def in_place(estimator: Any) -> bool:
        """Whether steps for ``estimator`` may name kept rows instead of gathering them
        (:func:`.sgd_fast.takes_rows`, :func:`.softmax.takes_rows`: a SoftmaxSGD reads them in
        place when they are finite by construction, :func:`partial_fit` gathers them otherwise)."""
        return sgd_fast.takes_rows(estimator) or softmax.takes_rows(estimator)
