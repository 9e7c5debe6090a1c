"""The contract every feature map follows: a scikit-learn transformer that is also a spec.

A map is fully described by :meth:`FeatureMap.spec`, a small JSON-serializable dict. Any process
can rebuild the identical map with :func:`dask_kernels.maps.from_spec`, so the pipeline ships
specs, never parameter matrices, and a store can always rebuild the map that wrote it.

A subclass provides:

* ``method``: the registry name (``"gcws"``, ``"rff"``, ...); a subclass registers itself when
  defined (and a map of this package is imported by :mod:`dask_kernels.maps.spec`).
* ``_fit(X)``: learn data-dependent state from validated input (most maps learn nothing).
* ``_fitted_state()`` / ``_set_fitted_state(state)``: that state as JSON-able values.
* ``n_output_features_`` and ``output_dtype_``: width and dtype of :meth:`transform_block`.
* ``transform_block(X, row_offset=0)``: the pure, row-wise block function. ``X`` is what
  :meth:`FeatureMap.validate_block` returns (C-contiguous float ndarray or canonical CSR of the
  fitted width, finite and within ``max_abs_input``), checked once by the caller (``transform``,
  ``featurize``, ``fit_incremental``, ``KernelModel.predict``), never again here. ``row_offset``
  is the global row number of ``X[0]``.
* ``max_abs_input``: the largest ``|x|`` the map's arithmetic handles without overflow (a class
  attribute or property of the fitted map; None: any finite value). State it in the docstring.
* optionally ``_validate_state(state)``: check the fitted state of a spec (lengths, dtypes,
  finiteness) before :func:`from_spec` installs it; raise ValueError naming the key.
* optionally ``expand(block)``: turn a stored block (e.g. GCWS codes) into the features a linear
  learner consumes (e.g. one-hot CSR). The default returns the block unchanged.
* optionally ``kernel_plan()``: the block transform without the class (a
  :class:`~dask_kernels.maps._plan.KernelPlan`, defined beside the kernels in a module that
  does not import the map classes), which Dask tasks run instead of rebuilding the map.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from .._estimator import Estimator, TransformerMixin, check_is_fitted, clone, is_fitted, validate_data
from ..blocks import MAX_FEATURES_IN, as_block, check_finite_rows  # noqa: F401  (re-exported for maps)
from ..blocks import validate_block as _validate_block
from ..rng import RNG_SCHEME
from ._parallel import RUNTIME_PARAMS, transform_rows

if TYPE_CHECKING:
    import scipy.sparse as sp

    from ._plan import KernelPlan

SPEC_VERSION = 1

#: method name -> class, filled as each subclass with a ``method`` is defined; read it through
#: :func:`dask_kernels.maps.registered_maps`, which imports every map of the package first
_REGISTRY = {}


class FeatureMap(TransformerMixin, Estimator):
    """Base class of all feature maps. See the module docstring for the contract.

    A scikit-learn transformer (:mod:`dask_kernels._estimator`: without importing scikit-learn)."""

    method = None
    #: dtypes the kernels accept; other input is converted to the first.
    input_dtypes = (np.float64, np.float32)
    #: whether the map accepts sparse (CSR/CSC/COO) input.
    accepts_sparse = True
    #: parameter -> value at which :meth:`spec` leaves it out and :func:`from_spec` reads a spec
    #: without it: a parameter added later keeps the specs written before it (and their stores'
    #: fingerprints) exactly as they were, even when its constructor default is a new behaviour.
    _spec_omitted = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.method is not None:
            if cls.method in _REGISTRY and _REGISTRY[cls.method] is not cls:
                raise TypeError(f"feature-map method {cls.method!r} registered twice")
            _REGISTRY[cls.method] = cls

    # -- hooks for subclasses -----------------------------------------------------------------
    def _validate_params_extra(self):
        """Check parameter values beyond what the constructor types say (raise ValueError)."""

    def _check_width(self, n_features):
        """Refuse, with a ValueError naming the parameter, its value and its bound
        (:mod:`dask_kernels.maps._bounds`), parameters that need more memory or time than the
        bounds allow for input of ``n_features`` columns. Called before anything of that size is
        allocated: by ``fit``, :func:`from_spec` and ``featurize``. Default: no such bound."""

    def _check_tables(self):
        """Refuse, with a ValueError naming the parameter, parameters whose tables do not fit the
        map's dtype for its width (``n_features_in_``) and fitted state: called once both are known,
        by the map's ``_fit`` and by :func:`from_spec`. Default: nothing to check."""

    def _fit(self, X):
        """Learn data-dependent state; ``X`` is a validated block."""

    def _fitted_state(self):
        return {}

    def _set_fitted_state(self, state):
        pass

    def _validate_state(self, state):
        """Check a spec's ``state`` (n_features_in_ is set) before it is installed; raise
        ValueError naming the key (``spec['state'][...]``). Default: no state."""
        if state:
            raise ValueError(f"feature-map spec['state']: {type(self).__name__} has no fitted state, got keys "
                             f"{sorted(state)}")

    def transform_block(self, X: np.ndarray | sp.csr_matrix, row_offset: int = 0) -> np.ndarray:
        raise NotImplementedError

    def expand(self, block: np.ndarray) -> np.ndarray | sp.csr_matrix:
        """Features for a linear learner from a stored block (identity by default)."""
        return block

    def kernel_plan(self) -> KernelPlan | None:
        """This fitted map's ``validate_block`` and ``transform_block`` as a light, picklable
        object that a Dask worker runs without the map classes (see
        :mod:`dask_kernels.maps._plan`), or None (the default): tasks rebuild the map from its spec.

        Examples
        --------
        >>> import numpy as np
        >>> from dask_kernels import GCWS
        >>> X = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]])
        >>> gcws = GCWS(n_components=4).fit(X)
        >>> plan = gcws.kernel_plan()
        >>> bool((plan.transform_block(plan.validate_block(X)) == gcws.transform(X)).all())
        True
        """
        return None

    # -- scikit-learn API ---------------------------------------------------------------------
    #: Largest accepted ``|x|`` (None: any finite value); see :meth:`validate_block`.
    max_abs_input = None

    def validate_block(self, X: Any, row_offset: int = 0,
                       row_numbers: np.ndarray | None = None) -> np.ndarray | sp.csr_matrix:
        """Check a block of rows against the input contract and return it ready for
        :meth:`transform_block`.

        Refuses complex, object and string data, a width other than ``n_features_in_``, sparse
        input with malformed structure (indices outside ``[0, n_features_in_)``, an ``indptr``
        that decreases), NaN, infinity and values beyond ``max_abs_input``. Unsorted or repeated
        CSR indices are valid SciPy and are sorted and summed (in a copy).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_rows, n_features)
        row_offset : int, default=0
            Global row number of ``X[0]``, for messages.
        row_numbers : array of int, optional
            Global row number of each row (a block gathered from scattered rows).

        Returns
        -------
        C-contiguous ndarray of a dtype in ``input_dtypes``, or CSR with sorted, unique indices

        Raises
        ------
        ValueError
            Naming the global row and column of the first offending value or index.
        """
        return _validate_block(X, int(self.n_features_in_), dtypes=self.input_dtypes, max_abs=self.max_abs_input,
                               accept_sparse=self.accepts_sparse, row_offset=row_offset, row_numbers=row_numbers)

    def _validate_input(self, X, reset):
        # scikit-learn's bookkeeping (feature names, n_features_in_, its messages); then the contract
        X = validate_data(self, X, reset=reset, accept_sparse=("csr", "csc", "coo") if self.accepts_sparse else False,
                          dtype=self.input_dtypes)
        if reset:
            if self.n_features_in_ > MAX_FEATURES_IN:
                raise ValueError(f"X has {self.n_features_in_} features; at most {MAX_FEATURES_IN} are supported")
            self._check_width(self.n_features_in_)
        return self.validate_block(X)

    def fit(self, X: Any, y: Any = None) -> FeatureMap:
        """Validate parameters and input, and learn any data-dependent state.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        self._validate_params()
        self._validate_params_extra()
        X = self._validate_input(X, reset=True)
        self._fit(X)
        self.is_fitted_ = True
        return self

    def transform(self, X: Any) -> np.ndarray | sp.csr_matrix:
        """Map rows of ``X`` to features.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray or sparse matrix of shape ``(n_samples, n_output_features_)``, or, for a map built
        with ``output="onehot"`` (GCWS, CoRE), :meth:`expand` of it: the features a linear
        learner consumes.

        Notes
        -----
        As scikit-learn's transformers, this returns the features in memory: a dask array is
        computed. For a lazy dask array of features, or features written to a store, use
        :func:`~dask_kernels.featurize`.
        """
        check_is_fitted(self)
        X_checked = self._validate_input(X, reset=False)
        out = transform_rows(self.transform_block, X_checked, getattr(self, "n_jobs", None))
        return self._output(self.expand(out) if getattr(self, "output", None) == "onehot" else out, X)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Output feature names ``<method>0, <method>1, ...``; ``input_features``, if given, must
        be the input's (scikit-learn's rule: ``feature_names_in_`` if fitted with names, else
        ``n_features_in_`` of them)."""
        check_is_fitted(self)
        if input_features is not None:
            given, known = np.asarray(input_features, dtype=object), getattr(self, "feature_names_in_", None)
            if known is not None and not np.array_equal(given, known):
                raise ValueError("input_features is not equal to feature_names_in_")
            if given.ndim != 1 or given.shape[0] != self.n_features_in_:
                raise ValueError(f"input_features should have length equal to number of features "
                                 f"({self.n_features_in_}), got {given.shape[0] if given.ndim else 0}")
        return np.asarray([f"{self.method}{i}" for i in range(self.n_output_features_)], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.accepts_sparse
        tags.transformer_tags.preserves_dtype = []
        return tags

    # -- spec ---------------------------------------------------------------------------------
    def spec(self) -> dict[str, Any]:
        """The JSON-serializable description that rebuilds this fitted map exactly."""
        check_is_fitted(self)
        return {
            "spec_version": SPEC_VERSION,
            "rng_scheme": RNG_SCHEME,
            "method": self.method,
            "params": _jsonable({k: v for k, v in self.get_params(deep=False).items()
                                 if k not in RUNTIME_PARAMS and (k not in self._spec_omitted
                                                                 or v != self._spec_omitted[k])}),
            "n_features_in": int(self.n_features_in_),
            "n_output_features": int(self.n_output_features_),
            "output_dtype": np.dtype(self.output_dtype_).str,
            "state": _jsonable(self._fitted_state()),
        }

    def spec_json(self) -> str:
        """:meth:`spec` as canonical JSON text (sorted keys): stable for fingerprints."""
        return json.dumps(self.spec(), sort_keys=True, separators=(",", ":"))


def fits_on_all_rows(feature_map) -> bool:
    """Whether :func:`ensure_fitted` will read all rows: an unfitted map that learns from all the
    data (``fits_partitioned``). A fitted map reads nothing."""
    return getattr(feature_map, "fits_partitioned", False) and not is_fitted(feature_map)


def ensure_fitted(feature_map, first_rows, all_rows=None):
    """The one rule for an unfitted map handed to ``featurize`` or ``fit_incremental``.

    A fitted map is returned as it is. An unfitted one is not changed: a clone is fitted and
    returned (it ends up in the returned store or model, ``model.feature_map``). The clone is
    fitted on ``all_rows`` if the map learns from all the data (``fits_partitioned``, e.g.
    Nystroem) and they are given, else on ``first_rows()``, the first block that has rows.
    """
    if is_fitted(feature_map):
        return feature_map
    fits_all = all_rows is not None and fits_on_all_rows(feature_map)
    return clone(feature_map).fit(all_rows if fits_all else first_rows())


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"cannot put {type(obj).__name__} into a feature-map spec")
