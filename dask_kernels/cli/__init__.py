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


if __name__ == "__main__":
    sys.exit(main())
