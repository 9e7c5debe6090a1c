"""The contract every feature map follows: a scikit-learn transformer that is also a spec.

A map is fully described by :meth:`FeatureMap.spec`, a small JSON-serializable dict. Any process
can rebuild the identical map with :func:`dask_kernels.maps.from_spec`, so the pipeline ships
specs, never parameter matrices, and a store can always rebuild the map that wrote it.

A subclass provides:

* ``method``: the registry name (``"gcws"``, ``"rff"``, ...); subclasses register themselves.
* ``_fit(X)``: learn data-dependent state from validated input (most maps learn nothing).
* ``_fitted_state()`` / ``_set_fitted_state(state)``: that state as JSON-able values.
* ``n_output_features_`` and ``output_dtype_``: width and dtype of :meth:`transform_block`.
* ``transform_block(X, row_offset=0)``: the pure, row-wise block function. ``X`` is a validated
  C-contiguous ndarray or a CSR matrix with sorted, de-duplicated indices: finite and of the
  fitted width, checked once by the caller (``transform``, ``featurize``, ``fit_incremental``),
  never again here. ``row_offset`` is the global row number of ``X[0]``.
* optionally ``expand(block)``: turn a stored block (e.g. GCWS codes) into the features a linear
  learner consumes (e.g. one-hot CSR). The default returns the block unchanged.
"""

import json

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..blocks import as_block, check_finite_rows  # noqa: F401  (re-exported for maps)
from ..rng import RNG_SCHEME
from ._parallel import RUNTIME_PARAMS, transform_rows

SPEC_VERSION = 1

_REGISTRY = {}


def registered_maps():
    """Names of all registered feature-map methods, mapped to their classes."""
    return dict(_REGISTRY)


class FeatureMap(TransformerMixin, BaseEstimator):
    """Base class of all feature maps. See the module docstring for the contract."""

    method = None
    #: dtypes the kernels accept; other input is converted to the first.
    input_dtypes = (np.float64, np.float32)
    #: whether the map accepts sparse (CSR/CSC/COO) input.
    accepts_sparse = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.method is not None:
            if cls.method in _REGISTRY and _REGISTRY[cls.method] is not cls:
                raise TypeError(f"feature-map method {cls.method!r} registered twice")
            _REGISTRY[cls.method] = cls

    # -- hooks for subclasses -----------------------------------------------------------------
    def _validate_params_extra(self):
        """Check parameter values beyond what the constructor types say (raise ValueError)."""

    def _fit(self, X):
        """Learn data-dependent state; ``X`` is a validated block."""

    def _fitted_state(self):
        return {}

    def _set_fitted_state(self, state):
        pass

    def transform_block(self, X, row_offset=0):
        raise NotImplementedError

    def expand(self, block):
        """Features for a linear learner from a stored block (identity by default)."""
        return block

    # -- scikit-learn API ---------------------------------------------------------------------
    def _validate_input(self, X, reset):
        X = validate_data(
            self,
            X,
            reset=reset,
            accept_sparse=("csr", "csc", "coo") if self.accepts_sparse else False,
            dtype=list(self.input_dtypes),
            ensure_all_finite=False,
            order="C",
        )
        X = as_block(X, self.input_dtypes)
        check_finite_rows(X)
        return X

    def fit(self, X, y=None):
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

    def transform(self, X):
        """Map rows of ``X`` to features.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features_in_)

        Returns
        -------
        ndarray or sparse matrix of shape (n_samples, n_output_features_)
        """
        check_is_fitted(self)
        X = self._validate_input(X, reset=False)
        return transform_rows(self.transform_block, X, getattr(self, "n_jobs", None))

    def get_feature_names_out(self, input_features=None):
        """Output feature names ``<method>0, <method>1, ...``."""
        check_is_fitted(self)
        return np.asarray([f"{self.method}{i}" for i in range(self.n_output_features_)], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.accepts_sparse
        tags.transformer_tags.preserves_dtype = []
        return tags

    # -- spec ---------------------------------------------------------------------------------
    def spec(self):
        """The JSON-serializable description that rebuilds this fitted map exactly."""
        check_is_fitted(self)
        return {
            "spec_version": SPEC_VERSION,
            "rng_scheme": RNG_SCHEME,
            "method": self.method,
            "params": _jsonable({k: v for k, v in self.get_params(deep=False).items() if k not in RUNTIME_PARAMS}),
            "n_features_in": int(self.n_features_in_),
            "n_output_features": int(self.n_output_features_),
            "output_dtype": np.dtype(self.output_dtype_).str,
            "state": _jsonable(self._fitted_state()),
        }

    def spec_json(self):
        """:meth:`spec` as canonical JSON text (sorted keys): stable for fingerprints."""
        return json.dumps(self.spec(), sort_keys=True, separators=(",", ":"))


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


def from_spec(spec):
    """Rebuild a fitted feature map from :meth:`FeatureMap.spec` (a dict or JSON text)."""
    if isinstance(spec, str):
        spec = json.loads(spec)
    if spec.get("rng_scheme") != RNG_SCHEME:
        raise ValueError(
            f"spec uses random-number scheme {spec.get('rng_scheme')!r}, this version of "
            f"dask_kernels implements {RNG_SCHEME!r}: features would differ"
        )
    method = spec.get("method")
    if method not in _REGISTRY:
        raise ValueError(f"unknown feature-map method {method!r}; known: {sorted(_REGISTRY)}")
    cls = _REGISTRY[method]
    fmap = cls(**spec["params"])
    fmap._validate_params()
    fmap._validate_params_extra()
    fmap.n_features_in_ = int(spec["n_features_in"])
    fmap._set_fitted_state(spec.get("state", {}))
    fmap.is_fitted_ = True
    if int(fmap.n_output_features_) != int(spec["n_output_features"]):
        raise ValueError("spec's output width does not match the rebuilt map")
    return fmap
