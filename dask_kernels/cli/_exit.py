"""A ``dask-kernels`` process ends without tearing its interpreter down.

After a command, Python's finalization frees every module's objects one by one: with what a
command imports (dask with SciPy, Numba, distributed) that took 0.5-1 CPU-second per process
here, once in the command and then, one after the other, in its
LocalCluster's worker server (the server only starts exiting when the command has exited), and a
caller that reads the command's output (a pipe, ``subprocess.run``) waits for both.

:func:`arm` registers, before anything the process imports registers its own exit handlers,
the handler that ends it: exit handlers run last-registered first, so every other one (dask's,
distributed's, multiprocessing's clean-up, logging's flush) has run when it flushes stdout and
stderr and calls :func:`os._exit` with the exit status. Nothing the commands write is left to
finalization: stores and files are closed where they are written. Only a process that set its
status (:func:`exit_with`, the command line run as a program) or was armed with one ends so;
``main(argv)`` called in a Python session never does.
"""

from __future__ import annotations

import atexit
import os
import sys

_status: int | None = None
_armed = False


def _end() -> None:
    if _status is None:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # pragma: no cover - a closed or broken stream: nothing left to flush
            pass
    os._exit(_status)


def arm(status: int | None = None) -> None:
    """Register the ending handler (once); ``status``: end so with it unless :func:`exit_with`
    gives another."""
    global _armed, _status
    if status is not None:
        _status = status
    if not _armed:
        atexit.register(_end)
        _armed = True


def exit_with(status: int | None) -> int | None:
    """End this process with ``status`` once its exit handlers have run; returns ``status``."""
    global _status
    _status = 0 if status is None else int(status)
    return status
