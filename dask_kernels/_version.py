"""The installed package's version, in a module of its own so every layer can import it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dask-kernels")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+source"
