"""Exact sums of floats, mergeable in any order: the same bits for any chunking of the rows.

A floating-point sum over blocks depends on how the rows are cut into blocks (rounding is not
associative). Statistics that a spec records (the mean of ``center="mean"``, the variance
behind ``gamma="scale"``) must not, so they are summed exactly here:

* every float64 value is ``m * 2**e`` with an integer mantissa ``|m| < 2**53`` (``frexp``);
* a sum is a fixed-point integer in 32-bit limbs, int64 each (``limb l`` weighs
  ``2**(32 (base + l))``): adding ``m * 2**e`` adds three nonnegative pieces below ``2**33`` to
  three limbs, exactly; the limbs are normalized (carries moved up) before they could overflow;
* integer addition is associative, so per-block sums merged in any tree give the same
  integers, and the final float is the correctly rounded value of the exact rational result
  (Python's ``Fraction``), a function of the multiset of values only.

Squares (for a variance) are summed exactly too: Dekker's split writes ``x = xh + xl`` with
26-bit halves, so ``x**2 = xh*xh + 2*xh*xl + xl*xl``, three products that are exact in float64
(for ``|x| <= SQUARE_MAX``; a product below the normal range may round, but to the same bits
for the same x, so the sum is still independent of the chunking).

A block's sums span only the limbs its values reach (a few per row of sums for ordinary data),
so per-column sums of a wide block stay small.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from numba import njit

#: Largest ``|x|`` whose square is summed (Dekker's split of ``x`` and ``x**2`` stay finite).
SQUARE_MAX = 2.0**500
_MASK = np.int64(0xFFFFFFFF)
#: Additions of one row of sums between normalizations: each adds < 2**33 to a limb, and the
#: limbs, int64, hold 2**63.
_ADDS_PER_NORMALIZE = 2**28
#: Bit positions are offset by this so that the lowest bit of a subnormal (2**-1074) is 0.
_POS0 = 1074
_FRAC = np.int64((1 << 52) - 1)


@njit(nogil=True, cache=True, inline="always")
def _term(x, acc, r, base, buf, ibuf):
    """Add float64 ``x`` to row ``r`` of the limbs ``acc`` (lowest limb ``base``): its bits
    (through ``buf``, a 1-element float64 array, and ``ibuf``, its int64 view) give
    ``x = +-m * 2**(p - _POS0)`` with ``m < 2**53``."""
    if x == 0.0:
        return
    buf[0] = x
    b = ibuf[0]
    ex = (b >> 52) & 0x7FF
    m = b & _FRAC
    if ex:
        m |= np.int64(1) << 52
    p = ex - 1 if ex else np.int64(0)  # ex - 1075 + _POS0; subnormals: -1074 + _POS0
    q = p - 32 * base
    i, s = q >> 5, q & 31
    t0 = (m & _MASK) << s  # < 2**63
    t1 = (m >> 32) << s  # < 2**52
    v0, v1, v2 = t0 & _MASK, (t0 >> 32) + (t1 & _MASK), t1 >> 32
    if b < 0:
        acc[r, i] -= v0
        acc[r, i + 1] -= v1
        acc[r, i + 2] -= v2
    else:
        acc[r, i] += v0
        acc[r, i + 1] += v1
        acc[r, i + 2] += v2


@njit(nogil=True, cache=True, inline="always")
def _square(x, acc, r, base, buf, ibuf):
    """Add ``x**2`` exactly (Dekker's split: three exact products) to row ``r``."""
    c = 134217729.0 * x  # 2**27 + 1
    xh = c - (c - x)
    xl = x - xh
    _term(xh * xh, acc, r, base, buf, ibuf)
    _term(2.0 * xh * xl, acc, r, base, buf, ibuf)
    _term(xl * xl, acc, r, base, buf, ibuf)


@njit(nogil=True, cache=True)
def _normalize(acc):
    """Move each limb's bits above 32 into the next limb (the top limb keeps the sign)."""
    for r in range(acc.shape[0]):
        for i in range(acc.shape[1] - 1):
            c = acc[r, i] >> 32  # floor division by 2**32
            acc[r, i] -= c << 32
            acc[r, i + 1] += c


@njit(nogil=True, cache=True)
def _row(vals, cols, by_column, squares, unit, acc, base, buf, ibuf):
    """Sums of one row's values (``unit``: of the row divided by its Euclidean norm, computed
    as CoRE and NRFF do): into row ``cols[q]`` of ``acc`` (``by_column``), else into row 0,
    and their squares (``squares``) into row ``n_columns + cols[q]`` (``by_column``: ``acc``
    has twice the columns' rows), else into row 1."""
    half = acc.shape[0] // 2
    m, s = 0.0, 0.0
    if unit:
        for q in range(vals.size):
            m = max(m, abs(np.float64(vals[q])))
        if m > 0.0:
            for q in range(vals.size):
                t = np.float64(vals[q]) / m
                s += t * t
    inv = 1.0 / np.sqrt(s) if s > 0.0 else 0.0
    for q in range(vals.size):
        x = np.float64(vals[q])
        if x == 0.0:  # adds nothing (and dense blocks of mostly zeros are common)
            continue
        if unit:
            x = (x / m) * inv
        _term(x, acc, cols[q] if by_column else 0, base, buf, ibuf)
        if squares:
            _square(x, acc, half + cols[q] if by_column else 1, base, buf, ibuf)


@njit(nogil=True, cache=True)
def _dense(X, by_column, squares, unit, acc, base):
    buf = np.empty(1)
    ibuf = buf.view(np.int64)
    cols = np.arange(X.shape[1])
    per_row = (4 if squares else 1) * (1 if by_column else X.shape[1])
    done = 0
    for r in range(X.shape[0]):
        _row(X[r], cols, by_column, squares, unit, acc, base, buf, ibuf)
        done += per_row
        if done >= _ADDS_PER_NORMALIZE:
            _normalize(acc)
            done = 0
    _normalize(acc)


@njit(nogil=True, cache=True)
def _csr(data, indices, indptr, by_column, squares, unit, acc, base):
    buf = np.empty(1)
    ibuf = buf.view(np.int64)
    done = 0
    for r in range(indptr.size - 1):
        a, b = indptr[r], indptr[r + 1]
        _row(data[a:b], indices[a:b], by_column, squares, unit, acc, base, buf, ibuf)
        done += (4 if squares else 1) if by_column else 4 * (b - a)
        if done >= _ADDS_PER_NORMALIZE:
            _normalize(acc)
            done = 0
    _normalize(acc)


def _bit_range(X, squares, unit):
    """Lowest and highest bit position (offset by ``_POS0``) that the terms of a block reach,
    or None for a block without nonzeros: from its smallest nonzero and largest ``|x|``."""
    v = X.data if sp.issparse(X) else X
    a = np.abs(v)
    hi = float(a.max(initial=0.0))
    if hi == 0.0:
        return None
    if unit:  # |u| <= 1 (with rounding), and any bit down to the subnormals
        return 0, _POS0 + 3
    lo = float(np.min(a, where=v != 0, initial=np.inf))
    e_lo, e_hi = np.frexp(lo)[1] - 53, np.frexp(hi)[1]  # lo is a multiple of 2**e_lo, hi < 2**e_hi
    if squares:  # x, xh and xl are multiples of 2**e_lo: so are the products of 2**(2 e_lo)
        e_lo, e_hi = 2 * e_lo, 2 * e_hi + 1
    return max(int(e_lo) + _POS0, 0), int(e_hi) + _POS0


def block_sums(X, *, by_column=False, squares=False, unit=False):
    """Exact sums of a validated block (C-contiguous float ndarray or canonical CSR): the sum of
    every column (``by_column``), or of all entries; with ``squares`` also the sum of their
    squares (after the columns' sums, one per column, with ``by_column``); ``unit``: of the rows
    divided by their norms. Returns ``(base, limbs)``, limbs int64 of shape (rows of sums, L),
    for :func:`merge_sums` and :func:`exact_values`."""
    k = (2 if squares else 1) * (X.shape[1] if by_column else 1)
    big = float(abs(X).max() if sp.issparse(X) else np.abs(X).max(initial=0.0)) if squares and X.shape[0] else 0.0
    if big > SQUARE_MAX and not unit:
        raise ValueError(f"a value's magnitude is above 2**500 ({SQUARE_MAX:.3g}): its square is not summed "
                         "exactly; rescale the input")
    rng = _bit_range(X, squares, unit) if X.shape[0] else None
    if rng is None:
        return 0, np.zeros((k, 0), np.int64)
    # a term's 53-bit window may start up to 52 bits below its lowest set bit (e.g. xl * xl)
    base = max(rng[0] - 53, 0) >> 5
    # limbs up to two above the highest bit: the carries of up to 2**40 additions fit
    acc = np.zeros((k, (rng[1] >> 5) - base + 3), np.int64)
    if sp.issparse(X):
        _csr(X.data, X.indices, X.indptr, by_column, squares, unit, acc, base)
    else:
        _dense(X, by_column, squares, unit, acc, base)
    return base, acc


def merge_sums(*parts):
    """The sum of :func:`block_sums` results (None entries skipped): exact, so the same for
    any order and grouping."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    used = [p for p in parts if p[1].shape[1]]
    if not used:
        return parts[0]
    lo = min(b for b, _ in used)
    hi = max(b + a.shape[1] for b, a in used) + 1  # one more limb for the carries of the merge
    acc = np.zeros((used[0][1].shape[0], hi - lo), np.int64)
    for b, a in used:
        acc[:, b - lo:b - lo + a.shape[1]] += a  # normalized limbs below 2**32: no overflow
    _normalize(acc)
    return lo, acc


def exact_values(sums):
    """The exact values of :func:`block_sums` / :func:`merge_sums` rows, as Fractions."""
    base, acc = sums
    out = []
    shift = 32 * base - _POS0
    for row in acc:
        v = 0
        for limb in row[::-1].tolist():
            v = (v << 32) + limb
        out.append(Fraction(v << shift) if shift >= 0 else Fraction(v, 1 << -shift))
    return out


def exact_mean(sums, n):
    """Column means of per-column sums over ``n`` rows, each the correctly rounded float64 of
    the exact mean (within the columns' range, so finite)."""
    return np.array([float(v / n) for v in exact_values(sums)], dtype=np.float64)


def exact_moments(sums, n):
    """``(means, variances)`` from sums with ``squares`` over ``n`` values each: lists of exact
    Fractions, one per column (``by_column``) or one of all entries."""
    values = exact_values(sums)
    means = [s / n for s in values[:len(values) // 2]]
    return means, [q / n - m * m for q, m in zip(values[len(values) // 2:], means)]


def exact_variance(sums, n_entries):
    """``(mean, variance)`` of ``n_entries`` values (the implicit zeros of sparse input
    included) from sums with ``squares``, as exact Fractions."""
    (mean,), (var,) = exact_moments(sums, n_entries)
    return mean, var
