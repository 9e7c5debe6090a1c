"""Per-feature input scaling learned in ``fit`` (the ``scale=`` of GCWS, CoRE, RFF, NRFF,
Fastfood and Nystroem), without scikit-learn.

GMM, the kernel GCWS linearizes, is invariant to scaling a whole row but not to per-feature
offsets and scales: a feature measured in large units dominates every ``min``/``max`` sum; a
Gaussian kernel's distance is as dominated by it. So a map with a scale rule learns per-feature
statistics and maps every row through

    x' = (x - shift) * factor        (dense; clipped to +-2**1022)
    x' = x * factor                  (sparse, "maxabs": zeros stay zeros)

Rules:

* ``"minmax"``: each column's training range onto [-1, 1] (Li, "Linearized GMM kernels and
  normalized random Fourier features", KDD 2017, scales the data so): ``shift`` the middle of the
  range, ``factor`` one over half of it.
* ``"maxabs"``: each column divided by its largest training ``|x|``, no shift (sparse input).
* ``"standard"``: each column centred on its training mean and divided by its standard
  deviation (scikit-learn's ``StandardScaler``, population deviation): a column's few extreme
  values do not squeeze its other values into a small part of [-1, 1] as they do under
  "minmax". The GMM kernel then splits each column at its mean, not at the middle of its range.

Two parameter values choose a rule by the training rows' density: ``"auto"`` is "minmax" for
dense input with more than half of its entries nonzero, else "maxabs"; ``"auto_standard"`` is
"standard" there, else "maxabs". Centring rows of mostly zeros (image backgrounds, one-hot or
count columns stored densely) would turn every zero into a nonzero, which costs GCWS time in
proportion and gives the zeros' offset a weight in the kernel. The spec keeps the rule chosen.

The statistics are the columns' minimum and maximum (or largest ``|x|``): exact values of the
data, so merging per-block statistics in any order and any chunking gives the same bits, unlike
a floating-point mean or variance; "standard" sums the columns and their squares exactly
(:mod:`._exactsum`), so its mean and deviation are the same bits for any chunking too. A column
whose range is zero (or below ``2**-1000``; for "maxabs", all zero; for "standard", a deviation
below ``2**-1000``) gets ``factor = 1`` (as scikit-learn's scalers do): it is constant on the
training rows, carries no information there, and is mapped to 0 by the shift.
"""

from __future__ import annotations

import functools
import logging

import numpy as np
import scipy.sparse as sp
from numba import njit

from .._params import StrOptions
from ..blocks import validate_block
from ._bounds import MAX_CENTERED_FEATURES, refuse_above
from ._exactsum import block_sums, exact_moments, merge_sums
from ._parallel import transform_rows
from ._partitioned import delayed_blocks, is_partitions, n_features_of, reduce_blocks

#: Largest ``|x|`` accepted with a scale rule, and the bound its results are clipped to, so that
#: ``x - shift`` and the kernel's logarithms stay finite (the same bound as GCWS's center).
SCALE_MAX = 2.0**1022
#: A range below this is treated as zero: its reciprocal would overflow.
_TINY = 2.0**-1000
RULES = ("minmax", "maxabs", "standard")
#: The parameter values that choose a rule by the density of dense input: the rule for rows with
#: more than ``AUTO_MAX_DENSITY`` of their entries nonzero ("maxabs" below it, and on sparse input).
AUTO_RULES = {"auto": "minmax", "auto_standard": "standard"}
logger = logging.getLogger(__name__)
#: ``scale="auto"`` and ``"auto_standard"`` on dense input: "maxabs" when at most this fraction of
#: the entries is nonzero.
AUTO_MAX_DENSITY = 0.5


def block_stats(X, rule):
    """Statistics of a validated block under ``rule`` (a rule or a key of ``AUTO_RULES``), a dict:
    the columns' ``"min"`` and ``"max"`` ("minmax"; sparse input counting its implicit zeros),
    ``"max_abs"`` ("maxabs"; of the stored values of sparse input), their exact ``"sums"`` and sums
    of squares and the ``"rows"`` ("standard", :func:`._exactsum.block_sums`); an automatic rule
    gathers what its dense rule needs, the extremes (for "maxabs") and the exact counts of
    ``"nonzeros"`` and ``"entries"``. None for a block without rows."""
    if X.shape[0] == 0:
        return None
    out = {}
    dense_rule = AUTO_RULES.get(rule, rule)
    if dense_rule == "standard":
        out["sums"] = block_sums(X if sp.issparse(X) else np.ascontiguousarray(X), by_column=True, squares=True)
        out["rows"] = int(X.shape[0])
    if rule == "maxabs":
        a = abs(X).max(axis=0)
        out["max_abs"] = np.asarray(a.toarray() if sp.issparse(a) else a, dtype=np.float64).ravel()
    if rule == "minmax" or rule in AUTO_RULES:
        lo, hi = X.min(axis=0), X.max(axis=0)  # sparse: counting the implicit zeros
        if sp.issparse(X):
            lo, hi = lo.toarray(), hi.toarray()
        out["min"], out["max"] = np.asarray(lo, np.float64).ravel(), np.asarray(hi, np.float64).ravel()
    if rule in AUTO_RULES:
        out["nonzeros"] = int(X.count_nonzero() if sp.issparse(X) else np.count_nonzero(X))
        out["entries"] = int(X.shape[0]) * int(X.shape[1])
    return out


def checked_block(stats, X, row_offset, n_features, max_abs, *args):
    """``stats(X, *args)`` of a raw block that passes the input check (``|x| <= max_abs``),
    else None: such a block is left to the transform, whose error names its file and row (the
    reader's, which a task of this pass does not know)."""
    try:
        X = validate_block(X, n_features, dtypes=(np.float64, np.float32), max_abs=max_abs, accept_sparse=True,
                           row_offset=row_offset)
    except ValueError as e:
        logger.debug("statistics: block at row %d left out: %s", row_offset, e)
        return None
    return stats(X, *args)


def raise_first_bad_block(blocks, n_features, max_abs=SCALE_MAX):
    """Raise the input check's own error (row and column, an ``InputValueError`` the command line
    prefixes with its file) for the first of ``(block, row_offset)`` that fails it: when no block
    passes, the statistics pass is where the user first hears of the bad rows."""
    for block, row_offset in blocks:
        validate_block(block.compute(), n_features, dtypes=(np.float64, np.float32), max_abs=max_abs,
                       accept_sparse=True, row_offset=row_offset)


def reduce_checked(X, stats, merge, max_abs, what, *args):
    """``(merge of stats(block, *args), n_rows, n_features)`` over the blocks of a dask array or
    SparsePartitions that pass the input check (one pass, a merge tree: ``merge`` must not
    depend on the grouping). No rows, or no block that passes: ValueError (the input check's
    own, naming the row, when there is a bad block), ``what`` naming the statistic."""
    result, n, d = reduce_blocks(X, functools.partial(checked_block, stats), merge, n_features_of(X), max_abs, *args)
    if n == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape=(0, {d})) while a minimum of 1 is required.")
    if result is None:
        blocks, offsets, _ = delayed_blocks(X)
        raise_first_bad_block(zip(blocks, offsets), d, max_abs)
        raise ValueError(f"{what}: no block of the input passes the input check (NaN, infinity, |x| > "
                         f"{max_abs} or malformed rows); transforming it names the first bad row")
    return result, n, d


#: How each statistic of :func:`block_stats` merges over blocks: exactly, so in any order.
_MERGES = {"min": np.minimum.reduce, "max": np.maximum.reduce, "max_abs": np.maximum.reduce,
           "sums": lambda parts: merge_sums(*parts), "rows": sum, "nonzeros": sum, "entries": sum}


def merge_stats(*parts):
    """The statistics of consecutive blocks merged (elementwise min of the minima, max of the
    maxima, exact sums and counts added): exact, so the same for any order and grouping."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    return {key: _MERGES[key]([p[key] for p in parts]) for key in parts[0]}


def resolve(rule, stats):
    """``(rule, stats)`` to keep: an automatic rule (dense input) becomes "maxabs" when at most
    ``AUTO_MAX_DENSITY`` of the entries are nonzero (centering would turn the zeros of e.g.
    image backgrounds into nonzeros that dominate the kernel), else its dense rule; "minmax"
    keeps the extremes, "maxabs" the largest ``|x|``, "standard" the columns' means and
    deviations."""
    if rule in AUTO_RULES:
        if stats["nonzeros"] <= AUTO_MAX_DENSITY * stats["entries"]:
            return "maxabs", (np.maximum(np.abs(stats["min"]), np.abs(stats["max"])),)
        rule = AUTO_RULES[rule]
    if rule == "maxabs":
        return rule, (stats["max_abs"],)
    if rule == "standard":
        return rule, standard_stats(stats["sums"], stats["rows"])
    return rule, (stats["min"], stats["max"])


def standard_stats(sums, n_rows):
    """``(mean, std)`` of the columns from their exact sums and sums of squares over ``n_rows``
    rows: the correctly rounded mean, and the square root of the correctly rounded population
    variance (exact, so a function of the rows only, not of their chunking)."""
    means, variances = exact_moments(sums, n_rows)
    return (np.array([float(m) for m in means], dtype=np.float64),
            np.sqrt(np.array([float(max(v, 0)) for v in variances], dtype=np.float64)))


def shift_factor(rule, stats):
    """``(shift or None, factor)`` of the statistics, float64 (a zero range gets factor 1)."""
    if rule == "standard":
        mean, std = stats
        return mean, np.where(std > _TINY, 1.0 / np.maximum(std, _TINY), 1.0)
    if rule == "maxabs":
        (m,) = stats
        return None, np.where(m > _TINY, 1.0 / np.maximum(m, _TINY), 1.0)
    lo, hi = stats
    half = 0.5 * hi - 0.5 * lo  # halves first: hi - lo may overflow
    return 0.5 * lo + 0.5 * hi, np.where(half > _TINY, 1.0 / np.maximum(half, _TINY), 1.0)


def fitted_shift_factor(state, n_features):
    """:func:`shift_factor` of a fitted map's ``scale_`` (None: no scaling)."""
    if state is None:
        return None
    return shift_factor(*state_to_stats(state, int(n_features), "scale_"))


def apply_scale(X, shift, factor):
    """A validated block scaled as the module docstring says (a new array; CSR stays CSR
    when there is no shift, else it is densified)."""
    if shift is None and sp.issparse(X):
        out = X.astype(np.float64)  # a copy with the same structure
        out.data = out.data * factor[out.indices]
        out.eliminate_zeros()  # an underflowed value is no entry, as the kernels expect
        return out
    if sp.issparse(X):
        X = X.toarray()
    out = X - shift if shift is not None else X.astype(np.float64)
    out *= factor
    return np.clip(out, -SCALE_MAX, SCALE_MAX, out=out)


def stats_to_state(rule, stats):
    """The spec's ``state['scale']``: the rule and its statistics as lists."""
    if rule == "maxabs":
        return {"rule": rule, "max_abs": stats[0].tolist()}
    if rule == "standard":
        return {"rule": rule, "mean": stats[0].tolist(), "std": stats[1].tolist()}
    return {"rule": rule, "min": stats[0].tolist(), "max": stats[1].tolist()}


def _numbers(values):
    """Whether ``values`` is a list of JSON numbers (ints or floats, not bools) or a numeric array."""
    if isinstance(values, np.ndarray):
        return values.dtype.kind in "iuf"
    return isinstance(values, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values)


def state_to_stats(state, n_features, key):
    """``(rule, stats)`` of a spec's ``state['scale']``, checked (ValueError naming ``key``)."""
    if not isinstance(state, dict) or state.get("rule") not in RULES:
        raise ValueError(f"{key}: expected an object with 'rule' in {list(RULES)}, got {state!r}")
    rule = state["rule"]
    names = {"maxabs": ("max_abs",), "standard": ("mean", "std")}.get(rule, ("min", "max"))
    if set(state) != {"rule", *names}:
        raise ValueError(f"{key}: rule {rule!r} has the keys {sorted(('rule', *names))}, got {sorted(state)}")
    stats = []
    for name in names:
        if not _numbers(state[name]):  # np.asarray(..., float64) would read "1" and true as 1.0
            raise ValueError(f"{key}[{name!r}]: expected a list of numbers (not strings or true/false)")
        v = np.asarray(state[name], dtype=np.float64)
        if v.shape != (n_features,):
            raise ValueError(f"{key}[{name!r}]: has shape {v.shape}, expected ({n_features},)")
        bad = np.flatnonzero(~(np.abs(v) <= SCALE_MAX))
        if bad.size:
            raise ValueError(f"{key}[{name!r}]: entry {int(bad[0])} is {float(v[bad[0]])!r}, expected a finite "
                             "number of magnitude at most 2**1022")
        stats.append(v)
    if rule == "maxabs" and np.any(stats[0] < 0):
        raise ValueError(f"{key}['max_abs']: entry {int(np.flatnonzero(stats[0] < 0)[0])} is negative")
    if rule == "standard" and np.any(stats[1] < 0):
        raise ValueError(f"{key}['std']: entry {int(np.flatnonzero(stats[1] < 0)[0])} is negative")
    if rule == "minmax" and np.any(stats[0] > stats[1]):
        raise ValueError(f"{key}: min > max at entry {int(np.flatnonzero(stats[0] > stats[1])[0])}")
    return rule, tuple(stats)



@njit(nogil=True, cache=True)
def _scale_dense_rows(X, shift, factor, bound, out):
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            v = (np.float64(X[i, j]) - shift[j]) * factor[j]
            out[i, j] = min(max(v, -bound), bound)
    return out


def scale_dense(X, shift, factor, bound, dtype):
    """:func:`apply_scale` of a dense validated block clipped to ``bound``, rounded once to
    ``dtype`` (the same values as ``apply_scale(...).clip(...).astype(dtype)``), in one pass
    and without the float64 copy."""
    shift = np.zeros(X.shape[1]) if shift is None else shift
    bound = min(float(bound), float(np.finfo(dtype).max))
    return _scale_dense_rows(X, shift, factor, bound, np.empty(X.shape, dtype=dtype))


# -- the ``scale`` parameter, shared by the maps that have one -----------------------------------

def scale_rule(scale, sparse, n_features, who=None):
    """The rule a ``scale`` parameter resolves to for this input (None: no scaling). "auto" and
    "auto_standard" are no scaling beyond ``MAX_CENTERED_FEATURES`` columns (the statistics would
    not fit the spec: explicit rules are refused there); up to it, on dense input they stay as
    they are (:func:`resolve` decides by the density of the rows) and on sparse input they are
    "maxabs". With ``who`` (the map's name),
    "minmax" and "standard" on sparse input are refused, as scikit-learn's ``MinMaxScaler`` and
    ``StandardScaler`` refuse them (GCWS densifies instead)."""
    if sparse and scale in ("minmax", "standard") and who is not None:
        raise ValueError(f"{who}: scale={scale!r} shifts every column, which would turn the zeros of sparse input "
                         "into nonzeros and densify it; use scale='maxabs' (or 'auto', which is 'maxabs' for "
                         "sparse input)")
    if scale not in AUTO_RULES:
        return scale
    if n_features > MAX_CENTERED_FEATURES:
        return None
    return "maxabs" if sparse else scale


def fitted_scale(rule, X):
    """The fitted ``scale_`` of a validated block under ``rule`` (None: no scaling)."""
    return None if rule is None else stats_to_state(*resolve(rule, block_stats(X, rule)))


def fitted_scale_partitioned(rule, X, who):
    """``(scale_, n_rows, n_features)`` of all rows of a dask array or SparsePartitions under
    ``rule`` (not None), read once; ``who`` names the map in errors."""
    stats, n, d = reduce_checked(X, block_stats, merge_stats, SCALE_MAX, f"{who} scale", rule)
    return stats_to_state(*resolve(rule, stats)), n, d


def refuse_wide_scale(who, scale, n_features):
    """An explicit rule on more than ``MAX_CENTERED_FEATURES`` columns: ValueError (a bound)."""
    if scale in RULES:
        refuse_above(int(n_features), MAX_CENTERED_FEATURES,
                     f"{who}: n_features_in={{value:,}} with scale={scale!r}: more than the bound of {{bound:,}} input "
                     "features with a scale (its statistics are dense vectors kept in the spec); use scale='auto' or "
                     "None for wide input")


def check_scale_state(scale, state, n_features):
    """Check a spec's ``state['scale']`` for the ``scale`` parameter (not None): present, and None
    or statistics of ``n_features`` columns under the parameter's rule; ValueError naming the key."""
    if "scale" not in state:
        raise ValueError(f"feature-map spec['state']: missing 'scale' (spec['params']['scale'] is {scale!r})")
    if state["scale"] is None:
        return
    rule, _ = state_to_stats(state["scale"], int(n_features), "feature-map spec['state']['scale']")
    if rule not in ((AUTO_RULES[scale], "maxabs") if scale in AUTO_RULES else (scale,)):
        raise ValueError(f"feature-map spec['state']['scale']: rule {rule!r} but spec['params']['scale'] is {scale!r}")


def input_scaling(fmap):
    """``(shift or None, factor)`` of a map's fitted ``scale_`` (None: no scaling), computed
    once per fitted state (the state's lists are parsed again only when ``scale_`` changes)."""
    state = getattr(fmap, "scale_", None)
    cached = fmap.__dict__.get("_scaling_of")
    if cached is None or cached[0] is not state:
        cached = (state, fitted_shift_factor(state, fmap.n_features_in_))
        fmap._scaling_of = cached
    return cached[1]


def scaled_block(X, scaling, bound, dtype, n_jobs=1):
    """A validated raw block through ``scaling`` (``(shift or None, factor)``; None: X itself),
    clipped to ``bound``: CSR without a shift stays CSR (float64, zeros stay zeros), other
    input comes dense in ``dtype`` (:func:`scale_dense`), on ``n_jobs`` threads over row blocks
    (the map's ``n_jobs``: one thread inside a Dask task or a pool, see :mod:`._parallel`)."""
    if scaling is None:
        return X
    shift, factor = scaling
    if sp.issparse(X) and shift is None:
        X = apply_scale(X, None, factor)
        np.clip(X.data, -bound, bound, out=X.data)
        return X
    X = X.toarray() if sp.issparse(X) else X
    return transform_rows(lambda rows, row_offset: scale_dense(rows, shift, factor, bound, dtype), X, n_jobs)


# -- the ``scale`` parameter of the Gaussian maps (RFF, NRFF, Fastfood) --------------------------

#: The constraint of their ``scale`` parameter.
SCALE_CONSTRAINT = {"scale": [None, StrOptions({*AUTO_RULES, *RULES})]}


class LearnedScale:
    """Mixin of RFF, NRFF and Fastfood: per-feature scaling learned in ``fit`` (``scale=``).

    The map's :meth:`validate_block` returns the rows scaled (``x' = (x - shift) * factor``), so
    every caller of the contract (``transform``, stores, learners, saved models) feeds the
    features scaled rows. Raw input may then be as large as ``SCALE_MAX``; scaled values beyond
    the map's own arithmetic bound (``max_abs_features``) are clipped to it (a projection that
    large gives a cosine of no information anyway). ``gamma="scale"`` is learned from the scaled
    rows (:class:`._gamma.ScaleGamma` asks :meth:`_input_scaling`).

    ``scale=None`` (the classes' default, as scikit-learn's ``RBFSampler``, which leaves scaling
    to a ``StandardScaler`` before it) keeps specs exactly as they were before this parameter:
    no ``scale`` in the params, no ``scale`` in the state.
    """

    _spec_omitted = {"scale": None}

    @property
    def fits_partitioned(self) -> bool:
        """With a scale, ``featurize`` and ``fit_incremental`` fit an unfitted clone on all rows."""
        return self.scale is not None or super().fits_partitioned

    @property
    def max_abs_input(self) -> float | None:
        """``SCALE_MAX`` (2**1022) with a scale, else ``max_abs_features``."""
        return SCALE_MAX if getattr(self, "scale_", self.scale) is not None else self.max_abs_features

    def _check_width(self, n_features):
        super()._check_width(n_features)
        refuse_wide_scale(type(self).__name__, self.scale, n_features)

    def _rule(self, sparse, n_features):
        return scale_rule(self.scale, sparse, n_features, type(self).__name__)

    def _input_scaling(self):
        """``(shift or None, factor)`` of the fitted scale, or None."""
        return input_scaling(self)

    def fit(self, X, y=None):
        self.__dict__.pop("scale_", None)  # a refit must not see the last fit's scaling in validate_block
        return super().fit(X, y)

    def _fit_partitioned(self, X):
        """The scale statistics of all rows of a dask array or SparsePartitions (one pass), then
        what the other mixins learn from all rows."""
        rule = self._rule(is_partitions(X) or sp.issparse(getattr(X, "_meta", None)), n_features_of(X))
        self.scale_ = None if rule is None else fitted_scale_partitioned(rule, X, type(self).__name__)[0]
        super()._fit_partitioned(X)

    def _fit(self, X):
        if X is not None:  # None: _fit_partitioned learned the scale
            self.scale_ = fitted_scale(self._rule(sp.issparse(X), X.shape[1]), X)
            if self.scale_ is not None:  # float64, as the pass over dask input scales each block
                X = apply_scale(X, *self._input_scaling())
        super()._fit(X)

    def _scaled(self, X):
        """A validated raw block scaled (:func:`scaled_block`), clipped to ``max_abs_features``,
        dense rows in the map's ``dtype``, which the features compute in."""
        bound = min(SCALE_MAX, self.max_abs_features or SCALE_MAX)
        return scaled_block(X, self._input_scaling(), bound, np.dtype(self.dtype), self.n_jobs)

    def validate_block(self, X, row_offset=0, row_numbers=None):
        """The input check of :meth:`FeatureMap.validate_block` on the raw rows, then the fitted
        scaling: what ``transform_block`` takes."""
        return self._scaled(super().validate_block(X, row_offset, row_numbers))

    def _fitted_state(self):
        state = super()._fitted_state()
        if self.scale is not None:  # scale=None: specs stay as they were
            state["scale"] = self.scale_
        return state

    def _validate_state(self, state):
        rest = dict(state)
        if self.scale is not None:
            check_scale_state(self.scale, rest, self.n_features_in_)
            del rest["scale"]
        super()._validate_state(rest)

    def _set_fitted_state(self, state):
        super()._set_fitted_state(state)
        self.scale_ = state.get("scale")
