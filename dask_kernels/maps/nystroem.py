"""Nystroem features for every kernel of the package (GMM, min-max, RBF, Laplacian, cosine-RBF).

Landmarks ``l_1..l_m`` are rows of the data; with ``K_mm = U diag(lam) U^T`` (eigenvalues in
decreasing order) a row's features are

    z(x) = [k(x, l_1), ..., k(x, l_m)] @ N,    N = U[:, kept] diag(lam[kept])^(-1/2)

one kernel block against the landmarks (:func:`dask_kernels.exact.pairwise.kernel_block`) and one
matrix product. Then ``z(x) . z(y) = k_x^T K_mm^+ k_y``: exact when x or y is a landmark, never
above the kernel on the diagonal (``||z(x)||^2 <= k(x, x)``), biased low on average.

Landmarks are chosen from the rows' global row numbers only, so a fit does not depend on how the
data is partitioned (random stream 51 of the seed, scheme dk-rng-1):

* ``"uniform"``: the m rows with the smallest ``rank(seed, 51, row, 0)`` (a 64-bit counter hash
  of the global row number; ties broken by the row number), in increasing rank. Each partition
  keeps its m smallest, a tree of merges keeps the m smallest overall: one pass, and never more
  than a few times m rows in one place.
* ``"kmeans++"``: the same uniform sample of ``KMEANS_OVERSAMPLE * m`` rows, then k-means++
  seeding *in the kernel's feature space* (squared distance ``2 - 2 k(x, c)``, since every kernel
  here has ``k(x, x) = 1``), which works for GMM as for RBF. Draw t uses
  ``uniform(seed, 52, t, 0)``, so the choice is deterministic.

The fitted landmarks, normalization and landmark row numbers are too large for a JSON spec: they
live in a content-addressed sidecar (:mod:`dask_kernels.sidecar`) whose manifest (sha256, shapes,
dtypes) the spec records.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any

import dask
import numpy as np
import scipy.sparse as sp
from .._params import ParameterConstraints, StrOptions

from ..blocks import as_block, check_finite_rows
from ..exact.pairwise import KERNELS, gmm_split, kernel_block, row_sq_norms, unit_rows
from ..rng import rank_array, register_stream, uniform
from ..sidecar import manifest
from ._bounds import MAX_CENTERED_FEATURES, MAX_LANDMARKS, components_interval
from ._partitioned import dask_rows, is_dask, is_partitions, n_features_of, reduce_blocks
from ._fourier import COMMON_CONSTRAINTS, cached_table
from ._gamma import GAMMA_CONSTRAINT, fit_gamma, gamma_of_sums, gamma_sums, is_scale
from ._scaling import (SCALE_CONSTRAINT, SCALE_MAX, apply_scale, check_scale_state, fitted_scale,
                       fitted_scale_partitioned, input_scaling, refuse_wide_scale, scale_rule, scaled_block)
from ._exactsum import merge_sums
from .base import FeatureMap
from .._docstrings import fill_doc

STREAM_LANDMARK = register_stream("nystroem.landmark", 51)
STREAM_KMEANS = register_stream("nystroem.kmeans", 52)
#: k-means++ seeding picks m landmarks among this many times m uniformly sampled rows.
KMEANS_OVERSAMPLE = 8


def eigenvalue_floor(lam_max: float, m: int, dtype: Any) -> float:
    """Eigenvalues of ``K_mm`` at or below ``m * eps(dtype) * lam_max`` are dropped.

    Below that, an eigenvalue is indistinguishable from rounding of the kernel values in the
    output precision, and ``lam^(-1/2)`` would amplify that rounding into the features. Their
    features are set to 0 (the width stays m), which keeps ``||z(x)||^2 <= k(x, x)``: the
    features are those of the kernel projected onto the kept eigenvectors.
    """
    return float(m) * float(np.finfo(np.dtype(dtype)).eps) * max(float(lam_max), 0.0)


# -- landmark sampling (runs inside Dask tasks) ------------------------------------------------------
def _ranks(seed, row_offset, n):
    ids = np.arange(row_offset, row_offset + n, dtype=np.uint64)
    return rank_array(np.uint64(seed), np.uint64(STREAM_LANDMARK), ids, np.zeros(1, np.uint64))[:, 0]


def _check_sign(X, row_offset=0, row_numbers=None):
    """min-max is defined on nonnegative data: name the first row with a negative entry."""
    data = X.data if sp.issparse(X) else X
    if data.size and data.min() < 0:
        rows = (X < 0).nonzero()[0] if sp.issparse(X) else np.nonzero((X < 0).any(axis=1))[0]
        first = int(rows.min())
        row = int(row_numbers[first]) if row_numbers is not None else row_offset + first
        raise ValueError(f"kernel='minmax' needs nonnegative data: row {row} has a "
                         "negative entry (use kernel='gmm', which sign-splits)")


def sample_part(X: Any, row_offset: int, seed: int, s: int, kernel: str,
                scaling: tuple | None = None) -> tuple[np.ndarray, np.ndarray, Any] | None:
    """The ``s`` rows of one partition with the smallest rank: (ranks, global row ids, rows),
    the rows through ``scaling`` (``(shift or None, factor)`` of the fitted scale) when given.

    Validates the partition (finite; nonnegative for min-max), naming global rows.
    """
    return _smallest_ranks(_partition_rows(X, row_offset, kernel, scaling), row_offset, seed, s)


def _partition_rows(X, row_offset, kernel, scaling):
    """A partition's rows checked (real, 2-d, finite; nonnegative for min-max, naming global
    rows), as float64 (CSR stays CSR), through ``scaling`` when given."""
    if np.iscomplexobj(X.data if sp.issparse(X) else X):
        raise ValueError(f"rows {row_offset}..{row_offset + X.shape[0] - 1} are complex; features need real values")
    if sp.issparse(X):
        X = as_block(X, (np.float64,))
    else:
        X = np.ascontiguousarray(np.asarray(X), dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"expected 2-d rows, got shape {X.shape}")
    check_finite_rows(X, row_offset)
    X = scaled_block(X, scaling, SCALE_MAX, np.float64)
    if kernel == "minmax":
        _check_sign(X, row_offset)
    return X


def _smallest_ranks(X, row_offset, seed, s):
    """:func:`sample_part` of checked rows."""
    n = X.shape[0]
    r = _ranks(seed, row_offset, n)
    ids = np.arange(row_offset, row_offset + n, dtype=np.int64)
    take = np.argpartition(r, s - 1)[:s] if n > s else np.arange(n)
    return merge_samples([(r[take], ids[take], X[take])], s)


def merge_samples(parts: list[tuple[np.ndarray, np.ndarray, Any]], s: int) -> tuple[np.ndarray, np.ndarray, Any] | None:
    """The ``s`` smallest-rank rows of several samples, in increasing (rank, row id)."""
    parts = [p for p in parts if p[0].size]
    if not parts:
        return None
    r = np.concatenate([p[0] for p in parts])
    ids = np.concatenate([p[1] for p in parts])
    X = sp.vstack([p[2] for p in parts], format="csr") if sp.issparse(parts[0][2]) else \
        np.concatenate([p[2] for p in parts])
    order = np.lexsort((ids, r))[:s]
    X = X[order]
    return r[order], ids[order], (as_block(X, (np.float64,)) if sp.issparse(X) else X)


def _merge_many(s, *parts):
    return merge_samples([p for p in parts if p is not None], s)


def _sample_sums_part(X, row_offset, seed, s, kernel, scaling, unit):
    """:func:`sample_part` and the exact sums behind ``gamma="scale"`` of one partition (its rows
    checked, converted and scaled once for both)."""
    X = _partition_rows(X, row_offset, kernel, scaling)
    return _smallest_ranks(X, row_offset, seed, s), gamma_sums(X, unit)


def _merge_sample_sums(s, *parts):
    parts = [p for p in parts if p is not None]
    return _merge_many(s, *[p[0] for p in parts]), merge_sums(*[p[1] for p in parts])


def sample_partitioned(X: Any, seed: int, s: int, kernel: str, unit: bool | None = None,
                       scaling: tuple | None = None) -> tuple[Any, int, int]:
    """Merge tree of :func:`sample_part` over a dask array or SparsePartitions; returns
    ``(sample, n_rows, n_features)``, computed on the active scheduler. With ``unit`` (a bool),
    in the same pass, the exact sums of ``gamma="scale"``: ``((sample, sums), n_rows, n_features)``.
    ``scaling``: the fitted scale, applied to every block first."""
    if scaling is not None:  # one task holds the vectors, not every block's task
        scaling = dask.delayed(scaling, pure=True, traverse=False)
    if unit is None:
        return reduce_blocks(X, sample_part, functools.partial(_merge_many, s), int(seed), s, kernel, scaling)
    return reduce_blocks(X, _sample_sums_part, functools.partial(_merge_sample_sums, s), int(seed), s, kernel,
                         scaling, bool(unit))


def kmeanspp(C: Any, m: int, kernel: str, gamma: float | None, seed: int) -> np.ndarray:
    """Indices of ``m`` rows of ``C`` chosen by k-means++ seeding in the kernel's feature space.

    The first is row 0 (the smallest rank); draw t picks row j with probability proportional to
    ``min_c (2 - 2 k(C_j, c))`` using ``uniform(seed, 52, t, 0)``.
    """
    s = C.shape[0]
    if kernel == "cosine_rbf":  # the same kernel as rbf with gamma / 2 on unit rows: normalize once
        C, kernel, gamma = unit_rows(C), "rbf", 0.5 * gamma
    sq = row_sq_norms(C) if kernel == "rbf" else None   # the same rows m times: norms once

    def column(j):
        if sq is not None:
            return kernel_block(kernel, C, C[j:j + 1], gamma=gamma, x_sq=sq, y_sq=sq[j:j + 1])[:, 0]
        return kernel_block(kernel, C, C[j:j + 1], gamma=gamma)[:, 0]

    chosen = [0]
    d2 = np.maximum(2.0 - 2.0 * column(0), 0.0)
    d2[0] = 0.0
    for t in range(1, m):
        total = float(d2.sum())
        if total <= 0.0:  # every remaining row duplicates a chosen one: take the next in rank order
            free = np.setdiff1d(np.arange(s), chosen)
            j = int(free[0])
        else:
            cum = np.cumsum(d2)
            j = int(np.searchsorted(cum, uniform(np.uint64(seed), np.uint64(STREAM_KMEANS), np.uint64(t),
                                                 np.uint64(0)) * cum[-1], side="right"))
            j = min(j, s - 1)
            while d2[j] <= 0.0:  # rounding at the top end: step back to a row that has weight
                j -= 1
        chosen.append(j)
        d2 = np.minimum(d2, np.maximum(2.0 - 2.0 * column(j), 0.0))
        d2[chosen] = 0.0
    return np.asarray(chosen, dtype=np.int64)


#: the keys of a fitted Nystroem's spec state
STATE_KEYS = ("gamma", "n_landmarks", "rank", "landmarks_format", "landmarks_nnz", "sidecar", "scale")


@fill_doc
class Nystroem(FeatureMap):
    """Nystroem features for the GMM, min-max, RBF, Laplacian or cosine-RBF kernel.

    ``z(x) = [k(x, l_1), ..., k(x, l_m)] @ U diag(lam)^(-1/2)`` with ``K_mm = U diag(lam) U^T``
    the kernel matrix of m landmark rows (see the module docstring for how they are chosen).
    Unlike random features, the approximation ``z(x) . z(y) = k_x^T K_mm^+ k_y`` is exact
    whenever x or y is a landmark, and never exceeds the kernel on the diagonal.

    Parameters
    ----------
    n_components : int, default=100
        Number of landmarks m, which is the output width (fewer if the data has fewer rows); at
        most 2**14 (fitting builds two m x m float64 matrices and costs O(m**3)).
    kernel : {"gmm", "minmax", "rbf", "laplacian", "cosine_rbf"}, default="gmm"
        ``gmm``: generalized min-max (sign-split; :func:`dask_kernels.gmm_kernel`); ``minmax``:
        the same on nonnegative data (negative rows are refused); ``rbf``:
        ``exp(-gamma ||x - y||^2)``; ``laplacian``: ``exp(-gamma ||x - y||_1)``; ``cosine_rbf``:
        ``exp(-gamma (1 - cos(x, y)))`` (the NRFF kernel).
    gamma : float, "scale" or None, default=None
        Bandwidth of rbf / laplacian (None: ``1 / n_features``, scikit-learn's default) and of
        cosine_rbf (None: 1.0). Must be None for gmm and minmax, which have no parameter.
        "scale" (rbf and cosine_rbf): scikit-learn's ``1 / (n_features * X.var())``, the
        variance over all entries of all training rows (cosine_rbf: ``2 / (n_features *
        U.var())`` of the unit rows ``U``, the same rule for the Gaussian of the unit rows),
        computed exactly in the landmark pass, so the same for any chunking; ``gamma_``
        records it.
    landmarks : {"uniform", "kmeans++"}, default="uniform"
        How landmarks are chosen (both depend only on the seed and the global row numbers).
    %(seed)s
    dtype : {"float32", "float64"}, default="float32"
        Output dtype, and the precision of the kernel block (rbf, cosine_rbf) and of the product
        with the normalization (float32 uses SGEMM).
    %(n_jobs)s
    scale : {"auto", "auto_standard", "minmax", "maxabs", "standard"} or None, default=None
        Per-feature input scaling learned in ``fit`` from all training rows, the rules of
        GCWS's and RFF's ``scale`` (GMM and the Gaussian kernels are not invariant to per-feature
        offsets and units): "minmax" maps each column's training range onto [-1, 1] (dense
        input; refused on sparse input and with ``kernel="minmax"``); "maxabs" divides each
        column by its largest ``|x|``; "standard" centres each column on its mean and divides it
        by its standard deviation (refused where "minmax" is); "auto" is "minmax" for dense input with more than half of
        its entries nonzero, else "maxabs", and "maxabs" for ``kernel="minmax"``; "auto_standard"
        is the same with "standard" in place of "minmax" (refused with ``kernel="minmax"``). The landmarks
        are scaled rows, :meth:`validate_block` scales every row it checks (raw values up to
        ``2**1022``), and ``gamma="scale"`` is learned from the scaled rows. On a dask array the
        statistics take one more pass. None: no scaling, the map of specs without ``scale``.

    Attributes
    ----------
    n_features_in_ : int
    n_output_features_ : int
        Number of landmarks, ``min(n_components, n_rows)``.
    scale_ : dict or None
        The fitted scaling (see :class:`~dask_kernels.RFF`); None without scaling.
    output_dtype_ : numpy.dtype
    gamma_ : float or None
        The bandwidth used.
    landmarks_ : ndarray or CSR matrix of shape (n_landmarks, n_features)
        float64; CSR when fitted on sparse input.
    landmark_rows_ : ndarray of int64
        Global row numbers of the landmarks in the fitted input.
    normalization_ : ndarray of shape (m, m), float64
        ``N``; columns of dropped eigenvalues are zero.
    rank_ : int
        Number of eigenvalues above the floor (:func:`eigenvalue_floor`:
        ``m * eps(dtype) * lam_max``).

    Notes
    -----
    ``fit`` accepts in-memory rows (NumPy, SciPy sparse), a dask array (e.g. from
    :func:`~dask_kernels.read_npy` or :func:`~dask_kernels.read_zarr`) and partitioned sparse
    rows (:func:`~dask_kernels.read_svmlight`): the landmarks are sampled in one pass on the
    active Dask scheduler without collecting the data, and are the same whatever the
    partitioning. The normalization comes from one eigendecomposition of ``K_mm`` (O(m^3), in
    the calling process).

    Eigenvalue floor: eigenvalues at or below ``m * eps(dtype) * lam_max`` (e.g. duplicate
    landmarks, or an RBF bandwidth so wide that landmarks look alike) are dropped and their
    features are 0; the float32 map therefore uses a higher floor than the float64 one.

    For ``kernel="minmax"``, :meth:`fit` and :meth:`transform` refuse negative entries; the
    pipeline computes GMM, which equals min-max on nonnegative rows.

    References
    ----------
    Williams, C. and Seeger, M. "Using the Nystroem method to speed up kernel machines", NIPS 2001.
    Li, P. "Linearized GMM kernels and normalized random Fourier features", KDD 2017 (GMM-Nystroem).
    Arthur, D. and Vassilvitskii, S. "k-means++: the advantages of careful seeding", SODA 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels import Nystroem, gmm_kernel
    >>> X = np.random.default_rng(0).random((200, 5))
    >>> ny = Nystroem(n_components=50, kernel="gmm", dtype="float64").fit(X)
    >>> Z = ny.transform(X)
    >>> Z.shape
    (200, 50)
    >>> i = int(ny.landmark_rows_[0])          # a landmark's kernel row is reproduced exactly
    >>> bool(np.allclose(Z @ Z[i], gmm_kernel(X, X[i:i + 1])[:, 0]))
    True
    """

    method = "nystroem"
    #: an unfitted map handed to ``featurize`` is fitted on all rows (one sampling pass), not
    #: on the first block
    fits_partitioned = True
    _parameter_constraints = ParameterConstraints({
        **COMMON_CONSTRAINTS,
        "n_components": components_interval(MAX_LANDMARKS),
        "kernel": [StrOptions(set(KERNELS))],
        "gamma": [None, *GAMMA_CONSTRAINT],
        "landmarks": [StrOptions({"uniform", "kmeans++"})],
        **SCALE_CONSTRAINT,
    })
    #: specs written before scaling existed have no ``scale``: they rebuild the unscaled map
    _spec_omitted = {"scale": None}

    def __init__(self, *, n_components: int = 100, kernel: str = "gmm", gamma: float | None = None,
                 landmarks: str = "uniform", seed: int = 0, dtype: str = "float32",
                 n_jobs: int | None = None, scale: str | None = None) -> None:
        self.n_components = n_components
        self.n_jobs = n_jobs
        self.kernel = kernel
        self.gamma = gamma
        self.landmarks = landmarks
        self.seed = seed
        self.dtype = dtype
        self.scale = scale

    # -- parameters -------------------------------------------------------------------------------
    def _validate_params_extra(self):
        if self.kernel in ("gmm", "minmax") and self.gamma is not None:
            raise ValueError(f"kernel={self.kernel!r} has no parameter: gamma must be None, got {self.gamma!r}")
        if is_scale(self.gamma) and self.kernel not in ("rbf", "cosine_rbf"):
            raise ValueError(f"gamma='scale' is scikit-learn's rule for the Gaussian kernel (rbf, and cosine_rbf "
                             f"on unit rows); kernel={self.kernel!r} needs a numeric gamma or None")
        if self.kernel == "minmax" and self.scale in ("minmax", "standard", "auto_standard"):
            raise ValueError(f"kernel='minmax' needs nonnegative rows and scale={self.scale!r} centres every column "
                             "(its values go negative): use scale='maxabs' (or 'auto', which is 'maxabs' for this "
                             "kernel), or kernel='gmm'")

    def _scale_rule(self, sparse, n_features):
        """The rule ``scale`` resolves to for this input (None: no scaling): as the Fourier maps',
        and "maxabs" for ``kernel="minmax"`` (signs kept)."""
        if self.kernel == "minmax" and self.scale == "auto":
            return "maxabs" if not sparse or n_features <= MAX_CENTERED_FEATURES else None
        return None if self.scale is None else scale_rule(self.scale, sparse, n_features, "Nystroem")

    def _check_width(self, n_features):
        refuse_wide_scale("Nystroem", self.scale, n_features)

    @property
    def max_abs_input(self) -> float | None:
        """None (any finite value) without a scale; with one ``2**1022`` (``SCALE_MAX``), so that
        ``x - shift`` is finite (the scaled values are clipped to it)."""
        return SCALE_MAX if getattr(self, "scale_", self.scale) is not None else None

    def _resolved_gamma(self, d):
        if self.kernel in ("gmm", "minmax"):
            return None
        if is_scale(self.gamma):
            return self._scale_gamma  # fitted from all rows before the sample
        if self.gamma is not None:
            return float(self.gamma)
        return 1.0 if self.kernel == "cosine_rbf" else 1.0 / max(int(d), 1)

    @property
    def n_output_features_(self) -> int:
        return int(self.n_landmarks_)

    @property
    def output_dtype_(self) -> np.dtype:
        return np.dtype(self.dtype)

    # -- fitting ----------------------------------------------------------------------------------
    def _sample_size(self):
        m = int(self.n_components)
        return m * KMEANS_OVERSAMPLE if self.landmarks == "kmeans++" else m

    def fit(self, X: Any, y: Any = None) -> Nystroem:
        """Choose landmarks and compute the normalization.

        Parameters
        ----------
        X : array-like, sparse matrix, dask array, dask DataFrame or SparsePartitions of shape (n_samples, n_features)
            Dask arrays and partitioned sparse input are sampled on the active Dask scheduler.
        y : ignored

        Returns
        -------
        self
        """
        self.__dict__.pop("scale_", None)  # a refit must not see the last fit's scaling in validate_block
        X = dask_rows(X)
        if not (is_dask(X) or is_partitions(X)):
            return super().fit(X, y)
        self._validate_params()
        self._validate_params_extra()
        self.n_features_in_ = d = n_features_of(X)
        self._check_width(d)
        rule = self._scale_rule(is_partitions(X) or sp.issparse(getattr(X, "_meta", None)), d)
        self.scale_ = None if rule is None else fitted_scale_partitioned(rule, X, "Nystroem")[0]
        unit = self.kernel == "cosine_rbf" if is_scale(self.gamma) else None
        sample, n, d = sample_partitioned(X, self.seed, self._sample_size(), self.kernel, unit, input_scaling(self))
        if unit is not None:
            sample, sums = sample
            if sample is not None:
                self._scale_gamma = gamma_of_sums(sums, n, d, unit, "Nystroem")
        if sample is None:
            raise ValueError(f"Found array with 0 sample(s) (shape=({n}, {d})) while a minimum of 1 is required.")
        for attr in ("feature_names_in_",):
            if hasattr(self, attr):
                delattr(self, attr)
        self.n_features_in_ = d
        self._check_width(d)
        self._fit_sample(sample)
        self.is_fitted_ = True
        return self

    def _fit(self, X):
        self.scale_ = fitted_scale(self._scale_rule(sp.issparse(X), X.shape[1]), X)
        if self.scale_ is not None:  # float64, as the pass over dask input scales each block
            X = apply_scale(X, *input_scaling(self))
        if is_scale(self.gamma):
            self._scale_gamma = fit_gamma(X, self.kernel == "cosine_rbf", "Nystroem")[0]
        self._fit_sample(sample_part(X, 0, self.seed, self._sample_size(), self.kernel))

    def _fit_sample(self, sample):
        _, ids, C = sample
        m = min(int(self.n_components), C.shape[0])
        gamma = self._resolved_gamma(self.n_features_in_)
        pick = kmeanspp(C, m, self.kernel, gamma, self.seed) if self.landmarks == "kmeans++" else np.arange(m)
        L = C[pick]
        self.gamma_ = gamma
        self.landmark_rows_ = np.ascontiguousarray(ids[pick], dtype=np.int64)
        self.landmarks_ = as_block(L, (np.float64,)) if sp.issparse(L) else np.ascontiguousarray(L)
        self.normalization_, self.rank_ = self._normalization(self.landmarks_)
        self.n_landmarks_ = m
        self.sidecar_ = manifest(self.sidecar_arrays())

    def _normalization(self, L):
        K = kernel_block(self.kernel, L, L, gamma=self.gamma_)
        K = 0.5 * (K + K.T)
        lam, U = np.linalg.eigh(K)
        lam, U = lam[::-1], U[:, ::-1]
        # deterministic signs: the largest-magnitude entry of each eigenvector is positive
        big = np.argmax(np.abs(U), axis=0)
        U = U * np.where(U[big, np.arange(U.shape[1])] < 0, -1.0, 1.0)
        keep = lam > eigenvalue_floor(lam[0] if lam.size else 0.0, K.shape[0], self.dtype)
        scale = np.zeros_like(lam)
        scale[keep] = 1.0 / np.sqrt(lam[keep])
        return np.ascontiguousarray(U * scale), int(keep.sum())

    # -- fitted state: small part in the spec, arrays in the sidecar -----------------------------
    def sidecar_arrays(self) -> dict[str, np.ndarray]:
        """The fitted arrays (name -> ndarray) that live beside the spec."""
        out = {"normalization": self.normalization_, "landmark_rows": self.landmark_rows_}
        L = self.landmarks_
        if sp.issparse(L):
            out.update(landmarks_data=np.asarray(L.data, np.float64), landmarks_indices=L.indices.astype(np.int64),
                       landmarks_indptr=L.indptr.astype(np.int64))
        else:
            out["landmarks"] = L
        return out

    def _fitted_state(self):  # keys: STATE_KEYS
        sparse = sp.issparse(self.landmarks_)
        state = {"gamma": self.gamma_, "n_landmarks": int(self.n_landmarks_), "rank": int(self.rank_),
                 "landmarks_format": "csr" if sparse else "dense",
                 "landmarks_nnz": int(self.landmarks_.nnz) if sparse else None, "sidecar": self.sidecar_}
        if self.scale is not None:  # scale=None: specs stay as they were
            state["scale"] = self.scale_
        return state

    def _validate_state(self, state):
        # _set_fitted_state checks every field itself (naming the key) before installing it, and
        # the sidecar manifest is checked against the spec by sidecar.attach.
        if not isinstance(state, dict):
            raise ValueError("feature-map spec['state']: expected an object")
        unknown = set(state) - set(STATE_KEYS)
        if unknown:
            raise ValueError(f"feature-map spec['state']: unknown keys {sorted(unknown)}; a Nystroem state has "
                             f"{list(STATE_KEYS)}")
        if self.scale is not None:
            check_scale_state(self.scale, state, self.n_features_in_)
        elif "scale" in state:
            raise ValueError("feature-map spec['state']['scale']: present but spec['params'] has no scale")

    def _set_fitted_state(self, state):
        def field(key, ok, what):
            v = state.get(key) if isinstance(state, dict) else None
            if not ok(v):
                raise ValueError(f"spec['state'][{key!r}]: expected {what}, got {v!r}")
            return v

        d = int(self.n_features_in_)
        is_int = lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool)  # noqa: E731
        m = field("n_landmarks", lambda v: is_int(v) and 1 <= v <= int(self.n_components), "1..n_components")
        field("rank", lambda v: is_int(v) and 0 <= v <= m, f"an integer in 0..{m}")
        if self.kernel in ("gmm", "minmax"):
            field("gamma", lambda v: v is None, "null (the kernel has no parameter)")
        else:
            g = field("gamma", lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool), "a number")
            if not (np.isfinite(g) and g > 0):
                raise ValueError(f"spec['state']['gamma']: expected a positive finite number, got {g!r}")
        fmt = field("landmarks_format", lambda v: v in ("dense", "csr"), "'dense' or 'csr'")
        if fmt == "csr":
            field("landmarks_nnz", lambda v: is_int(v) and 0 <= v <= m * d, f"an integer in 0..{m * d}")
        field("sidecar", lambda v: isinstance(v, dict), "a sidecar manifest")
        self.gamma_ = state["gamma"]
        self.n_landmarks_ = m
        self.rank_ = state["rank"]
        self._landmarks_format = fmt
        self._landmarks_nnz = state.get("landmarks_nnz")
        self.sidecar_ = state["sidecar"]
        self.scale_ = state.get("scale")

    def _sidecar_layout(self):
        """name -> (shape, dtype) the sidecar must have, from the spec's own fields."""
        m, d = int(self.n_landmarks_), int(self.n_features_in_)
        layout = {"normalization": ((m, m), "<f8"), "landmark_rows": ((m,), "<i8")}
        if self._landmarks_format == "csr":
            nnz = int(self._landmarks_nnz)
            layout.update(landmarks_data=((nnz,), "<f8"), landmarks_indices=((nnz,), "<i8"),
                          landmarks_indptr=((m + 1,), "<i8"))
        else:
            layout["landmarks"] = ((m, d), "<f8")
        return layout

    def _set_sidecar_arrays(self, arrays):
        """Install verified sidecar arrays, checking what the hash cannot: that they make sense."""
        m, d = int(self.n_landmarks_), int(self.n_features_in_)
        for name, a in arrays.items():
            if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                raise ValueError(f"sidecar array {name!r} holds NaN or infinity")
        if "landmarks" in arrays:
            L = np.ascontiguousarray(arrays["landmarks"])
        else:
            data, ind, ptr = arrays["landmarks_data"], arrays["landmarks_indices"], arrays["landmarks_indptr"]
            ok = (ptr[0] == 0 and ptr[-1] == data.size and np.all(np.diff(ptr) >= 0)
                  and (ind.size == 0 or (ind.min() >= 0 and ind.max() < d)))
            if ok and ind.size:
                row = np.repeat(np.arange(m), np.diff(ptr))
                ok = bool(np.all((np.diff(ind) > 0) | (np.diff(row) > 0)))
            if not ok:
                raise ValueError("sidecar CSR landmarks are malformed (indptr / indices out of range or unsorted)")
            L = sp.csr_matrix((data, ind, ptr), shape=(m, d))
        self.landmarks_ = L
        self.normalization_ = np.ascontiguousarray(arrays["normalization"])
        self.landmark_rows_ = np.ascontiguousarray(arrays["landmark_rows"])

    # -- transforming -----------------------------------------------------------------------------
    def validate_block(self, X: Any, row_offset: int = 0,
                       row_numbers: np.ndarray | None = None) -> np.ndarray | sp.csr_matrix:
        """The input contract of :meth:`FeatureMap.validate_block`, then the fitted scaling (the
        rows as the landmarks are); for ``kernel="minmax"`` also nonnegative entries (the kernels
        compute GMM, which equals min-max only there)."""
        X = super().validate_block(X, row_offset=row_offset, row_numbers=row_numbers)
        X = scaled_block(X, input_scaling(self), SCALE_MAX, np.float64, self.n_jobs)  # as the landmarks are
        if self.kernel == "minmax":
            _check_sign(X, row_offset, row_numbers)
        return X

    def _tables(self):
        """(landmarks, precomputed kernel_block arguments, N in the output dtype), cached per process."""
        def build():
            L, extra = self.landmarks_, {}
            if self.kernel == "rbf":
                extra["y_sq"] = row_sq_norms(L)
                L = L if sp.issparse(L) else L.astype(self.output_dtype_)  # product in output precision
            elif self.kernel in ("gmm", "minmax") and not sp.issparse(L):
                extra["y_split"] = gmm_split(L)
            return L, extra, self.normalization_.astype(self.output_dtype_)

        return cached_table(self, (self.sidecar_["sha256"], self.dtype, self.kernel), build)

    def transform_block(self, X: np.ndarray | sp.csr_matrix, row_offset: int = 0) -> np.ndarray:
        """Features of a validated block: ndarray ``(n, n_output_features_)`` of ``output_dtype_``."""
        L, extra, N = self._tables()
        K = kernel_block(self.kernel, X, L, gamma=self.gamma_, dtype=self.output_dtype_, **extra)
        return np.ascontiguousarray(K @ N)
