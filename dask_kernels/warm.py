"""Warm Dask workers: load a map's Numba kernels before its first block arrives.

A fresh worker process pays, on the first block of a map, for importing the package and for
loading (or, without a cache, compiling) the map's Numba kernels: 1-3 s here, the same order as
a whole block. :class:`WarmKernels` is a ``distributed`` worker plugin that does this at worker
start, on every worker present when it is registered and on every worker that joins later
(an adaptive cluster growing), so no block waits for it.

What it runs: for each method name, the map with default parameters (its kernel plan, see
:mod:`dask_kernels.maps._plan`, where it has one: no scikit-learn) applied to a tiny block,
dense and CSR (the kernels are compiled per argument type, not per size,
so this loads exactly the code the real blocks use); for each full spec (a fitted map's
:meth:`~dask_kernels.maps.base.FeatureMap.spec`), that map on a tiny block, which also builds
its parameter tables. A failure is logged by the worker and changes nothing: the first block
then warms the worker as before. The plugin also loads what a worker's first store block
needs besides the kernels (Zarr, the digest kernel: :func:`warm_writer`) in a background thread,
while the worker waits for its first task.

Numba's on-disk cache (``NUMBA_CACHE_DIR``, or ``__pycache__`` beside the package) is shared
by every process of one machine, so workers load compiled kernels instead of compiling them;
a LocalCluster's workers inherit the environment of the process that starts them.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

try:  # distributed is an optional dependency of the pipeline
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # pragma: no cover - only without distributed
    WorkerPlugin = object

if TYPE_CHECKING:
    from .maps._plan import KernelPlan

logger = logging.getLogger(__name__)

#: Width of the tiny warm-up block for a method without a spec.
_WARM_WIDTH = 8

def _gcws_plan(n_features_in: int) -> KernelPlan:
    from .maps._gcws_kernels import default_plan  # here: only a process warming GCWS loads its kernels

    return default_plan(n_features_in)


#: Map method -> its kernel plan (:mod:`dask_kernels.maps._plan`) with default parameters, for
#: ``n_features_in`` columns: a worker warms and runs these without scikit-learn or the map classes.
WARM_PLANS = {"gcws": _gcws_plan}


def warm_plan(method: str, n_features_in: int) -> KernelPlan | None:
    """The kernel plan of ``method``'s map with default parameters on ``n_features_in`` columns
    (its kernels' argument types), or None for a method without one (:data:`WARM_PLANS`)."""
    build = WARM_PLANS.get(method)
    return None if build is None else build(n_features_in)


def warm_maps(methods: Iterable[str] = (), specs: Iterable[str | dict] = ()) -> dict[str, float]:
    """Run each map once on a tiny block in this process; return seconds per map.

    Parameters
    ----------
    methods : iterable of str
        Registered map methods (``"gcws"``, ``"rff"``, ...), warmed with default parameters.
    specs : iterable of dict or JSON str
        Full specs of fitted maps (without a sidecar), warmed as they are.

    Returns
    -------
    dict mapping ``method`` (or ``"spec:<method>"``) to the seconds it took.

    Examples
    --------
    >>> from dask_kernels.warm import warm_maps
    >>> sorted(warm_maps(["rff"]))
    ['rff']
    """
    seconds = {}
    for method in methods:
        t0 = time.perf_counter()
        X = np.zeros((2, _WARM_WIDTH))
        X[0, 0] = 1.0  # one nonzero row: the sampling kernels' main path, not only the empty-row exit
        # what a task runs: the kernel plan (no scikit-learn) where the method has one, else the
        # fitted map; both have validate_block, transform_block and accepts_sparse
        runner = warm_plan(method, _WARM_WIDTH)
        if runner is None:
            from .maps import registered_maps

            runner = registered_maps()[method]().fit(X)
        for block in (X, sp.csr_matrix(X)) if runner.accepts_sparse else (X,):
            runner.transform_block(runner.validate_block(block))
        seconds[method] = time.perf_counter() - t0
    for spec in specs:
        from .maps import from_spec

        t0 = time.perf_counter()
        fmap = from_spec(spec)
        d = int(fmap.n_features_in_)
        X = sp.csr_matrix((1, d)) if d > 65536 and fmap.accepts_sparse else np.zeros((1, d))
        fmap.transform_block(fmap.validate_block(X))
        method = (json.loads(spec) if isinstance(spec, (str, bytes)) else spec)["method"]
        seconds[f"spec:{method}"] = time.perf_counter() - t0
    return seconds


#: What a worker's first store block imports besides the kernels (Zarr: ~0.5 s).
WRITER_MODULES = ("zarr.codecs",)


def warm_writer() -> None:
    """Load what a worker's first store block runs besides the map: Zarr (:data:`WRITER_MODULES`)
    and the Numba kernel of the blocks' done-record digests (:mod:`dask_kernels.pipeline._digest`).

    Examples
    --------
    >>> from dask_kernels.warm import warm_writer
    >>> warm_writer()
    """
    _import_all(WRITER_MODULES)
    from .pipeline._digest import digest

    digest(np.zeros(9, np.uint8))  # one signature: 8-byte words and a byte tail


def run_beside(fn: Callable[[], object], name: str) -> threading.Thread:
    """Start ``fn()`` in a daemon thread called ``name`` (returned), ignoring its failure: it only
    loads ahead what a later step uses (a worker's first task, a command after its cluster is
    up), and that step loads it again, and reports any error, itself."""

    def run():
        try:
            fn()
        except Exception:  # pragma: no cover - an optimization only
            pass

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


def _import_all(modules: Iterable[str]) -> None:
    for name in modules:
        importlib.import_module(name)


class WarmKernels(WorkerPlugin):
    """Worker plugin: :func:`warm_maps` at worker start (present and future workers).

    Parameters
    ----------
    methods : iterable of str
        Map methods to warm with default parameters.
    specs : iterable of dict or JSON str
        Full specs of fitted maps to warm (their parameter tables are built too).

    Attributes
    ----------
    seconds : dict
        After ``setup`` on a worker: what :func:`warm_maps` returned there.

    Examples
    --------
    On a client of any cluster (``dask-kernels`` commands that start one do this themselves)::

        client.register_plugin(WarmKernels(methods=["gcws"]))
    """

    name = "dask-kernels-warm"

    def __init__(self, methods: Iterable[str] = (), specs: Iterable[str | dict] = ()):
        self.methods = list(methods)
        self.specs = [s if isinstance(s, str) else json.dumps(s) for s in specs]
        self.seconds = {}

    def setup(self, worker) -> None:
        # while the worker waits for its first task (the client is still fitting the map and
        # creating the store) instead of in that task
        run_beside(warm_writer, "dask-kernels-imports")
        try:
            self.seconds = warm_maps(self.methods, self.specs)
        except Exception as e:  # warming is an optimization: never fail a worker's start for it
            logger.warning("dask-kernels: warming %s / %d specs failed (%s: %s); the first block will warm "
                           "this worker instead", self.methods, len(self.specs), type(e).__name__, e)
