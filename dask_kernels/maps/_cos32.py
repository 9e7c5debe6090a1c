"""``cos32``: a float32 cosine in plain arithmetic, so that loops calling it vectorize.

Numba compiles ``np.cos`` to a scalar libm call (about 10 ns per value here); numpy's own SIMD
cosine needs a separate pass over memory. ``cos32`` is branch-free straight-line code that LLVM
vectorizes inside the loops that produce the argument (the projection's last pass), so the
cosine costs a fraction of a nanosecond and no temporary array.

Method, for a float32 ``x`` with ``|x| <= COS32_MAX = 2**24``:

* Range reduction in float64: ``n = rint(x * 2/pi)``, ``r = x - n pi/2`` with pi/2 split in
  three parts (29 + 29 significant bits, and the rest), so that ``n * P1`` and ``n * P2`` are
  exact for ``|n| < 2**24`` and ``x - n * P1`` is exact (Sterbenz): ``|r - (x - n pi/2)|`` is
  below 1e-15, i.e. the reduction is exact to float32 precision over the whole domain.
* ``r`` rounded to float32 (``|r| <= pi/4``), then Cephes' ``sinf``/``cosf`` minimax
  polynomials in float32, and the quadrant ``n mod 4`` picks ``+-cos(r)`` or ``+-sin(r)``.

Error bound (stated and tested in ``tests/test_cos32.py`` over a sweep of every binade of
``[0, 2**24]``, around multiples of pi/2 and at the domain edges): ``|cos32(x) - cos(x)| <=
COS32_ABS_ERROR = 1.2e-7`` (about 1 ulp of 1.0), with ``cos(x)`` the exact cosine of the float32
value ``x``. Beyond ``COS32_MAX`` the feature kernels fall back to libm on the rare values
concerned (:func:`cos32_row`), so every finite argument gets a cosine within that bound.
"""

import numpy as np
from numba import njit

#: Largest |x| handled by the polynomial path (float32 spacing there is 2).
COS32_MAX = np.float32(2.0**24)
#: Maximum absolute error of :func:`cos32` on ``[-COS32_MAX, COS32_MAX]`` (tested).
COS32_ABS_ERROR = 1.2e-7

_TWO_OVER_PI = 0.6366197723675814
_P1 = 1.570796325802803  # pi/2 to 29 significant bits
_P2 = 9.920935774287987e-10  # the next 29 bits
_P3 = 2.2517417741562176e-18  # the rest
_N_CLAMP = 2.0**25  # keeps the int conversion defined for arguments outside the domain
_S1 = np.float32(-1.6666654611e-1)
_S2 = np.float32(8.3321608736e-3)
_S3 = np.float32(-1.9515295891e-4)
_C1 = np.float32(4.166664568298827e-2)
_C2 = np.float32(-1.388731625493765e-3)
_C3 = np.float32(2.443315711809948e-5)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)


@njit(nogil=True, cache=True, inline="always")
def cos32(x):
    """Cosine of a float32 with ``|x| <= COS32_MAX``, to ``COS32_ABS_ERROR`` (float32 result)."""
    xd = np.float64(x)
    n = np.rint(xd * _TWO_OVER_PI)
    r = np.float32(((xd - n * _P1) - n * _P2) - n * _P3)
    q = np.int32(min(max(n, -_N_CLAMP), _N_CLAMP)) & np.int32(3)
    z = r * r
    s = r + r * z * ((_S3 * z + _S2) * z + _S1)
    c = _ONE - _HALF * z + z * z * ((_C3 * z + _C2) * z + _C1)
    v = s if (q & np.int32(1)) != 0 else c
    return -v if ((q + np.int32(1)) & np.int32(2)) != 0 else v


@njit(nogil=True, cache=True, inline="always")
def _cos_exact(x):
    return np.float32(np.cos(np.float64(x)))


@njit(nogil=True, cache=True)
def cos32_row(arg, out, factor):
    """``out[j] = factor * cos(arg[j])``: :func:`cos32` (vectorized), or libm for the values
    beyond ``COS32_MAX`` (and non-finite ones) when the row has any. ``arg`` may be ``out``."""
    big = False
    for j in range(arg.size):  # an or-reduction: vectorizes, unlike a max
        big |= not (abs(arg[j]) <= COS32_MAX)
    if not big:
        for j in range(arg.size):
            out[j] = cos32(arg[j]) * factor
    else:
        for j in range(arg.size):
            a = arg[j]
            out[j] = (cos32(a) if abs(a) <= COS32_MAX else _cos_exact(a)) * factor


@njit(nogil=True, cache=True)
def affine_cos32_rows(P, scale, phase, factor):
    """In place, row i of a float32 block: ``P[i, j] = factor * cos(P[i, j] * scale[i] + phase[j])``.

    The product and sum are rounded to float32 first (as a separate numpy pass would), then
    :func:`cos32_row`; one row at a time, so the passes run in cache.
    """
    for i in range(P.shape[0]):
        row = P[i]
        f = np.float32(scale[i])
        for j in range(row.size):
            row[j] = row[j] * f + phase[j]
        cos32_row(row, row, factor)


@njit(nogil=True, cache=True)
def cos32_array(x):
    """:func:`cos32_row` with factor 1 on a 1-D float32 array (tests, benchmarks)."""
    out = np.empty_like(x)
    cos32_row(x, out, np.float32(1.0))
    return out
