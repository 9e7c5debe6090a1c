"""``cos32``: a float32 cosine in plain arithmetic, so that loops calling it vectorize.

Numba compiles ``np.cos`` to a scalar libm call (about 10 ns per value here); numpy's own SIMD
cosine needs a separate pass over memory. ``cos32`` is branch-free straight-line code that LLVM
vectorizes inside the loops that produce the argument (the projection's last pass), so the
cosine costs a fraction of a nanosecond and no temporary array.

Method, for a float32 ``x`` with ``|x| <= COS32_MAX = 2**13`` (the arguments the maps produce
are far smaller: ``w . x + b`` with w of the kernel's scale), all in float32 lanes:

* Range reduction (Cody-Waite): ``n = rint(x * 2/pi)``, ``r = ((x - n P1) - n P2) - n P3`` with
  pi/2 = P1 + P2 + P3, P1 and P2 of 11 significant bits, so that ``n P1`` and ``n P2`` are
  exact for ``|n| <= 2**13`` and ``x - n P1`` is exact (Sterbenz); ``|r| <= pi/4`` up to rounding.
* Cephes' ``sinf``/``cosf`` minimax polynomials on r, and the quadrant ``n mod 4`` picks
  ``+-cos(r)`` or ``+-sin(r)``, with selects (no branches).

Error bound (stated and tested in ``tests/test_cos32.py`` over a sweep of every binade of
``[0, COS32_MAX]``, around multiples of pi/2 and at the domain edges): ``|cos32(x) - cos(x)| <=
COS32_ABS_ERROR = 1.5e-7`` (about 1.3 ulp of 1.0), with ``cos(x)`` the exact cosine of the
float32 value ``x``. Beyond ``COS32_MAX`` (and for non-finite values) the feature kernels use
libm on the row concerned (:func:`cos32_row`), so every argument gets a cosine within that
bound and the fast path never sees an argument outside its domain.
"""

import numpy as np
from numba import njit

#: Largest |x| handled by the polynomial path.
COS32_MAX = np.float32(2.0**13)
#: Maximum absolute error of :func:`cos32` on ``[-COS32_MAX, COS32_MAX]`` (tested).
COS32_ABS_ERROR = 1.5e-7

_TWO_OVER_PI = np.float32(0.63661975)
_P1 = np.float32(1.5703125)  # pi/2 to 11 significant bits
_P2 = np.float32(4.837512969970703125e-4)  # the next 11 bits
_P3 = np.float32(7.549789954891882e-08)  # the rest
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
    x = np.float32(x)
    n = np.rint(x * _TWO_OVER_PI)
    r = ((x - n * _P1) - n * _P2) - n * _P3
    q = np.int32(n) & np.int32(3)
    z = r * r
    s = r + r * z * ((_S3 * z + _S2) * z + _S1)
    c = _ONE - _HALF * z + z * z * ((_C3 * z + _C2) * z + _C1)
    v = s if (q & np.int32(1)) != 0 else c
    return -v if ((q + np.int32(1)) & np.int32(2)) != 0 else v


@njit(nogil=True, cache=True, inline="always")
def _cos_exact(x):
    return np.float32(np.cos(np.float64(x)))


@njit(nogil=True, cache=True, inline="always")
def cos32_into(arg, m, out, offset, factor):
    """``out[offset + j] = factor * cos(arg[j])`` for j < m: :func:`cos32` (vectorized), or
    libm for the values beyond ``COS32_MAX`` (and non-finite ones) when there are any.

    Plain index ranges on purpose: a slice of a row would reach Numba as a non-contiguous
    array and the loop would not vectorize.
    """
    big = False
    for j in range(m):  # an or-reduction: vectorizes, unlike a max
        big |= not (abs(arg[j]) <= COS32_MAX)
    if not big:
        for j in range(m):
            out[offset + j] = cos32(arg[j]) * factor
    else:
        for j in range(m):
            a = arg[j]
            out[offset + j] = (cos32(a) if abs(a) <= COS32_MAX else _cos_exact(a)) * factor


@njit(nogil=True, cache=True)
def cos32_row(arg, out, factor):
    """``out[j] = factor * cos(arg[j])`` over a whole row (see :func:`cos32_into`); for two
    distinct arrays (in place, use :func:`cos32_inplace`)."""
    cos32_into(arg, arg.size, out, 0, factor)


@njit(nogil=True, cache=True, inline="always")
def cos32_inplace(row, factor):
    """``row[j] = factor * cos(row[j])``. Its own loop: with two names for one array LLVM's
    run-time overlap check fails and the scalar loop runs (measured 15x slower)."""
    big = False
    for j in range(row.size):
        big |= not (abs(row[j]) <= COS32_MAX)
    if not big:
        for j in range(row.size):
            row[j] = cos32(row[j]) * factor
    else:
        for j in range(row.size):
            a = row[j]
            row[j] = (cos32(a) if abs(a) <= COS32_MAX else _cos_exact(a)) * factor


@njit(nogil=True, cache=True)
def affine_cos32_rows(P, scale, phase, factor):
    """In place, row i of a float32 block: ``P[i, j] = factor * cos(P[i, j] * scale[i] + phase[j])``.

    The product and sum are rounded to float32 first (as a separate numpy pass would), then
    :func:`cos32_inplace`; one row at a time, so the passes run in cache.
    """
    for i in range(P.shape[0]):
        row = P[i]
        f = np.float32(scale[i])
        for j in range(row.size):
            row[j] = row[j] * f + phase[j]
        cos32_inplace(row, factor)


@njit(nogil=True, cache=True)
def cos32_array(x):
    """:func:`cos32_row` with factor 1 on a 1-D float32 array (tests, benchmarks)."""
    out = np.empty_like(x)
    cos32_row(x, out, np.float32(1.0))
    return out
