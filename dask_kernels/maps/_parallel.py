"""Threads over row blocks for the public ``transform`` of in-memory input.

The block kernels are serial and release the GIL, so a plain thread pool over row blocks uses
every core. Bitwise reproducibility does not depend on the number of threads: the rows are cut
into the same blocks whatever ``n_jobs`` is (:func:`row_blocks` depends on the row count only),
and while blocks run, BLAS is held to one thread (RFF and NRFF project with BLAS, whose
rounding can depend on its own thread count). So ``n_jobs=1`` and ``n_jobs=8`` run the very
same computations, only on different cores. The one exception is a phase planned on the BLAS's
own threads (:class:`OnBlas`: RFF's and NRFF's product with a large table), which the BLAS
splits by ``n_jobs``: there the values agree to the rounding of the product.

Never nested: Dask tasks call ``transform_block`` directly, which never starts threads, the
default ``n_jobs=None`` means one thread when ``transform`` is called from any thread other than
the main thread (a Dask worker thread, a user's own pool), and a call from a thread of our own
pool runs serially. The pool is kept between calls (one per process and thread count).

Where the time goes: with this module's logger at DEBUG, each phase of a planned transform
(RFF's or NRFF's product, then their cosine) logs its wall-clock and process CPU seconds.
"""

import logging
import numbers
import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp

#: Target rows per block. Blocks are this size or a little smaller (equal-sized blocks); a
#: block of 128 rows is 0.5-10 ms of work for every map, so pool overhead (~20 us per block)
#: stays well under 1 %, and there are enough blocks to balance 2-16 threads.
BLOCK_ROWS = 128

#: Constructor parameters that change how fast a map runs, never what it computes: they stay
#: out of the spec (and so out of store fingerprints), and any spec loads with their defaults.
RUNTIME_PARAMS = ("n_jobs",)

#: scikit-learn parameter constraint of ``n_jobs``.
N_JOBS_CONSTRAINT = {"n_jobs": [None, numbers.Integral]}

_BLAS_LOCK = threading.Lock()
_controller = None

# One pool per (process, thread count), kept between calls: starting and joining threads cost
# 0.2-0.4 ms per call, 5-10 % of a small transform. Its idle threads only wait on a queue.
_POOLS = {}
_POOL_LOCK = threading.Lock()
_in_pool = threading.local()

logger = logging.getLogger(__name__)


def _mark_pool_thread():
    _in_pool.active = True


def _pool(threads):
    """The shared thread pool of ``threads`` workers of this process (made on first use; a
    forked child makes its own)."""
    key = (os.getpid(), threads)
    with _POOL_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            # named by thread count, so a thread dump (and a test) tells which pool a thread is in
            pool = _POOLS[key] = ThreadPoolExecutor(threads, thread_name_prefix=f"dask-kernels-transform-{threads}",
                                                    initializer=_mark_pool_thread)
    return pool


def usable_cpus():
    """CPUs this process may run on (its affinity mask when the platform has one)."""
    if hasattr(os, "process_cpu_count"):  # Python >= 3.13
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def effective_n_jobs(n_jobs):
    """Threads to use: scikit-learn's convention, except that None means all usable CPUs on
    the main thread and 1 on any other thread (so it never nests inside someone's pool).

    ``n_jobs >= 1`` is taken as is; ``-1`` is all usable CPUs, ``-2`` all but one, and so on.
    """
    cpus = usable_cpus()
    if n_jobs is None:
        return cpus if threading.current_thread() is threading.main_thread() else 1
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning: use None, a positive count or -1")
    return n_jobs if n_jobs > 0 else max(cpus + 1 + n_jobs, 1)


#: Row blocks of the maps whose block kernel is one matrix product (RFF, NRFF): OpenBLAS's
#: SGEMM runs 1.4x faster per row on 512-1024 rows than on 128 (measured, d = 256-1024,
#: k = 4096-16384), so their blocks are up to 1024 rows, and at least 256 rows unless that
#: leaves a usable CPU idle.
GEMM_BLOCKS = (1024, 256)


def row_blocks(n_rows, block_rows=BLOCK_ROWS, min_rows=None):
    """``[(start, stop), ...]``: consecutive blocks of at most ``block_rows`` rows, sizes within one.

    With ``min_rows``, at least ``min(usable_cpus(), n_rows // min_rows)`` blocks, so that
    large blocks still occupy every CPU. A function of ``n_rows`` (and the CPUs the process may
    use), never of the thread count: that is what keeps the result bitwise identical for any
    ``n_jobs``.
    """
    n_blocks = max(-(-n_rows // block_rows), 1)
    if min_rows:
        n_blocks = max(n_blocks, min(usable_cpus(), n_rows // min_rows))
    cuts = [i * n_rows // n_blocks for i in range(n_blocks + 1)]
    return list(zip(cuts[:-1], cuts[1:]))


def blocks_of(block_fn, n_rows):
    """The row blocks :func:`transform_rows` cuts ``n_rows`` into for ``block_fn``: a map's
    ``_row_blocks = (block_rows, min_rows)`` if it has one (see :data:`GEMM_BLOCKS`), else
    :data:`BLOCK_ROWS`."""
    sizes = getattr(getattr(block_fn, "__self__", None), "_row_blocks", None)
    return row_blocks(n_rows, *sizes) if sizes else row_blocks(n_rows)


def _one_blas_thread(threads=1):
    """A context holding BLAS to one thread, or ``threads`` (threadpoolctl's controller, built once).

    When threadpoolctl finds no BLAS in the process (a BLAS it does not know), it warns once: the
    limit then does nothing, so row blocks on several threads may each start the BLAS's threads."""
    global _controller
    from threadpoolctl import ThreadpoolController

    with _BLAS_LOCK:
        if _controller is None:
            _controller = ThreadpoolController()
            if not _controller.select(user_api="blas").lib_controllers:
                import threadpoolctl
                warnings.warn(f"threadpoolctl {threadpoolctl.__version__} finds no BLAS library in this "
                              "process, so the transforms cannot hold NumPy's BLAS to one thread per row "
                              "block: cores may be oversubscribed and RFF, NRFF and Nystroem round as the "
                              "BLAS's own thread count makes them. Upgrade threadpoolctl.",
                              RuntimeWarning, stacklevel=3)
    return _controller.limit(limits=threads, user_api="blas")


class OnBlas(list):
    """A phase of a map's plan (``_transform_phases``) whose tasks run one after another on the
    calling thread, BLAS on the transform's threads (our pool idle meanwhile, so no core runs
    two threads): for one matrix product on many rows, OpenBLAS's threads share the packing of
    the right-hand side, which one-thread calls on row blocks each repeat."""


def _threads(n_jobs, n_blocks):
    """Threads for ``n_blocks`` blocks: never more than blocks, and one inside a thread of the
    shared pool (a block that itself transformed with threads would wait on its own pool)."""
    if getattr(_in_pool, "active", False):
        return 1
    return min(effective_n_jobs(n_jobs), n_blocks)


def _call(task):
    return task()


@contextmanager
def _timed_phase(number, tasks, threads):
    """Log (DEBUG) the wall-clock and process CPU seconds (all threads) of phase ``number`` of a
    planned transform, with ``extra={"phase": (number, kind, wall, cpu)}``, kind "blas" (an
    :class:`OnBlas` phase) or "pool"; nothing is measured when DEBUG is off."""
    if not logger.isEnabledFor(logging.DEBUG):
        yield
        return
    t0, c0 = time.perf_counter(), time.process_time()
    yield
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    kind = "blas" if isinstance(tasks, OnBlas) else "pool"
    logger.debug("transform phase %d: %d task(s) on %s, %.3f s wall, %.3f s CPU", number, len(tasks),
                 "the BLAS's threads" if kind == "blas" else f"{threads} thread(s)", wall, cpu,
                 extra={"phase": (number, kind, wall, cpu)})


def transform_rows(block_fn, X, n_jobs=None):
    """``block_fn`` applied to consecutive row blocks of a validated ``X``, results stacked.

    Parameters
    ----------
    block_fn : callable
        A map's ``transform_block``: ``block_fn(rows, row_offset=start)``, one output row per
        input row (``row_offset`` is the number of the block's first row, for error messages).
    X : ndarray or CSR matrix
        A validated block (the caller has checked it once).
    n_jobs : int or None
        See :func:`effective_n_jobs`.

    Returns
    -------
    ndarray or sparse matrix, what ``block_fn`` returns, for all rows.

    Examples
    --------
    >>> import numpy as np
    >>> transform_rows(lambda b, row_offset: 2 * b, np.arange(6.0).reshape(3, 2), n_jobs=2)
    array([[ 0.,  2.],
           [ 4.,  6.],
           [ 8., 10.]])
    """
    # A map may plan the work itself: ``_transform_phases(X)`` returns None or ``(out, phases)``,
    # lists of zero-argument tasks, each list run on the pool after the previous one finished.
    plan = getattr(getattr(block_fn, "__self__", None), "_transform_phases", None)
    planned = plan(X) if plan is not None else None
    if planned is not None:
        out, phases = planned
        threads = _threads(n_jobs, max(map(len, phases), default=1))
        with _one_blas_thread():
            for number, tasks in enumerate(phases, 1):
                with _timed_phase(number, tasks, threads):
                    if isinstance(tasks, OnBlas):
                        with _one_blas_thread(min(max(threads, 1), usable_cpus())):
                            list(map(_call, tasks))
                    else:
                        list(map(_call, tasks) if threads <= 1 else _pool(threads).map(_call, tasks))
        return out
    blocks = blocks_of(block_fn, X.shape[0])
    # A map may offer ``_transform_into(rows, out, row_offset)``, writing a block's features
    # straight into its rows of the result (no per-block array and copy: ~5 % of RFF at d = 256).
    into = getattr(getattr(block_fn, "__self__", None), "_transform_into", None)
    if into is not None:
        owner = block_fn.__self__
        out = np.empty((X.shape[0], int(owner.n_output_features_)), dtype=owner.output_dtype_)
        threads = _threads(n_jobs, len(blocks))
        with _one_blas_thread():
            if threads <= 1:
                for a, b in blocks:
                    into(X[a:b], out[a:b], row_offset=a)
            else:
                list(_pool(threads).map(lambda blk: into(X[blk[0] : blk[1]], out[blk[0] : blk[1]], row_offset=blk[0]),
                                        blocks))
        return out
    if len(blocks) == 1:
        return block_fn(X, row_offset=0)
    threads = _threads(n_jobs, len(blocks))
    dense = {}  # the output array, made by the first block to finish
    lock = threading.Lock()

    def work(block):
        a, b = block
        result = block_fn(X[a:b], row_offset=a)
        if sp.issparse(result) or not isinstance(result, np.ndarray):
            return result
        # Dense output: every block writes straight into its rows of one array (no second
        # copy of the whole result, and the copies run in parallel).
        with lock:
            if "out" not in dense:
                dense["out"] = np.empty((X.shape[0], *result.shape[1:]), dtype=result.dtype)
        dense["out"][a:b] = result
        return None

    with _one_blas_thread():
        if threads <= 1:
            parts = [work(block) for block in blocks]
        else:
            parts = list(_pool(threads).map(work, blocks))
    if "out" in dense:
        return dense["out"]
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.concatenate(parts)
