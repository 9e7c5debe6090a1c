"""Guards for tests that put a FIFO or a link to /dev/zero where a file is read: a regression
fails the test (TimeoutError, MemoryError) instead of hanging it or exhausting the machine."""

import contextlib
import os
import resource
import signal
import time


def _release(fifo):
    """Give every reader blocked opening ``fifo`` an end of file (they may be other threads')."""
    for _ in range(64):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: no reader left (or no FIFO)
            return
        time.sleep(0.05)


@contextlib.contextmanager
def deadline(seconds=10, fifo=None):
    """Raise TimeoutError in the main thread after ``seconds``, first releasing the readers
    blocked on ``fifo`` (so that a regression fails the test instead of hanging the session)."""
    def fail(*_):
        if fifo is not None:
            _release(fifo)
        raise TimeoutError(f"blocked for more than {seconds} s (reading a FIFO?)")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _vm_bytes():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))


@contextlib.contextmanager
def memory_cap(extra=2**30):
    """Limit the process's address space to its present size plus ``extra`` (restored after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _vm_bytes() + extra
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
