"""Where a subcommand computes: a running scheduler (``--scheduler`` or ``--scheduler-file``) or
a LocalCluster it starts and stops.

``--scheduler-file`` waits (at most ``--scheduler-file-timeout`` seconds) for the file that
``dask scheduler --scheduler-file`` writes once it listens: a job started beside its scheduler
(deploy/*.sh, compose, Kubernetes) no longer races it.
"""

import argparse
import contextlib
import json
import os
import time

from .._files import MAX_JSON_BYTES, file_problem
from ._args import UsageError, connect, positive_float, positive_int, scheduler_address

#: Default seconds to wait for a scheduler file to appear.
SCHEDULER_FILE_TIMEOUT = 120.0


def add_cluster_arguments(parser):
    """``--scheduler``, ``--scheduler-file`` (mutually exclusive) and the LocalCluster's size."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_address,
                       help="address of a running `dask scheduler` (tcp://host:port or host:port)")
    where.add_argument("--scheduler-file", metavar="FILE",
                       help="the file `dask scheduler --scheduler-file FILE` writes (waited for, see "
                            "--scheduler-file-timeout)")
    parser.add_argument("--scheduler-file-timeout", type=positive_float, default=SCHEDULER_FILE_TIMEOUT,
                        metavar="SECONDS", help=f"how long to wait for --scheduler-file (default {SCHEDULER_FILE_TIMEOUT:g})")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="LocalCluster worker processes when no scheduler is given (default: cores)")
    parser.add_argument("--threads-per-worker", type=positive_int, default=1)


def read_scheduler_file(path, timeout=SCHEDULER_FILE_TIMEOUT, poll=0.2):
    """The address in a scheduler file, waiting up to ``timeout`` seconds for it to appear (and
    be complete: the scheduler may be writing it)."""
    deadline = time.monotonic() + timeout
    last = "it does not exist"
    while True:
        try:
            with open(path) as f:
                text = f.read()
            address = json.loads(text)["address"]
            if not isinstance(address, str):
                raise TypeError(f"'address' is {address!r}")
        except FileNotFoundError:
            last = "it does not exist"
        except (ValueError, KeyError, TypeError) as e:  # half-written, or not a scheduler file
            last = f"it holds no scheduler address ({type(e).__name__}: {e})"
        except IsADirectoryError:
            raise UsageError(f"--scheduler-file {path}: is a directory") from None
        else:
            try:
                return scheduler_address(address)
            except argparse.ArgumentTypeError as e:
                raise UsageError(f"--scheduler-file {path}: {e}") from None
        if time.monotonic() >= deadline:
            raise UsageError(f"--scheduler-file {path}: waited {timeout:g} s but {last}; is `dask scheduler "
                             f"--scheduler-file {path}` running?")
        time.sleep(poll)


def check_scheduler_file_path(path):
    """Fail now if the scheduler file can never appear (its folder is missing)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"--scheduler-file {path}: folder {folder} does not exist")


def _command_method(args):
    """The map method a command will run (its ``--method``, the method of its ``--spec`` file, or
    the command's ``default_method`` when it appends to no store), not yet checked against the
    registry (which imports every map), or None."""
    method = getattr(args, "method", None)
    spec_path = getattr(args, "spec", None)
    if spec_path:
        try:
            if file_problem(spec_path, MAX_JSON_BYTES) is not None:  # a FIFO, /dev/zero: the command refuses it
                return None
            with open(spec_path, "rb") as f:
                method = json.loads(f.read()).get("method")
        except (OSError, ValueError, AttributeError, RecursionError):  # RecursionError: [[[[... nested too deep
            return None  # the command reports a bad --spec itself, with its own message
    elif method is None and not getattr(args, "append", False):  # an append runs the store's map
        method = getattr(args, "default_method", None)
    return method if isinstance(method, str) else None


def warm_plugin(args):
    """The :class:`~dask_kernels.warm.WarmKernels` plugin for the map a command will run, or
    None when there is no map."""
    from ..maps import registered_maps
    from ..warm import WarmKernels

    method = _command_method(args)
    return WarmKernels(methods=[method]) if method in registered_maps() else None


#: Input up to this many bytes (local files) is processed in the command's own process, on dask's
#: threaded scheduler, when no ``--scheduler``, ``--scheduler-file`` or ``--workers`` is given:
#: starting a 2-process LocalCluster costs seconds, more than computing such an input takes
#: (the kernels release the GIL, so threads use every core).
IN_PROCESS_BYTES = 256 * 2**20


def _local_bytes(path):
    """Bytes under a local path (a file, or a folder such as a Zarr array), or None for a URL."""
    from ._paths import is_url

    if not path or is_url(path):
        return None
    path = os.path.realpath(os.path.expanduser(str(path)))
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(folder, name))
            if total > IN_PROCESS_BYTES:
                return total
    return total


def runs_in_process(args) -> bool:
    """True when the command computes in its own process (threads), without starting a cluster:
    no scheduler or ``--workers`` given and its input (``args.input`` or ``args.source``, local)
    is at most :data:`IN_PROCESS_BYTES`."""
    if not starts_local_cluster(args) or getattr(args, "workers", None):
        return False
    size = _local_bytes(getattr(args, "input", None) or getattr(args, "source", None))
    return size is not None and size <= IN_PROCESS_BYTES


def starts_local_cluster(args) -> bool:
    """True when the command starts its own LocalCluster (no ``--scheduler``/``--scheduler-file``):
    its workers then run on this machine, in this environment, and read what this process reads."""
    return not (getattr(args, "scheduler", None) or getattr(args, "scheduler_file", None))


#: dask configuration of the LocalCluster a command starts, besides its start method. What is
#: turned down here feeds only the dashboard and the event loop's health log, which nobody watches
#: on a command's own cluster (it listens on a random port), and ran all through the job on the
#: cores the workers compute on:
#:
#: * the workers' statistical profiler (a stack sample every 10 ms per worker): about 5 % of a
#:   CPU-bound featurize on 2 workers, 0.013 CPU-seconds per second per idle worker;
#: * the event loop's tick (every 20 ms in the scheduler, each nanny and each worker; 500 ms is
#:   distributed's own test setting; a blocked loop is still logged after ``tick.limit``, 3 s) and
#:   the system monitor (every 500 ms in each of them: the process's CPU, memory and open files,
#:   and the host's disk and network counters, through psutil; every 5 s, without the disk):
#:   together about 5 % of a core in the command and 1.5-2 % in each worker, idle or busy (2-worker
#:   cluster, loaded machine). Memory limits are unchanged: the workers' and nannies' memory
#:   monitor (``distributed.worker.memory.monitor-interval``) keeps its own interval.
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "500ms",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.system-monitor.disk": False,
}


def _cluster_log_level(args):
    """The log level of the command's own LocalCluster: a task's failure (a NaN in the input, say)
    reaches the command as its exception and is printed as one line; the workers' own log of it
    (a traceback, then cancelled tasks) only repeated it, so they log only what is critical,
    unless ``--debug`` (or DASK_KERNELS_DEBUG=1) asks for everything."""
    import logging

    debug = getattr(args, "debug", False) or os.environ.get("DASK_KERNELS_DEBUG", "") not in ("", "0")
    return logging.WARNING if debug else logging.CRITICAL


def start_worker_server(args):
    """Start the forkserver of the LocalCluster a command is about to start, now, preloading
    dask, distributed and this package with the command's map warm (``dask_kernels.cli._forkserver``).

    Why: a command's own imports take a core for about two seconds before it can start a
    cluster, and each worker then imported the package and loaded the map's kernels again. Started
    first, the server does that work once, on the other core, while the command imports; workers
    fork from it with everything loaded. Nothing happens for a running scheduler or when workers
    are not forked from a forkserver (see :func:`worker_start_method`).
    """
    if not starts_local_cluster(args) or runs_in_process(args) or worker_start_method() != "forkserver":
        return
    import multiprocessing
    import multiprocessing.forkserver

    from ._forkserver import WARM_METHODS_ENV

    saved = os.environ.get(WARM_METHODS_ENV)
    os.environ[WARM_METHODS_ENV] = _command_method(args) or ""  # the server inherits it at start
    try:
        multiprocessing.get_context("forkserver").set_forkserver_preload(["dask_kernels.cli._forkserver"])
        multiprocessing.forkserver.ensure_running()
    finally:
        if saved is None:
            del os.environ[WARM_METHODS_ENV]
        else:
            os.environ[WARM_METHODS_ENV] = saved


#: dask's own default start method for worker processes (``distributed.worker.multiprocessing-method``).
_DASK_DEFAULT_START = "spawn"


def worker_start_method():
    """How a LocalCluster started by a command starts its worker processes: ``forkserver`` where
    the platform has it and dask's configuration still says its default, ``spawn``; otherwise
    what the configuration says.

    Why: a spawned worker re-imports the command's ``__main__`` (the console script, so all of
    dask_kernels and its dependencies) and took 4 s longer to shut down; forked from a fresh
    forkserver, which preloads dask's dependencies once, a 2-worker cluster started about 2 s
    faster, used 1.5 s less CPU per worker and closed in 0.2 s instead of 4.3 s (measured on a
    loaded 2-core machine, same run). The forkserver itself is a fresh single-threaded process,
    so it has none of plain ``fork``'s hazards with the client's threads.
    """
    import multiprocessing

    import dask

    method = dask.config.get("distributed.worker.multiprocessing-method", _DASK_DEFAULT_START)
    if method == _DASK_DEFAULT_START and "forkserver" in multiprocessing.get_all_start_methods():
        return "forkserver"
    return method


def _run_beside(prepare):
    """Start ``prepare()`` in a thread (:func:`dask_kernels.warm.run_beside`: a failure is
    ignored); return a function that waits for it."""
    if prepare is None:
        return lambda: None
    from ..warm import run_beside

    return run_beside(prepare, "dask-kernels-prepare").join


def _scheduler_has_bokeh():
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


def _announce_dashboard(client):
    """Log the address of the scheduler's dashboard, when it serves one: distributed answers on
    the dashboard's port with or without bokeh, but draws plots only with it (the ``dashboard``
    extra), so the link is given only where bokeh is installed beside the scheduler."""
    import logging

    try:
        services = client.scheduler_info().get("services", {})
        if "dashboard" not in services or not client.run_on_scheduler(_scheduler_has_bokeh):
            return
    except Exception:  # noqa: BLE001  (an informational line never fails a command)
        return
    logging.getLogger("dask_kernels.cli").info("dashboard: %s", client.dashboard_link)


@contextlib.contextmanager
def threads_here():
    """dask's threaded scheduler in this process, named by its function: given no scheduler, or
    one by name ("threads"), dask imports distributed (0.5-1 s) to look for a Client first."""
    import dask
    import dask.threaded

    with dask.config.set(scheduler=dask.threaded.get):
        yield


@contextlib.contextmanager
def client_for(args, prepare=None):
    """A distributed Client as the arguments say; closes what it started.

    Registers :func:`warm_plugin`, so that workers (those present, and any that join later)
    load the map's Numba kernels at start rather than in their first block.

    ``prepare``: a function run in a thread of this process while a LocalCluster starts (and
    waited for before the client is handed out), to load what the command uses next (Zarr, Numba)
    while this process would otherwise only wait for its workers.

    Small local input (:func:`runs_in_process`) starts no cluster: the block yields None and the
    work runs on dask's threaded scheduler in this process."""
    if runs_in_process(args):
        with threads_here():
            yield None
        return
    from distributed import Client, LocalCluster

    if getattr(args, "scheduler", None):
        client = connect(args.scheduler)
        cluster = None
    elif getattr(args, "scheduler_file", None):
        check_scheduler_file_path(args.scheduler_file)
        address = read_scheduler_file(args.scheduler_file, args.scheduler_file_timeout)
        client = connect(address, flag=f"--scheduler-file {args.scheduler_file}")
        cluster = None
    else:
        import dask

        prepared = _run_beside(prepare)
        with dask.config.set({**LOCAL_CLUSTER_CONFIG,
                              "distributed.worker.multiprocessing-method": worker_start_method()}):
            cluster = LocalCluster(n_workers=args.workers, threads_per_worker=args.threads_per_worker,
                                   processes=True, dashboard_address=":0", silence_logs=_cluster_log_level(args))
        # results straight from the workers: through the scheduler, which runs in this process, each
        # result (a training step, 30 MB) was received and sent again, two copies here at once
        client = Client(cluster, direct_to_workers=True)
        prepared()
    try:
        _announce_dashboard(client)
        plugin = warm_plugin(args)
        if plugin is not None:
            client.register_plugin(plugin)
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
