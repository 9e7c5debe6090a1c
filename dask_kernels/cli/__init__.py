"""The ``dask-kernels`` command line (also ``dask kernels ...``).

Each public module in this package is one subcommand: it defines ``help`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``. Adding a subcommand means adding one module
and its name in :func:`_subcommands` (``tests/test_imports.py`` checks that none is missing).
"""

import argparse
import logging
import sys

from ._exit import arm, exit_with

arm()  # first: its exit handler must run after those of everything a command imports

from ._args import USER_ERRORS, UsageError, debug_on, input_where, output_where, user_message  # noqa: E402


def _subcommands():
    """Subcommand name -> its module (imported when the parser is built, not with this package:
    a LocalCluster's worker server imports :mod:`dask_kernels.cli._forkserver` without them)."""
    from . import demo, featurize, info, predict, run, score, select, similar, train

    return {m.__name__.rpartition(".")[2].replace("_", "-"): m
            for m in (demo, featurize, info, predict, run, score, select, similar, train)}


#: What an interrupted command leaves, by command (printed after "interrupted").
INTERRUPTED = {
    "featurize": "; the store keeps its finished blocks: re-run the same command to resume",
    "run": "; a store keeps its finished blocks: re-run the same job to resume",
    "train": "; with --checkpoint, re-running the same command resumes from the last checkpoint",
}


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line naming the flag (argparse prints the whole usage block)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser():
    parser = _Parser(
        prog="dask-kernels",
        description="Linearized-kernel features on Dask: featurize, store in Zarr, train out of core.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"dask-kernels {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of errors and the workers' logs of a local cluster "
                             "(also: DASK_KERNELS_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, mod in sorted(_subcommands().items()):
        p = sub.add_parser(name, help=mod.help, description=mod.help)
        mod.add_arguments(p)
        # _build_parser: `run` parses its job's steps with this same parser (a subcommand does
        # not import the package that lists it)
        p.set_defaults(_run=mod.run, _build_parser=build_parser)
    return parser


def main(argv=None):
    """Entry point of ``dask-kernels``.

    User errors (bad paths, values, incompatible stores, refused output paths, unreachable
    schedulers) print one line ``dask-kernels <command>: error: ...`` to stderr and return 1;
    ``--debug`` or ``DASK_KERNELS_DEBUG=1`` shows the traceback instead.

    Run as a program (``argv`` None), the process then ends without interpreter teardown
    (:mod:`dask_kernels.cli._exit`), and SIGTERM (``kill``, ``timeout``, Kubernetes stopping a
    pod) stops a command as Ctrl-C does: its temporaries removed, its cluster closed, one line
    saying what was kept, exit status 143.
    """
    if argv is None:
        _terminate_as_interrupt()
    status = _main(argv)
    return exit_with(status) if argv is None else status


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt: what a command cleans
    up on Ctrl-C (temporary outputs, its LocalCluster) it cleans up on SIGTERM too."""


def _terminate_as_interrupt():
    import signal

    def terminate(signum, frame):
        raise Terminated()

    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:  # a handler someone set is theirs
        signal.signal(signal.SIGTERM, terminate)


class _Stderr(logging.StreamHandler):
    """A handler writing to ``sys.stderr`` as it is when a message comes (not when the handler was
    made: ``main`` may run many times in one process, each with its own stderr)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # StreamHandler.__init__ sets it; the property always looks it up
        pass


def _log_to_stderr(args):
    """The package's diagnostics (logger ``dask_kernels``) as plain lines on stderr: INFO and above
    (the dashboard's address, what a command chose for you), DEBUG with ``--debug``. Results go to
    stdout; progress and diagnostics to stderr, so a log file of stderr shows them in order."""
    logger = logging.getLogger("dask_kernels")
    logger.setLevel(logging.DEBUG if debug_on(args) else logging.INFO)
    if not any(getattr(h, "_dask_kernels_cli", False) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter(f"dask-kernels {args.command}: %(message)s"))
        handler._dask_kernels_cli = True
        logger.addHandler(handler)
    else:
        for h in logger.handlers:
            if getattr(h, "_dask_kernels_cli", False):
                h.setFormatter(logging.Formatter(f"dask-kernels {args.command}: %(message)s"))


def _main(argv):
    args = build_parser().parse_args(argv)
    _log_to_stderr(args)
    try:
        return args._run(args)
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: what was kept and how to go on, not the stack of a wait
        if debug_on(args):
            raise
        what = "terminated" if isinstance(e, Terminated) else "interrupted"
        print(f"dask-kernels {args.command}: {what}{INTERRUPTED.get(args.command, '')}", file=sys.stderr)
        return 143 if isinstance(e, Terminated) else 130  # 128 + SIGTERM or SIGINT, as a shell reports it
    except USER_ERRORS as e:
        if debug_on(args):
            raise
        if isinstance(e, BrokenPipeError) and _reader_gone(sys.stdout):
            return 141  # 128 + SIGPIPE, as a shell reports a writer whose reader left (`| head`): no error
        print(f"dask-kernels {args.command}: error: {input_where(args, e)}{output_where(args, e)}"
              f"{user_message(e)}", file=sys.stderr)
        return 1


def _reader_gone(stream) -> bool:
    """Whether ``stream`` is a pipe whose reading end is closed (``dask-kernels info m.dk | head``
    after head has its lines): Linux polls such a pipe as an error."""
    import select

    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLERR)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll (Windows), or no file descriptor
        return False


def _dask_cli():
    """``dask kernels ...``: the same command line under dask's own CLI (click is dask's)."""
    import click

    @click.command(
        name="kernels",
        help="Linearized-kernel features on Dask (dask-kernels). Run 'dask kernels --help'.",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def kernels(args):
        sys.exit(main(list(args)))

    return kernels


def __getattr__(name: str):
    """``dask_cli`` (the entry point dask's CLI loads) built when first asked for: importing
    click for it on every ``dask-kernels`` start cost 20-30 ms."""
    if name == "dask_cli":
        globals()["dask_cli"] = command = _dask_cli()
        return command
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
