"""Preloaded by the forkserver of a LocalCluster that a ``dask-kernels`` command starts.

Imported once in the server process (see :func:`dask_kernels.cli._cluster.start_worker_server`),
so every worker forked from it starts with dask, distributed, the featurizing pipeline's task
functions, the Numba kernels of the maps named in ``DASK_KERNELS_WARM_METHODS`` and what a store
write runs (Zarr, the digest kernel: :func:`~dask_kernels.warm.warm_writer`) already loaded,
instead of importing and loading them itself. For a map with a kernel plan
(:mod:`dask_kernels.maps._plan`) that is all a task runs: the server and its workers import
neither scikit-learn nor the map classes (2 of the server's 4.5 CPU-seconds, on the critical
path of a command's start). A failure here must not stop the server from starting
workers: it is swallowed, and the workers' :class:`~dask_kernels.warm.WarmKernels` plugin warms
them as it would without this module.
"""

import os

#: comma-separated map methods the server warms
WARM_METHODS_ENV = "DASK_KERNELS_WARM_METHODS"


def _preload():
    import distributed  # noqa: F401  (what a worker process runs)

    from ..pipeline import tasks  # noqa: F401  (what featurize's tasks run)
    from ..warm import WARM_PLANS, warm_maps, warm_writer

    def known(method):  # a map without a plan: its class, and scikit-learn, are what its tasks run
        if method in WARM_PLANS:
            return True
        from ..maps import registered_maps

        return method in registered_maps()

    warm_maps([m for m in os.environ.get(WARM_METHODS_ENV, "").split(",") if m and known(m)])
    warm_writer()  # once here, not in each worker's warm-up thread beside its first task


if os.environ.get(WARM_METHODS_ENV) is not None:  # only in a server started by a command
    from ._exit import arm

    arm(0)  # it exits after its command, which a caller reading their output waits for (see _exit)
    try:
        _preload()
    except Exception:  # pragma: no cover - the plugin warms the workers instead
        pass
