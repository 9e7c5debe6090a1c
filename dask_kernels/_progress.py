"""Progress of a running computation, shown where the user looks.

* In a Jupyter kernel with a distributed Client: ``distributed.progress`` returns a widget that
  shows nothing unless it is displayed, so it is displayed here (plain lines on stdout when
  ipywidgets is missing).
* On a terminal (stderr is a TTY): distributed's or dask's redrawn text bar.
* Anywhere else (batch logs, cron, CI): one plain line every :data:`INTERVAL` seconds and one at
  the end, instead of a bar redrawn every 0.1 s.

Callers use :func:`wait_futures` (distributed futures) or :func:`local_progress` (a context
manager around ``dask.compute`` on the local schedulers).
"""

import sys
import threading
import time

from dask.callbacks import Callback

#: Seconds between two plain progress lines.
INTERVAL = 5.0


def in_jupyter():
    """True inside a Jupyter (IPython) kernel."""
    ip = sys.modules.get("IPython")
    shell = ip.get_ipython() if ip is not None and hasattr(ip, "get_ipython") else None
    return shell is not None and hasattr(shell, "kernel")


def _line(stream, label, done, total, seconds):
    pct = 100.0 * done / total if total else 100.0
    print(f"[{label}] {done}/{total} tasks ({pct:3.0f}%) {seconds:.1f} s", file=stream, flush=True)


#: Seconds between two looks at the scheduler's count of finished tasks. distributed's bar learns
#: that the work is done only at its next look, so the wait ends at most this long after the work.
POLL = 0.1


def _plain_futures(futures, label, interval, stream):
    """Blocks until ``futures`` are done (or one failed), printing a line of the scheduler's count
    of their tasks every ``interval`` seconds and one at the end (distributed's text bar, drawn as
    plain lines). It looks every :data:`POLL` seconds: looking only every ``interval`` (5 s) made
    every command wait up to that long after its last task."""
    from ._compat import TextProgressBar

    class PlainLines(TextProgressBar):
        printed = 0.0  # the elapsed time of the last line

        def _draw_bar(self, remaining, all, **kwargs):
            if self.elapsed - self.printed >= interval:
                self.printed = self.elapsed
                _line(stream, label, all - remaining, all, self.elapsed)

        def _draw_stop(self, remaining, all, **kwargs):
            _line(stream, label, all - remaining, all, self.elapsed)

    PlainLines(futures, interval=min(POLL, interval), complete=True)


def wait_futures(futures, label="dask-kernels", interval=None, stream=None):
    """Show the progress of ``futures`` until they are done (or, in Jupyter, in the background).

    Errors of the futures are not raised here: gather the futures afterwards.
    """
    interval = INTERVAL if interval is None else float(interval)
    futures = list(futures)
    if in_jupyter():
        try:
            import ipywidgets  # noqa: F401  (distributed's widget needs it)
        except ImportError:
            return _plain_futures(futures, label, interval, sys.stdout)
        from distributed import progress
        from IPython.display import display

        display(progress(futures, notebook=True))  # updates itself from the client's event loop
        return None
    stream = sys.stderr if stream is None else stream
    if stream.isatty():
        from distributed import progress

        return progress(futures, notebook=False)
    return _plain_futures(futures, label, interval, stream)


class PlainProgress(Callback):
    """A dask callback printing one line every ``interval`` seconds and one at the end."""

    def __init__(self, label="dask-kernels", interval=None, stream=None):
        super().__init__()
        self.label, self.stream = label, stream
        self.interval = INTERVAL if interval is None else float(interval)

    def _start_state(self, dsk, state):
        self._t0, self._state, self._stop = time.monotonic(), state, threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def _counts(self):
        s = self._state  # as dask's ProgressBar counts
        done = len(s["finished"])
        return done, done + sum(len(s[k]) for k in ("ready", "waiting", "running"))

    def _tick(self):
        while not self._stop.wait(self.interval):
            _line(self.stream or sys.stderr, self.label, *self._counts(), time.monotonic() - self._t0)

    def _finish(self, dsk, state, errored):
        self._stop.set()
        self._thread.join()
        if not errored:
            _line(self.stream or sys.stderr, self.label, *self._counts(), time.monotonic() - self._t0)


def local_progress(label="dask-kernels", interval=None, stream=None):
    """Context manager: progress of ``dask.compute`` on the local schedulers (a text bar on a
    terminal, plain lines elsewhere)."""
    stream = sys.stderr if stream is None else stream
    if stream.isatty() and not in_jupyter():
        from dask.diagnostics import ProgressBar

        return ProgressBar()
    if in_jupyter():
        stream = sys.stdout
    return PlainProgress(label, interval, stream)


__all__ = ["INTERVAL", "POLL", "PlainProgress", "in_jupyter", "local_progress", "wait_futures"]
