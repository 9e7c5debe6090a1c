"""How :func:`~dask_kernels.fit_incremental` calls the learner's ``partial_fit``.

Two costs the learner would otherwise pay on every step, removed where that is exact:

* **One-vs-rest on several threads.** A multiclass SGDClassifier, Perceptron or
  passive-aggressive classifier fits one binary problem per class through
  ``joblib.Parallel(n_jobs=self.n_jobs, require="sharedmem")``; the problems are independent
  (each writes its own row of ``coef_``, with a seed drawn before any of them starts), so they
  may run on several threads and give bitwise the coefficients of one thread. When the
  estimator's own ``n_jobs`` is None, the call runs under
  ``joblib.parallel_config(backend="threading", n_jobs=threads)``: the estimator's parameters
  are never changed, and its own ``n_jobs``, when set, still decides.
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


def partial_fit(estimator: Any, F: Any, y: Any, fit_args: dict, *, threads: int = 1, finite: bool = False) -> None:
    """``estimator.partial_fit(F[, y], **fit_args)`` (``y`` None: unsupervised) on ``threads``
    one-vs-rest threads, without the finite check if ``finite`` (see the module docstring)."""
    with ExitStack() as stack:
        if threads > 1:
            import joblib

            stack.enter_context(joblib.parallel_config(backend="threading", n_jobs=threads))
        if finite:
            import sklearn

            stack.enter_context(sklearn.config_context(assume_finite=True))
        estimator.partial_fit(F, *(() if y is None else (y,)), **fit_args)
