"""The ``dask-kernels`` command line (also ``dask kernels ...``).

Each module in this package is one subcommand: it defines ``help`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``. Adding a subcommand means adding one module.
"""

import argparse
import importlib
import pkgutil
import sys


def _subcommands():
    mods = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):  # _private modules are helpers, not subcommands
            mods[info.name.replace("_", "-")] = importlib.import_module(f"{__name__}.{info.name}")
    return mods


def build_parser():
    parser = argparse.ArgumentParser(
        prog="dask-kernels",
        description="Linearized-kernel features on Dask: featurize, store in Zarr, train out of core.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, mod in sorted(_subcommands().items()):
        p = sub.add_parser(name, help=mod.help, description=mod.help)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None):
    """Entry point of ``dask-kernels``."""
    args = build_parser().parse_args(argv)
    return args._run(args)


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


dask_cli = _dask_cli()


if __name__ == "__main__":
    sys.exit(main())
