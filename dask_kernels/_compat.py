"""Every private name of another library the package uses, in one place, with the versions it is
tested against.

The names below are not public API of their libraries and may move between releases. Keeping
them here means one file to fix when they do. ``TESTED`` states the version ranges the package
declares in ``pyproject.toml``; ``tests/test_compat.py`` checks that the two agree, that the
installed versions lie within them and that every name and attribute listed here
(:data:`PRIVATE_ATTRIBUTES` too) exists; CI runs it at the lowest declared versions and the
latest ones.

Imported from here (each on first use, :mod:`dask_kernels._lazy`, so a process that only runs
kernels imports neither scikit-learn nor dask's graph modules through this file):

* scikit-learn: ``sklearn.utils._param_validation`` (the constraint objects its estimators use
  in ``_parameter_constraints``: :mod:`dask_kernels._params` hands it the parameters it does not
  accept, so the errors are scikit-learn's) and ``sklearn.utils._set_output``'s
  ``_wrap_data_with_container`` (:func:`wrap_data_with_container`: ``set_output`` of the maps).
* dask: ``dask.highlevelgraph.HighLevelGraph`` (graphs built layer by layer: a store's blocks,
  featurize's write tasks, read_parquet's read layers, the similarity join's passes) and ``dask.blockwise`` (``Blockwise``,
  ``blockwise`` with its ``_data_producer`` flag, ``BlockwiseDepDict``: read_parquet's read
  layers, which dask fuses into the task that consumes a block).
* distributed: ``distributed.diagnostics.progressbar.TextProgressBar`` (its ``_draw_bar`` and
  ``_draw_stop`` hooks draw the plain progress lines of :mod:`dask_kernels._progress`).
* Numba: ``numba.core.cgutils`` (LLVM code-generation helpers for the 512-bit intrinsics).
* Zarr: ``zarr.core.sync.sync`` (run one store coroutine from synchronous code).

Used as attributes of public objects (:data:`PRIVATE_ATTRIBUTES`): scikit-learn's
``BaseEstimator._validate_params`` and estimators' ``_parameter_constraints`` (the maps and the
selector validate their parameters as scikit-learn's estimators do); dask's ``Array._meta``,
``Blockwise.indices``, ``.io_deps``, ``.task`` and ``BlockwiseDepDict.mapping``
(read_parquet finds and replaces its read layers); ``dask.callbacks.Callback._start_state`` /
``._finish`` and the local scheduler's state dict (``finished``, ``ready``, ``waiting``,
``running``: the plain progress lines count them); argparse's ``ArgumentParser._subparsers``
(a job file's steps parsed by the command line's parser).

Version differences handled here: :func:`csv_float_options` (pandas before 3.0).
"""

from numba.core import cgutils

from ._lazy import lazy_attributes

#: Private names of other libraries, imported from their modules on first use.
_LAZY = {
    "HasMethods": "sklearn.utils._param_validation",
    "Interval": "sklearn.utils._param_validation",
    "InvalidParameterError": "sklearn.utils._param_validation",
    "StrOptions": "sklearn.utils._param_validation",
    "validate_parameter_constraints": "sklearn.utils._param_validation",
    "HighLevelGraph": "dask.highlevelgraph",
    "Blockwise": "dask.blockwise",
    "BlockwiseDepDict": "dask.blockwise",
    "blockwise": "dask.blockwise",
    "TextProgressBar": "distributed.diagnostics.progressbar",
}

#: ``"module:object"`` -> private attributes the package uses on it (see the module docstring).
PRIVATE_ATTRIBUTES = {
    "sklearn.base:BaseEstimator": ("_validate_params",),
    "sklearn.linear_model:SGDClassifier": ("_parameter_constraints",),
    "dask.array:Array": ("_meta",),
    "dask.blockwise:Blockwise": ("indices", "io_deps", "task"),
    "dask.blockwise:BlockwiseDepDict": ("mapping",),
    "dask.callbacks:Callback": ("_start_state", "_finish"),
    "distributed.diagnostics.progressbar:TextProgressBar": ("_draw_bar", "_draw_stop", "elapsed"),
    "argparse:ArgumentParser": ("_subparsers",),
}

#: Distribution name -> version specifier, exactly as in ``pyproject.toml``'s dependencies.
TESTED = {
    "scikit-learn": ">=1.6,<1.10",
    "numba": ">=0.60,<0.69",
    "zarr": ">=3.1.6,<3.2",
    "dask": ">=2025.5",
    "distributed": ">=2025.5",
}


__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)


def csv_float_options() -> dict:
    """``read_csv`` options that parse every float exactly (a value written with 17 digits reads
    back as the same double). pandas before 3.0 parses with its "high" precision converter by
    default, which can be one unit in the last place off; from 3.0 the default is exact and
    ``float_precision`` is deprecated."""
    import pandas

    return {} if int(pandas.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}


def wrap_data_with_container(result, X, transformer):
    """``transformer.transform``'s ``result`` in the container its ``set_output`` or
    scikit-learn's ``transform_output`` config asks for (``sklearn.utils._set_output``, the
    wrapping scikit-learn applies to its own transformers' ``transform``)."""
    from sklearn.utils._set_output import _wrap_data_with_container

    return _wrap_data_with_container("transform", result, X, transformer)


def zarr_sync(coroutine):
    """Run one coroutine of a Zarr store on Zarr's own event loop and return its result."""
    from zarr.core.sync import sync

    return sync(coroutine)


__all__ = ["PRIVATE_ATTRIBUTES", "TESTED", "cgutils", "csv_float_options", "wrap_data_with_container", "zarr_sync",
           *_LAZY]
