"""Every private import of another library, in one place, with the versions it is tested against.

The names below are not public API of their libraries and may move between releases. Keeping
them here means one file to fix when they do, and ``TESTED`` states the version ranges the
package declares in ``pyproject.toml`` (``tests/test_compat.py`` checks that the two agree and
that the installed versions lie within them).

* scikit-learn: ``sklearn.utils._param_validation`` (the constraint objects its estimators use
  in ``_parameter_constraints``; our maps validate spec parameters with the same machinery);
  imported on first use of one of its names, so a process that only runs kernels (a Dask
  worker featurizing blocks) does not import scikit-learn and SciPy's statistics with it.
* Numba: ``numba.core.cgutils`` (LLVM code-generation helpers for the 512-bit cosine intrinsic).
* Zarr: ``zarr.core.sync.sync`` (run one store coroutine from synchronous code); imported on
  first use, so importing dask_kernels does not import Zarr.
"""

from numba.core import cgutils

from ._lazy import lazy_attributes

#: Names taken from ``sklearn.utils._param_validation`` (imported when one is first used).
_LAZY = {name: "sklearn.utils._param_validation" for name in (
    "HasMethods", "Interval", "InvalidParameterError", "StrOptions", "validate_parameter_constraints")}

#: Distribution name -> version specifier, exactly as in ``pyproject.toml``'s dependencies.
TESTED = {
    "scikit-learn": ">=1.6,<1.10",
    "numba": ">=0.60,<0.69",
    "zarr": ">=3.1.4,<3.2",
}


__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)


def zarr_sync(coroutine):
    """Run one coroutine of a Zarr store on Zarr's own event loop and return its result."""
    from zarr.core.sync import sync

    return sync(coroutine)


__all__ = ["TESTED", "HasMethods", "Interval", "InvalidParameterError", "StrOptions", "cgutils", "validate_parameter_constraints",
           "zarr_sync"]
