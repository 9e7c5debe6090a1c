"""Kernel plans: what a Dask task needs to featurize a block, without the map's class.

Rebuilding a map in a task (:func:`~dask_kernels.maps.from_spec`) imports every map class of the
package and checks the whole spec, in every worker for every spec it meets. A task only needs the
map's fitted numbers, its input contract and its Numba kernel.
:meth:`~dask_kernels.maps.base.FeatureMap.kernel_plan` returns them as a :class:`KernelPlan`: a
small picklable object, defined in a module that imports NumPy, Numba and the kernels only, whose
``validate_block`` and ``transform_block`` give exactly what the map's give (the map's own
transform runs through its plan). :func:`dask_kernels.featurize` ships it in the task graph and
its tasks use it; a map without a plan (None) is rebuilt from its spec in the task as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..blocks import validate_block

class KernelPlan:
    """A fitted map's block transform as plain numbers and a kernel (see the module docstring).

    Subclasses (one per map that has a plan, beside its kernels) set their parameters in
    ``__init__``, define :meth:`transform_block`, and list in ``key`` everything the output
    depends on.

    Parameters
    ----------
    n_features_in : int
        Width of the rows the map was fitted on.
    output_dtype : dtype
        dtype of :meth:`transform_block`.
    input_dtypes : tuple of dtypes
        dtypes the kernels accept (other input is converted to the first).
    max_abs_input : float or None
        Largest accepted ``|x|`` (None: any finite value).
    accepts_sparse : bool
        Whether the kernels take CSR input (else it is densified).
    """

    def __init__(self, n_features_in: int, output_dtype: npt.DTypeLike, *,
                 input_dtypes: Sequence[npt.DTypeLike] = (np.float64, np.float32),
                 max_abs_input: float | None = None, accepts_sparse: bool = True) -> None:
        self.n_features_in_ = int(n_features_in)
        self.output_dtype_ = np.dtype(output_dtype)
        self.input_dtypes = tuple(input_dtypes)
        self.max_abs_input = max_abs_input
        self.accepts_sparse = bool(accepts_sparse)
        self._cache = {}
        self._lock = threading.Lock()

    @property
    def key(self) -> tuple:
        """Everything the output depends on (two plans with equal keys give the same bytes)."""
        return (type(self).__name__, self.n_features_in_, self.output_dtype_.str, self.max_abs_input)

    def validate_block(self, X: Any, row_offset: int = 0, row_numbers: npt.ArrayLike | None = None) -> Any:
        """As :meth:`dask_kernels.maps.base.FeatureMap.validate_block` of the map."""
        return validate_block(X, self.n_features_in_, dtypes=self.input_dtypes, max_abs=self.max_abs_input,
                              accept_sparse=self.accepts_sparse, row_offset=row_offset, row_numbers=row_numbers)

    def transform_block(self, X: Any, row_offset: int = 0) -> np.ndarray:
        """As the map's ``transform_block``: features of a block :meth:`validate_block` returned."""
        raise NotImplementedError

    def cached(self, name: str, build: Callable[[], Any]) -> Any:
        """``build()`` once per plan object and process (parameter tables); never pickled."""
        value = self._cache.get(name)
        if value is None:
            with self._lock:
                value = self._cache.get(name)
                if value is None:
                    value = self._cache[name] = build()
        return value

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_cache"], state["_lock"]  # tables are rebuilt where the plan runs
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _cache={}, _lock=threading.Lock())

    def __dask_tokenize__(self) -> tuple:
        return self.key

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.key[1:]}"
