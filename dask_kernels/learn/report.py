"""What a training run shows while it runs: progress within each epoch, and the epoch table.

Within an epoch, :class:`Progress` draws a bar on a terminal (stderr is a TTY) and otherwise
prints a plain line at least every ``interval`` seconds (after a step), flushed, so a log file
shows a run that is alive. As soon as an epoch ends it prints the epoch's row of the table
(:func:`header`, :func:`row`; the header before the first row), which ``dask-kernels train``
also prints whole when the run ends.

The table shows the metric the schedule decides on in a column named after it (e.g. ``erp``),
its ``change`` against the model the epoch started from (what the schedule compares with: the
last epoch that was not reverted), the ``eta0`` the epoch trained with and the action:
"first", "keep" (improved by at least ``min_improvement``), "halve" (improved by less, or got
worse where nothing can be reverted), "revert" (got worse: the epoch is undone), followed by
", stop" on the epoch after which early stopping ended the run. :func:`legend` says so in one
line above the table.

Examples
--------
>>> from dask_kernels.learn.report import header, row
>>> r = {"epoch": 2, "rows_per_s": 1000.0, "accuracy": 0.9, "log_loss": 0.31, "erp": 0.52,
...      "metric": "erp", "baseline": 0.5, "eta0": 0.01, "action": "revert"}
>>> print(header(r)); print(row(r))
epoch     rows/s  accuracy  log_loss       erp   change      eta0  action
    2      1,000    0.9000    0.3100    0.5200   +4.00%      0.01  revert
"""

from __future__ import annotations

import sys
import time

#: Held-out metrics shown besides the deciding one, in this order (those the run computed).
SHOWN = ("accuracy", "log_loss", "erp", "mse", "r2", "inertia")
#: Seconds between two redraws of the bar on a terminal.
BAR_SECONDS = 0.2
_BAR_WIDTH = 24


def _columns(record):
    metric = record.get("metric")
    return [k for k in SHOWN if k in record and k != metric] + ([metric] if metric else [])


def header(record: dict) -> str:
    """The table's column names for records like ``record``."""
    cols = [f"{'epoch':>5}", f"{'rows/s':>10}"] + [f"{k:>9}" for k in _columns(record)]
    if record.get("metric"):
        cols.append(f"{'change':>8}")
    return " ".join(cols + [f"{'eta0':>9}", " action"])


def _change(record):
    value, base = record[record["metric"]], record.get("baseline")
    if base is None:
        return f"{'-':>8}"
    return f"{100.0 * (value - base) / abs(base):+7.2f}%" if base else f"{value - base:+8.4f}"


def action(record: dict) -> str:
    """The schedule's action of an epoch, with ", stop" if early stopping ended the run there."""
    return record.get("action", "") + (", stop" if record.get("stop") else "")


def row(record: dict) -> str:
    """One epoch's row of the table (see :func:`header`)."""
    cols = [f"{record['epoch']:5d}", f"{record['rows_per_s']:10,.0f}"]
    cols += [f"{record[k]:9.4f}" for k in _columns(record)]
    if record.get("metric"):
        cols.append(_change(record))
    eta = record.get("eta0")
    cols.append(f"{eta:9.3g}" if eta is not None else f"{'-':>9}")
    return " ".join(cols + [" " + action(record)])


def legend(metric: str, lower: bool, rule) -> str:
    """One line saying which metric decides and what each action means for the run's ``rule``
    (a :class:`~dask_kernels.learn.loop.Schedule`)."""
    better = "lower" if lower else "higher"
    pct = f"{100 * rule.min_improvement:g}%"
    parts = [f"the schedule decides on held-out {metric} ({better} is better), change against the model the "
             "epoch started from:"]
    if rule.halve:
        parts.append(f"keep = improved by >= {pct}, halve = improved by less (eta0 halved)")
    elif rule.revert:
        parts.append("keep = not worse")
    else:
        parts.append("keep = whatever the change (no schedule)")
    if rule.revert:
        parts.append("revert = worse (the epoch is undone" + (", eta0 halved)" if rule.halve else ")"))
    if rule.early_stopping:
        parts.append(f"stop = {rule.n_iter_no_change} epochs without a new best, after at least "
                     f"{rule.min_epochs} epochs")
    return parts[0] + " " + "; ".join(parts[1:])


class Progress:
    """Progress of a training run on ``sys.stderr`` (looked up at every write)."""

    def __init__(self, n_steps: int, epochs: int, interval: float, legend: str | None = None) -> None:
        self.n_steps, self.epochs, self.interval, self.legend = n_steps, epochs, float(interval), legend
        self.shown = time.perf_counter()
        self.drawn = False  # a bar is on the terminal's current line
        self.headed = False

    @staticmethod
    def _stream():
        return sys.stderr

    def _tty(self):
        isatty = getattr(self._stream(), "isatty", None)
        return bool(isatty and isatty())

    def start_epoch(self) -> None:
        self.shown = time.perf_counter()

    def step(self, epoch: int, position: int, rows: int, seconds: float) -> None:
        """After step ``position`` of epoch ``epoch`` (0-based): ``rows`` trained in ``seconds``."""
        now = time.perf_counter()
        tty = self._tty()
        if now - self.shown < (BAR_SECONDS if tty else self.interval) and not (tty and position == self.n_steps):
            return
        self.shown = now
        rate = f"{rows / max(seconds, 1e-9):,.0f} rows/s"
        if tty:
            done = _BAR_WIDTH * position // max(self.n_steps, 1)
            bar = "#" * done + "." * (_BAR_WIDTH - done)
            pct = 100.0 * position / max(self.n_steps, 1)
            print(f"\repoch {epoch + 1}/{self.epochs} [{bar}] {pct:3.0f}%  {position}/{self.n_steps} steps  "
                  f"{rows:,} rows  {rate} ", end="", file=self._stream(), flush=True)
            self.drawn = True
        else:
            print(f"epoch {epoch + 1}  step {position}/{self.n_steps}  {rows} rows  {rate}", file=self._stream(),
                  flush=True)

    def epoch_done(self, record: dict) -> None:
        """The epoch's row of the table (after the legend and header, the first time)."""
        stream = self._stream()
        if self.drawn:  # the row replaces the bar
            print("\r\x1b[K", end="", file=stream)
            self.drawn = False
        if not self.headed:
            if self.legend and record.get("metric"):
                print(self.legend, file=stream)
            print(header(record), file=stream)
            self.headed = True
        print(row(record), file=stream, flush=True)


__all__ = ["BAR_SECONDS", "Progress", "action", "header", "legend", "row"]
