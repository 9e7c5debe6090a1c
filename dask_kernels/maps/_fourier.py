"""Pieces shared by the Fourier-type maps (RFF, NRFF, Fastfood).

* Parameter tables built from :mod:`dask_kernels.rng` (the tables are caches of the hash
  function, never a second source of truth).
* Common parameter checks, and row chunking for the elementwise passes.

The cosine: float32 maps fitted by this version use :func:`dask_kernels.maps._cos32.cos32v2`,
fused into the pass that forms the argument (no temporaries). The fitted state records it
(``spec["state"]["cosine"] = "cos32v2"``); a spec that says ``"cos32"`` (the previous version's
fits) keeps that cosine, and a spec without the key (written before cos32, or any float64 map)
keeps numpy's ``np.cos`` on the block, so every existing spec still produces the same bytes.
"""

import math
import numbers
import threading
import weakref
from functools import partial

import numpy as np
from numba import njit
from .._params import Interval, StrOptions

from ..rng import bits, index_key, index_keys, normal_of_key, stream_key, unit64
from ._bounds import components_interval
from ._parallel import GEMM_BLOCKS, N_JOBS_CONSTRAINT, OnBlas, row_blocks, usable_cpus


#: Cosine implementations a spec can name: "numpy" (``np.cos`` on the block, the default for
#: specs without the key), "cos32" and "cos32v2" (float32 only; v2 for new fits).
COSINES = ("numpy", "cos32", "cos32v2")
#: The cosine new float32 fits use.
FLOAT32_COSINE = "cos32v2"


class FloatFeatures:
    """Output contract shared by the Fourier maps: exactly ``n_components`` features of the
    ``dtype`` parameter, and the cosine the map was fitted with (``cosine_``)."""

    def _fit(self, X):
        self.cosine_ = FLOAT32_COSINE if np.dtype(self.dtype) == np.float32 else "numpy"

    def _fitted_state(self):
        return {"cosine": self.cosine_} if self.cosine_ != "numpy" else {}

    def _validate_state(self, state):
        if set(state) - {"cosine"}:
            raise ValueError(f"feature-map spec['state']: only the key 'cosine' is known, got {sorted(state)}")
        cosine = state.get("cosine", "numpy")
        if cosine not in COSINES or (cosine != "numpy" and np.dtype(self.dtype) != np.float32):
            raise ValueError(
                f"feature-map spec['state']['cosine']: {cosine!r} is not a cosine of this version for dtype "
                f"{self.dtype} (known: {list(COSINES)}; cos32 and cos32v2 need float32)"
            )

    def _set_fitted_state(self, state):
        self._validate_state(state)
        self.cosine_ = state.get("cosine", "numpy")

    @property
    def n_output_features_(self):
        return int(self.n_components)

    @property
    def output_dtype_(self):
        return np.dtype(self.dtype)

# Parameter tables are built at most once per process and map at a time; a lock keeps two
# Dask threads from building the same table twice.
TABLE_LOCK = threading.Lock()
_CACHE = weakref.WeakKeyDictionary()

#: A bandwidth-like parameter: positive and finite (NaN is in no interval; inf is excluded here).
POSITIVE_FINITE = Interval(numbers.Real, 0, np.inf, closed="neither")

COMMON_CONSTRAINTS = {
    "n_components": components_interval(),
    "seed": [Interval(numbers.Integral, 0, 2**64 - 1, closed="both")],
    "dtype": [StrOptions({"float32", "float64"})],
    **N_JOBS_CONSTRAINT,
}


@njit(nogil=True, cache=True)
def uniform_phases(seed, stream, k):
    """``phase[j] = 2 pi * unit64(bits(index_key(stream_key(seed, stream), j), 0))``, j < k."""
    skey = stream_key(np.uint64(seed), np.uint64(stream))
    out = np.empty(k)
    for j in range(k):
        out[j] = 2.0 * np.pi * unit64(bits(index_key(skey, np.uint64(j)), np.uint64(0)))
    return out


@njit(nogil=True, cache=True)
def normal_table(seed, stream, d, k, scale, out):
    """``out[i, j] = scale * rng.normal(seed, stream, index=j, counter=i)`` for a (d, k) table.

    :func:`dask_kernels.rng.normal_of_key`, with the index keys hoisted so that the table fills
    row by row.
    """
    keys = index_keys(np.uint64(seed), np.uint64(stream), k)
    for i in range(d):
        for j in range(k):
            out[i, j] = scale * normal_of_key(keys[j], np.uint64(i))
    return out


@njit(nogil=True, cache=True)
def cauchy_table(seed, stream, d, k, scale, out):
    """``out[i, j] = scale * tan(pi (u - 1/2))``, u = ``rng.uniform(seed, stream, j, i)``."""
    keys = index_keys(np.uint64(seed), np.uint64(stream), k)
    for i in range(d):
        for j in range(k):
            out[i, j] = scale * np.tan(np.pi * (unit64(bits(keys[j], np.uint64(i))) - 0.5))
    return out


def cached_table(estimator, key, build):
    """Per-instance, per-process cache of a parameter table.

    The cache lives outside the estimator (a weak-keyed dict), so transforming does not change
    the estimator's ``__dict__`` (scikit-learn checks that), pickles and clones never carry it,
    and it goes away with the estimator. ``key`` holds everything the table depends on.
    """
    cached = _CACHE.get(estimator)
    if cached is None or cached[0] != key:
        with TABLE_LOCK:
            cached = _CACHE.get(estimator)
            if cached is None or cached[0] != key:
                cached = (key, build())
                _CACHE[estimator] = cached
    return cached[1]


def projection_tables(estimator, key, fill, phase_stream):
    """``(W, phase)`` of a projection map in its dtype, built once per process and cached.

    ``fill(W)`` writes the (d, k) float64 frequencies; ``phase[j]`` is
    :func:`uniform_phases` of ``phase_stream``. ``key`` holds the parameters ``fill`` uses.
    """
    d, k = int(estimator.n_features_in_), int(estimator.n_components)

    def build():
        W = np.empty((d, k))
        fill(W)
        phase = uniform_phases(np.uint64(estimator.seed), phase_stream, k)
        return W.astype(estimator.dtype), phase.astype(estimator.dtype)

    return cached_table(estimator, (estimator.seed, d, k, estimator.dtype, phase_stream, *key), build)


# -- tiles of the projection in the public transform ---------------------------------------------
#
# OpenBLAS's SGEMM pays for packing the (d, k) frequency matrix once per call, so a call's cost
# per row falls with its rows: measured one thread, d = 1024, k = 16384: 363 us per row at 256
# rows, 328 at 512, 312 at 1024 (about 293 us of arithmetic plus a packing cost of 18 ms per
# call). Cutting 512 rows into two 256-row blocks for two threads makes each thread pack all of
# W (twice the memory traffic, and 256-row calls); cutting the columns instead gives each
# thread all rows and half of W, as OpenBLAS's own threads do (-6 % CPU time measured on a
# loaded machine). So dense input is cut into row blocks of up to 1024 rows and, when that
# leaves CPUs idle or unevenly loaded, each row block into column panels. The tiles depend on
# the shape and the usable CPUs only (never on ``n_jobs``), so any ``n_jobs`` gives the same bits.
# A value's sum may be ordered differently by the BLAS in another tile shape, thread count or
# CPU (OpenBLAS's Haswell kernels do; tests/_blas_rounding.py bounds the difference), so the
# tiled transform equals ``transform_block`` on the same rows only to that rounding.
# When the row blocks alone fill the CPUs and W is large, the product runs instead as one call on
# all rows with the BLAS's own threads (:func:`product_on_blas`).

#: Narrowest column panel of a tiled projection.
PANEL_MIN = 512


def tiled(fmap):
    """Whether the public transform of dense input cuts ``fmap``'s projection into column panels:
    a float32 map with the fused cosine (cos32v2), a dense (d, k) table, k >= 2 PANEL_MIN and
    more than one usable CPU."""
    return (fmap.cosine_ == "cos32v2" and float(getattr(fmap, "density", 1.0)) >= 1.0
            and int(fmap.n_components) >= 2 * PANEL_MIN and usable_cpus() > 1)


def gemm_row_blocks(fmap):
    """``(block_rows, min_rows)`` of :func:`dask_kernels.maps._parallel.row_blocks` for the
    public transform: blocks of up to 1024 rows when :func:`tiled` (the columns fill the CPUs),
    else :data:`GEMM_BLOCKS` (at least 256 rows unless that leaves a CPU idle)."""
    return (GEMM_BLOCKS[0], None) if tiled(fmap) else GEMM_BLOCKS


class GemmRowBlocks:
    """Mixin of the maps whose public transform is an SGEMM in tiles (RFF, NRFF): their row
    blocks are :func:`gemm_row_blocks`."""

    @property
    def _row_blocks(self):
        """Row blocks of the public transform: large, for SGEMM's efficiency (see ``gemm_row_blocks``)."""
        return gemm_row_blocks(self)


def projection_tiles(fmap, n_rows):
    """``[(a, b, c0, c1), ...]``: rows ``a:b`` and columns ``c0:c1`` of each tile of the public
    transform of ``n_rows`` dense rows (:func:`tiled` maps; one panel per row block otherwise).

    With r row blocks and p usable CPUs, each row block is cut into ``p / gcd(r, p)`` panels
    (so the tiles split evenly over the CPUs; none at r >= 4 p, where the imbalance is small, nor
    below 64 rows), at most ``k // PANEL_MIN``, of equal widths rounded to multiples of 16 columns.
    """
    k = int(fmap.n_components)
    rows = row_blocks(n_rows, *gemm_row_blocks(fmap))
    panels = 1
    if tiled(fmap) and len(rows) < 4 * usable_cpus() and n_rows >= 64:  # (tiny inputs: one tile)
        cpus = usable_cpus()
        panels = max(1, min(cpus // math.gcd(len(rows), cpus), k // PANEL_MIN))
    cuts = [min(16 * round(i * k / (16 * panels)), k) for i in range(panels)] + [k]
    return [(a, b, c0, c1) for a, b in rows for c0, c1 in zip(cuts[:-1], cuts[1:])]


#: Smallest frequency table (d k values) whose product :func:`product_on_blas` runs with the
#: BLAS's threads: below it, the tiles' fused cosine (in cache) wins (measured 20,000 rows, d = 64
#: and 1024, k = 2048: 7-15 % more CPU time on the BLAS's threads), above it the shared packing
#: of W (measured d = 1024, k = 16384).
BLAS_TABLE_MIN = 2**23


def product_on_blas(fmap, X, W, out):
    """The phase ``out = X @ W`` on all rows with the BLAS's own threads (:class:`OnBlas`) when
    W has at least :data:`BLAS_TABLE_MIN` values and :func:`projection_tiles` cuts no column
    panels (the row blocks alone fill the CPUs), else None. Measured d = 1024, k = 16384, 8192
    rows, 2 CPUs: one 2-thread SGEMM 1.36 s against 1.53 s for one-thread calls on 1024-row
    blocks (each packs all 64 MB of W; 20,000 rows: 5.3 against 6.6 CPU-seconds). The BLAS
    splits the product by its thread count (``n_jobs``), so the output equals that of the row
    blocks, and of another ``n_jobs``, to the rounding of the product (``tests/maps/test_rff.py``)."""
    if W.size < BLAS_TABLE_MIN:
        return None
    tiles = projection_tiles(fmap, X.shape[0])
    if any(c1 - c0 < int(fmap.n_components) for _, _, c0, c1 in tiles):
        return None
    return OnBlas([partial(np.matmul, X, W, out=out)])


#: Rows per post-processing chunk: 16 rows of 16384 float32 features are 1 MiB, so the passes
#: after the matrix product (phase, cosine, scaling) run in L2 instead of memory (+15 % measured).
POST_ROWS = 16


def row_chunks(P, rows=POST_ROWS):
    """Consecutive row slices (views) of a block, for cache-friendly elementwise passes."""
    return (P[i : i + rows] for i in range(0, P.shape[0], rows))


# -- magnitude bounds of the input (the maps' ``max_abs_input``) ---------------------------------
#: Largest ``|normal|`` of the Box-Muller draws: ``unit64`` >= 2**-53, so
#: ``sqrt(-2 ln u) <= 8.5717`` (1 % added for libm rounding).
NORMAL_MAX = 1.01 * math.sqrt(-2.0 * math.log(2.0**-53))
#: Largest ``|tan(pi (u - 1/2))|`` for u in ``[2**-53, 1 - 2**-53]`` (1.98e15 with numpy's tan;
#: doubled for other libm rounding near the pole).
CAUCHY_MAX = 2.0 * 2.0**53 / math.pi


def projection_bound(dtype, d, w_max):
    """Largest ``|x|`` for which ``w . x`` cannot overflow in ``dtype`` when ``|w_i| <= w_max``.

    ``|w . x| <= d w_max max|x|``; a floating-point sum of d terms exceeds the exact sum of
    absolute values by at most the factor ``1 + d eps``, and the factor 2 leaves room for the
    phase. ``max(w_max, 1)`` also keeps ``x`` itself representable in ``dtype``.
    """
    f = np.finfo(dtype)
    return float(f.max) / (2.0 * d * max(float(w_max), 1.0) * (1.0 + d * float(f.eps)))
