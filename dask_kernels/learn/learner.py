"""How :func:`~dask_kernels.fit_incremental` calls the learner's ``partial_fit``.

Two costs the learner would otherwise pay on every step, removed where that is exact:

* **One-vs-rest on several threads.** A multiclass SGDClassifier, Perceptron or
  passive-aggressive classifier fits one binary problem per class through
  ``joblib.Parallel(n_jobs=self.n_jobs, require="sharedmem")``; the problems are independent
  (each writes its own row of ``coef_``, with a seed drawn before any of them starts), so they
  may run on several threads and give bitwise the coefficients of one thread. When the
  estimator's own ``n_jobs`` is None, the call runs under
  ``joblib.parallel_config(backend="threading", n_jobs=threads)``: the estimator's parameters
  are never changed, and its own ``n_jobs``, when set, still decides. Only for calls with
  enough work to pay for the threads joblib starts per call (:data:`MIN_THREADED_WORK`).
* **The finite check.** scikit-learn scans every block for NaN and infinity. Features that a
  feature map computed from rows that passed its input contract (finite, bounded:
  :meth:`~dask_kernels.maps.base.FeatureMap.validate_block`), read back from a store whose
  blocks are checked against their digests, are finite by construction; for those sources
  (``BlockSource.finite``) the check runs under ``sklearn.config_context(assume_finite=True)``.
  Raw rows given without a map, and stores read unverified, keep it.

Both contexts are thread-local and wrap the ``partial_fit`` call alone (never the user's
callback).
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import numpy as np

from ..maps._parallel import effective_n_jobs


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
#: threads: joblib starts a pool of threads per call, which cost 1.5-6 ms (wall and CPU,
#: measured on 2 loaded cores; less idle), so a call must take tens of ms for threads to pay
#: (10000 dense rows x 256 features x 4 classes: 10M, 30-75 ms; 1000 rows: 1M, not worth it).
MIN_THREADED_WORK = 4 * 2**20


def _threaded(F: Any, fit_args: dict, threads: int) -> bool:
    """Threads pay for this call: several classes (a binary problem is one job) and enough work."""
    n_classes = len(fit_args.get("classes", ()))
    if threads <= 1 or n_classes <= 2:
        return False
    nonzeros = F.nnz if hasattr(F, "nnz") else getattr(F, "size", 0)
    return nonzeros * n_classes >= MIN_THREADED_WORK


def partial_fit(estimator: Any, F: Any, y: Any, fit_args: dict, *, threads: int = 1, finite: bool = False) -> None:
    """``estimator.partial_fit(F[, y], **fit_args)`` (``y`` None: unsupervised) on ``threads``
    one-vs-rest threads when that pays (:data:`MIN_THREADED_WORK`), without the finite check if
    ``finite`` (see the module docstring)."""
    with ExitStack() as stack:
        if _threaded(F, fit_args, threads):
            import joblib

            stack.enter_context(joblib.parallel_config(backend="threading", n_jobs=threads))
        if finite:
            import sklearn

            stack.enter_context(sklearn.config_context(assume_finite=True))
        estimator.partial_fit(F, *(() if y is None else (y,)), **fit_args)
