"""``gamma="scale"``: the bandwidth of an RBF-type map learned from all training rows.

scikit-learn's rule (``SVC(gamma="scale")``): ``gamma = 1 / (n_features * X.var())``, the
variance over all entries of the training input (for sparse input the implicit zeros count).
Maps on unit rows (NRFF, Nystroem's ``cosine_rbf``), whose kernel ``exp(-gamma (1 - cos))`` is
the Gaussian ``exp(-(gamma / 2) ||u - v||^2)`` of the unit rows ``u = x / ||x||``, apply the
rule to the rows they see: ``gamma = 2 / (n_features * u.var())``.

The variance comes from the exact sums of the entries and of their squares
(:mod:`dask_kernels.maps._exactsum`), merged over the blocks of a dask array or of partitioned
sparse rows in any tree: the fitted gamma, recorded in the spec's state as a number, is the
same bits for any chunking, and equals the in-memory fit on the same rows.
"""

from __future__ import annotations

import numbers

import dask
import numpy as np

from .._params import StrOptions
from ._exactsum import block_sums, exact_variance, merge_sums
from ._fourier import POSITIVE_FINITE
from ._partitioned import dask_rows, is_dask, is_partitions, n_features_of
from ._scaling import SCALE_MAX, apply_scale, reduce_checked

#: The constraint of a ``gamma`` that may be learned.
GAMMA_CONSTRAINT = [POSITIVE_FINITE, StrOptions({"scale"})]


def is_scale(gamma) -> bool:
    return isinstance(gamma, str) and gamma == "scale"


def gamma_sums(X, unit):
    """Exact sums of the entries and their squares of a validated block (``unit``: of its unit rows)."""
    return block_sums(X, squares=True, unit=unit)


def gamma_of_sums(sums, n_rows, n_features, unit, who):
    """The fitted gamma of exact sums over ``n_rows`` rows; ValueError naming ``who`` when the
    variance is zero (all entries equal) or the gamma is not a finite float64."""
    mean, var = exact_variance(sums, n_rows * n_features)
    where = "the unit-length training rows" if unit else "the training input"
    if var == 0:
        raise ValueError(f"{who} gamma='scale': every entry of {where} ({n_rows} x {n_features}) equals "
                         f"{float(mean)!r} (variance 0), so 1 / (n_features * variance) is undefined; give a "
                         "numeric gamma")
    try:
        gamma = float((2 if unit else 1) / (n_features * var))
    except OverflowError:
        gamma = float("inf")
    if not 0.0 < gamma < float("inf"):
        raise ValueError(f"{who} gamma='scale': the variance of {where} ({float(var)!r}) gives gamma = "
                         f"{gamma!r}, not a positive finite float64; rescale the input or give a numeric gamma")
    return gamma


def scaled_gamma_sums(X, unit, scaling):
    """:func:`gamma_sums` of a validated block after ``apply_scale(X, *scaling)`` (None: as it is)."""
    return gamma_sums(X if scaling is None else apply_scale(X, *scaling), unit)


def fit_gamma(X, unit, who, scaling=None):
    """``(gamma, n_rows, n_features)`` of a validated block, or of a dask array or
    SparsePartitions read once on the active scheduler (the same value for any chunking).
    ``scaling``: ``(shift or None, factor)`` applied to each block of the dask input first (a
    block in memory comes scaled)."""
    if not (is_dask(X) or is_partitions(X)):
        return gamma_of_sums(gamma_sums(X, unit), X.shape[0], X.shape[1], unit, who), X.shape[0], X.shape[1]
    max_abs = None
    if scaling is not None:  # one task holds the vectors, not every block's task
        scaling, max_abs = dask.delayed(scaling, pure=True, traverse=False), SCALE_MAX
    sums, n, d = reduce_checked(X, scaled_gamma_sums, merge_sums, max_abs, f"{who} gamma='scale'", unit, scaling)
    return gamma_of_sums(sums, n, d, unit, who), n, d


class ScaleGamma:
    """Mixin of RFF, NRFF and Fastfood for ``gamma="scale"``; ``_unit_rows``: the map sees unit rows.

    A numeric gamma keeps the spec as it was (no state key); "scale" records the fitted value
    as ``spec["state"]["gamma"]``.
    """

    _unit_rows = False
    #: gamma when the parameter is None (Fastfood's default)
    _default_gamma = 1.0

    @property
    def fits_partitioned(self) -> bool:
        """With gamma="scale", ``featurize`` and ``fit_incremental`` fit an unfitted clone on
        all rows (one pass for the variance) rather than on the first block."""
        return is_scale(self.gamma) or getattr(super(), "fits_partitioned", False)

    def _gamma(self):
        """The gamma in use: the parameter, or the fitted one ("scale"; None before ``fit``)."""
        if is_scale(self.gamma):
            return getattr(self, "gamma_", None)
        return self._default_gamma if self.gamma is None else float(self.gamma)

    def _check_gamma_kernel(self):
        if is_scale(self.gamma) and getattr(self, "kernel", "rbf") != "rbf":
            raise ValueError(f"gamma='scale' is scikit-learn's rule for the Gaussian kernel; kernel="
                             f"{self.kernel!r} needs a numeric gamma")

    def fit(self, X, y=None):
        """Validate parameters and input, and learn what the map learns from the rows (gamma with
        ``gamma="scale"``, the input scaling with a ``scale``).

        Parameters
        ----------
        X : array-like, sparse matrix, dask array, dask DataFrame or SparsePartitions of shape (n_samples, n_features)
            With ``gamma="scale"`` or a ``scale``, dask arrays and partitioned sparse input are
            read block by block on the active Dask scheduler (once per statistic: the scale's,
            then the variance of the scaled rows); the fitted state does not depend on the
            chunking.
        y : ignored

        Returns
        -------
        self
        """
        X = dask_rows(X)
        self.__dict__.pop("gamma_", None)  # an earlier fit's gamma is not this one's (checked, it refused every refit)
        if not ((is_dask(X) or is_partitions(X)) and self.fits_partitioned):
            return super().fit(X, y)
        self._validate_params()
        self._validate_params_extra()
        d = n_features_of(X)
        self._check_width(d)
        if int(X.shape[0]) == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape=(0, {d})) while a minimum of 1 is required.")
        self.n_features_in_ = d
        self._fit_partitioned(X)
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self._fit(None)  # the rest of the fit learns nothing from the rows
        self.is_fitted_ = True
        return self

    def _input_scaling(self):
        """``(shift or None, factor)`` applied to the rows before the variance (see
        :class:`._scaling.LearnedScale`); None: the rows as they are."""
        return None

    def _fit_partitioned(self, X):
        """Learn gamma ("scale") from all rows of a dask array or SparsePartitions."""
        if is_scale(self.gamma):
            self.gamma_ = fit_gamma(X, self._unit_rows, type(self).__name__, self._input_scaling())[0]

    def _validate_params_extra(self):
        super()._validate_params_extra()
        self._check_gamma_kernel()
        self._check_frequencies()  # a numeric gamma, before any row is read (a learned one: in _fit)

    def _fit(self, X):
        if is_scale(self.gamma) and X is not None:
            self.gamma_ = fit_gamma(X, self._unit_rows, type(self).__name__)[0]
        super()._fit(X)
        if is_scale(self.gamma):  # a numeric gamma was checked with the parameters
            self._check_frequencies()

    def _check_frequencies(self):
        """Refuse a gamma whose frequencies do not fit the map's dtype: cast, they would be inf
        and every feature NaN (RFF and NRFF, whose ``max_abs_frequency`` says their largest)."""
        w_max, dtype = getattr(self, "max_abs_frequency", None), np.dtype(self.dtype)
        if w_max is not None and not w_max <= float(np.finfo(dtype).max):
            raise ValueError(f"{type(self).__name__} gamma={self._gamma()!r}: so large that its frequencies (up to "
                             f"{w_max:.3g}) do not fit {dtype}: give a smaller gamma"
                             + (" or dtype='float64'" if dtype != np.float64 else ""))

    def _fitted_state(self):
        state = super()._fitted_state()
        if is_scale(self.gamma):  # a numeric gamma: the spec stays as it was
            state["gamma"] = float(self.gamma_)
        return state

    def _validate_state(self, state):
        rest = dict(state)
        if is_scale(self.gamma):
            g = rest.pop("gamma", None)
            if not (isinstance(g, numbers.Real) and not isinstance(g, bool) and 0 < g < float("inf")):
                raise ValueError("feature-map spec['state']['gamma']: expected the fitted gamma, a positive finite "
                                 f"number (spec['params']['gamma'] is 'scale'), got {g!r}")
        super()._validate_state(rest)

    def _set_fitted_state(self, state):
        super()._set_fitted_state(state)
        if is_scale(self.gamma):
            self.gamma_ = float(state["gamma"])
            try:  # as a fit checks the gamma it learns: else every feature is NaN (RFF, NRFF)
                self._check_frequencies()
            except ValueError as e:
                raise ValueError(f"feature-map spec['state']['gamma']: {e}") from None

