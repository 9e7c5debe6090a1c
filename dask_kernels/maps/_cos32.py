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
libm on the group of 16 values concerned (:func:`cos32_into`), so every argument gets a cosine
within that bound and the fast path never sees an argument outside its domain.

The loops run 16 lanes at a time through a small LLVM intrinsic (one 512-bit vector: Numba's
own loop vectorizer stops at 256 bits on this CPU, where numpy's cosine uses 512), with exactly
the scalar function's operations, so vector lanes and scalar remainders give identical bits.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from .._compat import cgutils

#: Largest |x| handled by the polynomial path.
COS32_MAX = np.float32(2.0**13)
#: Maximum absolute error of :func:`cos32` on ``[-COS32_MAX, COS32_MAX]`` (tested).
COS32_ABS_ERROR = 1.5e-7

# Constants as float32 scalars (each float64 literal rounded once to float32).
_TWO_OVER_PI, _HALF, _ONE = np.float32([0.63661975, 0.5, 1.0])
# pi/2 = P1 + P2 + P3: P1 and P2 of 11 significant bits, P3 the rest
_P1, _P2, _P3 = np.float32([1.5703125, 4.837512969970703125e-4, 7.549789954891882e-08])
# Cephes' sinf and cosf minimax coefficients
_S1, _S2, _S3 = np.float32([-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4])
_C1, _C2, _C3 = np.float32([4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5])


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


_LANES = 16


def _vectors():
    """The codegens' 16-lane float32 and int32 vector types and their constant makers."""
    vty = ir.VectorType(ir.FloatType(), _LANES)
    ity = ir.VectorType(ir.IntType(32), _LANES)

    def const(v):
        return ir.Constant(vty, [float(np.float32(v))] * _LANES)

    def iconst(v):
        return ir.Constant(ity, [v] * _LANES)

    return vty, ity, const, iconst


def _all_inside(builder, absx, const):
    """An i1 that is true when every lane of ``absx`` is <= COS32_MAX (false for NaN)."""
    inside = builder.fcmp_ordered("<=", absx, const(COS32_MAX))
    return builder.icmp_unsigned("==", builder.bitcast(inside, ir.IntType(_LANES)),
                                 ir.Constant(ir.IntType(_LANES), (1 << _LANES) - 1))


@intrinsic
def _cos32_lanes(typingctx, arg, start, out, ostart, factor):
    """``out[ostart:ostart + 16] = factor * cos32(arg[start:start + 16])`` in one 512-bit vector,
    if all 16 arguments are within ``[-COS32_MAX, COS32_MAX]`` (returns True); else nothing is
    written (returns False) and the caller takes the scalar path for these 16.

    The same IEEE operations in the same order as :func:`cos32` (no contraction), so lanes and
    the scalar remainder give identical bits; written as vector IR because Numba's loop
    vectorizer stops at 256 bits here, where numpy's own cosine uses 512.
    """
    ok = all(isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" for a in (arg, out))
    if not ok:
        return None
    if not (arg.dtype == out.dtype == factor == types.float32):
        # only float32 has a vector path (float64 kernels compile this branch but never run it)
        return types.boolean(arg, types.intp, out, types.intp, factor), lambda c, b, s, a: cgutils.false_bit

    def codegen(context, builder, sig, args):
        vty, ity, const, iconst = _vectors()

        def ptr(ary_type, ary_val, index):
            ary = context.make_array(ary_type)(context, builder, ary_val)
            return builder.bitcast(builder.gep(ary.data, [index], inbounds=True), vty.as_pointer())

        src = ptr(sig.args[0], args[0], args[1])
        dst = ptr(sig.args[2], args[2], args[3])
        x = builder.load(src, align=4)
        absx = builder.call(cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty]),
                                                           "llvm.fabs.v16f32"), [x])
        ok = _all_inside(builder, absx, const)
        with builder.if_then(ok, likely=True):
            _emit_cos(builder, x, dst, args[4], vty, ity, const, iconst)
        return ok

    return types.boolean(arg, types.intp, out, types.intp, factor), codegen


def _emit_cos(builder, x, dst, factor, vty, ity, const, iconst):
    """The vector body of :func:`_cos32_lanes`: cos32 of x, times factor, stored at dst."""
    rint = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty]), "llvm.rint.v16f32")
    n = builder.call(rint, [builder.fmul(x, const(_TWO_OVER_PI))])
    r = builder.fsub(builder.fsub(builder.fsub(x, builder.fmul(n, const(_P1))), builder.fmul(n, const(_P2))),
                     builder.fmul(n, const(_P3)))
    q = builder.and_(builder.fptosi(n, ity), iconst(3))
    z = builder.fmul(r, r)
    sp = builder.fadd(builder.fmul(builder.fadd(builder.fmul(const(_S3), z), const(_S2)), z), const(_S1))
    sv = builder.fadd(r, builder.fmul(builder.fmul(r, z), sp))
    cp = builder.fadd(builder.fmul(builder.fadd(builder.fmul(const(_C3), z), const(_C2)), z), const(_C1))
    cv = builder.fadd(builder.fsub(const(_ONE), builder.fmul(const(_HALF), z)), builder.fmul(builder.fmul(z, z), cp))
    odd = builder.icmp_signed("!=", builder.and_(q, iconst(1)), iconst(0))
    v = builder.select(odd, sv, cv)
    neg = builder.icmp_signed("!=", builder.and_(builder.add(q, iconst(1)), iconst(2)), iconst(0))
    v = builder.select(neg, builder.fneg(v), v)
    fac = builder.insert_element(ir.Constant(vty, ir.Undefined), factor, ir.Constant(ir.IntType(32), 0))
    fac = builder.shuffle_vector(fac, fac, ir.Constant(ity, [0] * _LANES))
    builder.store(builder.fmul(v, fac), dst, align=4)


@njit(nogil=True, cache=True, inline="always")
def _cos_any(x):
    """cos32 inside its domain, libm (rounded to float32) outside it."""
    return cos32(x) if abs(x) <= COS32_MAX else np.float32(np.cos(np.float64(x)))


@njit(nogil=True, cache=True, inline="always")
def cos32_into(arg, m, out, offset, factor):
    """``out[offset + j] = factor * cos(arg[j])`` for j < m: :func:`cos32`, 16 lanes at a time,
    and libm for the values beyond ``COS32_MAX`` (and non-finite ones), which take the scalar
    path with the 16 values around them. ``arg`` may be ``out`` (with ``offset`` 0)."""
    j0 = m - m % _LANES
    for j in range(0, j0, _LANES):
        if not _cos32_lanes(arg, j, out, offset + j, factor):
            for i in range(j, j + _LANES):
                out[offset + i] = _cos_any(arg[i]) * factor
    for j in range(j0, m):
        out[offset + j] = _cos_any(arg[j]) * factor


@njit(nogil=True, cache=True)
def cos32_row(arg, out, factor):
    """``out[j] = factor * cos(arg[j])`` over a whole row (see :func:`cos32_into`)."""
    cos32_into(arg, arg.size, out, 0, factor)


@njit(nogil=True, cache=True)
def affine_cos32_rows(P, scale, phase, factor):
    """In place, row i of a float32 block: ``P[i, j] = factor * cos(P[i, j] * scale[i] + phase[j])``.

    The product and sum are rounded to float32 first (as a separate numpy pass would), then
    :func:`cos32_into`; one row at a time, so the passes run in cache.
    """
    for i in range(P.shape[0]):
        row = P[i]
        f = np.float32(scale[i])
        for j in range(row.size):
            row[j] = row[j] * f + phase[j]
        cos32_into(row, row.size, row, 0, factor)


@njit(nogil=True, cache=True)
def cos32_array(x):
    """:func:`cos32_row` with factor 1 on a 1-D float32 array (tests, benchmarks)."""
    out = np.empty_like(x)
    cos32_row(x, out, np.float32(1.0))
    return out



# -- cos32v2: the same bound in half the operations ----------------------------------------------
#
# cos32 above spends ~30 vector operations per 16 values (two polynomials, a select, separate
# multiplies and adds; about 1.4 ns per value measured, scalar-libm speed). cos32v2 reduces by pi
# instead of pi/2, so that one even polynomial covers every argument and the quadrant is a sign
# bit, and it uses fused multiply-adds: about 15 operations per vector. Every operation is IEEE-defined
# (fma, add, bit operations: no contraction left to the compiler), so the plain loop that LLVM
# vectorizes gives the same bits in vector lanes and in the scalar remainder, at any width.
#
# Method, for a float32 x with |x| <= COS32_MAX:
# * t = fma(x, 1/pi, M), M = 1.5 * 2**23: x / pi rounded to the nearest integer n = t - M (exact);
#   the lowest mantissa bit of t is n's parity (M's low bits are zero, n + 2**22 has n's parity).
# * r = x - n pi in three fmas (Cody-Waite, pi = Q1 + Q2 + Q3, Q1 and Q2 of 11 significant
#   bits): n Q1 and n Q2 are exact for |n| <= 2**12 (> COS32_MAX / pi), and x - n Q1 is exact
#   (Sterbenz: x / (n Q1) is in [1/2, 3/2] for n != 0); |r| <= pi/2 up to rounding.
# * cos(x) = (-1)**n cos(r), cos(r) = 1 + z (C1 + C2 z + ... + C5 z**4), z = r**2: coefficients
#   from a weighted least-squares fit on |r| <= pi/2 (error 4.8e-9 in exact arithmetic, after
#   rounding them to float32); the sign flip is an xor of the parity bit into the sign bit.

_MAGIC, _INV_PI = np.float32([1.5 * 2**23, 1.0 / np.pi])  # adding _MAGIC rounds to an integer
# pi = Q1 + Q2 + Q3: Q1 and Q2 of 11 significant bits, Q3 the rest (rounded)
_Q1, _Q2, _Q3 = np.float32([3.140625, 9.67502593994140625e-04, np.pi - 3.140625 - 9.67502593994140625e-04])
_K1, _K2, _K3, _K4, _K5 = np.float32(
    [-0.5, 0.04166664183139801, -0.0013888402609154582, 2.4761811800999567e-05, -2.607571332191583e-07])


# The intrinsics below also type for float64 so that kernels shared with float64 maps compile
# (those never call the cos32v2 path at run time); cos32v2 itself is defined on float32.
def _llvm_float(t):
    return ir.FloatType() if t == types.float32 else ir.DoubleType()


@intrinsic
def fma32(typingctx, a, b, c):
    """``a * b + c`` rounded once (IEEE fused multiply-add): ``llvm.fma.f32``, which LLVM
    vectorizes (``vfmadd...ps``) and evaluates exactly the same way in every lane."""
    if not (a == b == c and a in (types.float32, types.float64)):
        return None

    def codegen(context, builder, sig, args):
        ft = _llvm_float(sig.return_type)
        name = "llvm.fma.f32" if sig.return_type == types.float32 else "llvm.fma.f64"
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ft, [ft] * 3), name)
        return builder.call(fn, args)

    return a(a, b, c), codegen


@intrinsic
def _sign_of_parity(typingctx, t, v):
    """``v`` with its sign flipped when the lowest mantissa bit of ``t`` is set."""
    if not (t == v and t in (types.float32, types.float64)):
        return None

    def codegen(context, builder, sig, args):
        bits = sig.return_type.bitwidth
        it = ir.IntType(bits)
        tb = builder.bitcast(args[0], it)
        vb = builder.bitcast(args[1], it)
        flip = builder.shl(tb, ir.Constant(it, bits - 1))
        return builder.bitcast(builder.xor(vb, flip), _llvm_float(sig.return_type))

    return t(t, v), codegen


@njit(nogil=True, cache=True, inline="always")
def cos32v2(x):
    """Cosine of a float32 with ``|x| <= COS32_MAX``, to ``COS32V2_ABS_ERROR`` (float32 result)."""
    x = np.float32(x)
    t = fma32(x, _INV_PI, _MAGIC)
    n = t - _MAGIC
    r = fma32(n, -_Q1, x)
    r = fma32(n, -_Q2, r)
    r = fma32(n, -_Q3, r)
    z = r * r
    p = fma32(_K5, z, _K4)
    p = fma32(p, z, _K3)
    p = fma32(p, z, _K2)
    p = fma32(p, z, _K1)
    return _sign_of_parity(t, fma32(p, z, np.float32(1.0)))


#: Maximum absolute error of :func:`cos32v2` on ``[-COS32_MAX, COS32_MAX]`` (tested; a one-off
#: check of every float32 in ``[0, COS32_MAX]`` found 1.4701e-7, at x = 2690.79).
COS32V2_ABS_ERROR = 1.5e-7
#: Values per chunk of the v2 row kernels: 1 KiB of float32, in L1 between the passes.
_CHUNK = 256
_MAX_BITS = np.int32(np.float32(COS32_MAX).view(np.int32))


@intrinsic
def _abs_bits(typingctx, x):
    """The bits of ``|x|`` as an int32 (float32): ordered like |x|, NaN and inf above every finite
    value, so an integer max over a chunk (which vectorizes; a float max with NaN does not) tells
    whether every value is within the domain."""
    if x not in (types.float32, types.float64):
        return None

    def codegen(context, builder, sig, args):
        bits = sig.args[0].bitwidth
        it = ir.IntType(bits)
        return builder.and_(builder.bitcast(args[0], it), ir.Constant(it, (1 << (bits - 1)) - 1))

    return (types.int32 if x == types.float32 else types.int64)(x), codegen


@njit(nogil=True, cache=True, inline="always")
def _cos32v2_any(x):
    """cos32v2 inside its domain, libm (rounded to float32) outside it (and for non-finite x)."""
    return cos32v2(x) if abs(x) <= COS32_MAX else np.float32(np.cos(np.float64(x)))


@njit(nogil=True, cache=True, inline="always")
def _cos32v2_span(src, dst, factor, inside):
    """``dst[j] = factor * cos(src[j])`` (same-length 1-D views): cos32v2 when the caller knows
    every value is ``inside`` the domain (a branch-free loop LLVM vectorizes; the caller passes a
    constant, so the test folds away), else :func:`_cos32v2_any`."""
    for j in range(src.size):
        dst[j] = (cos32v2(src[j]) if inside else _cos32v2_any(src[j])) * factor


@njit(nogil=True, cache=True, inline="always")
def _max_abs_bits(src):
    m = np.int32(0)
    for j in range(src.size):
        m = max(m, _abs_bits(src[j]))
    return m


@njit(nogil=True, cache=True)
def cos32v2_into(arg, m, out, offset, factor):
    """``out[offset + j] = factor * cos(arg[j])`` for j < m with :func:`cos32v2`, and libm for
    the chunks holding values beyond ``COS32_MAX`` (or non-finite ones). ``arg`` may be ``out``
    (offset 0)."""
    for a in range(0, m, _CHUNK):
        b = min(a + _CHUNK, m)
        src = arg[a:b]
        dst = out[offset + a : offset + b]
        if _max_abs_bits(src) <= _MAX_BITS:
            _cos32v2_span(src, dst, factor, True)
        else:
            _cos32v2_span(src, dst, factor, False)


def _at(scale, i):
    """``scale[i]`` for an array, ``scale`` itself for one value (inside jitted code)."""


@overload(_at, inline="always")
def _at_overload(scale, i):
    if isinstance(scale, types.Array):
        return lambda scale, i: scale[i]
    return lambda scale, i: scale


def _affine_lanes(groups):
    """The intrinsic :func:`_affine_cos32v2_lanes` (``groups`` = 1) or
    :func:`_affine_cos32v2_groups`: ``groups`` consecutive vectors of 16 lanes from ``start``,
    written only if every argument among them is inside the domain."""

    def typer(typingctx, src, scale, phase, dst, factor, start, so, po, do):
        arrays = (src, phase, dst) + ((scale,) if isinstance(scale, types.Array) else ())
        if not all(isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" for a in arrays):
            return None
        sig = types.boolean(src, scale, phase, dst, factor, types.intp, types.intp, types.intp, types.intp)
        scalar_scale = scale if not isinstance(scale, types.Array) else scale.dtype
        if not (src.dtype == phase.dtype == dst.dtype == scalar_scale == factor == types.float32):
            # float64 kernels compile this branch but never run it
            return sig, lambda c, b, s, a: cgutils.false_bit

        def codegen(context, builder, sig, args):
            vty, ity, const, _ = _vectors()

            def splat(value):
                vec = builder.insert_element(ir.Constant(vty, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
                return builder.shuffle_vector(vec, vec, ir.Constant(ity, [0] * _LANES))

            def load(ary_type, ary_val, g, offset=None):
                ary = context.make_array(ary_type)(context, builder, ary_val)
                at = builder.add(args[5], ir.Constant(args[5].type, _LANES * g))
                at = at if offset is None else builder.add(at, offset)
                ptr = builder.bitcast(builder.gep(ary.data, [at], inbounds=True), vty.as_pointer())
                return builder.load(ptr, align=4), ptr

            xs, masks = [], []
            for g in range(groups):  # every argument first: one test for all the groups
                x, _ = load(sig.args[0], args[0], g)
                f = load(sig.args[1], args[1], g, args[6])[0] if isinstance(sig.args[1], types.Array) else splat(args[1])
                x = builder.fadd(builder.fmul(x, f), load(sig.args[2], args[2], g, args[7])[0])
                xs.append(x)
                masks.append(builder.fcmp_ordered("<=", builder.call(_v16_function(builder, "fabs"), [x]),
                                                  const(COS32_MAX)))
            inside = masks[0]
            for m in masks[1:]:
                inside = builder.and_(inside, m)
            ok = builder.icmp_unsigned("==", builder.bitcast(inside, ir.IntType(_LANES)),
                                       ir.Constant(ir.IntType(_LANES), (1 << _LANES) - 1))
            with builder.if_then(ok, likely=True):
                for g, x in enumerate(xs):
                    _, dst_ptr = load(sig.args[3], args[3], g, args[8])
                    builder.store(builder.fmul(_emit_cos32v2(builder, x), splat(args[4])), dst_ptr, align=4)
            return ok

        return sig, codegen

    typer.__name__ = typer.__qualname__ = "_affine_cos32v2_lanes" if groups == 1 else "_affine_cos32v2_groups"
    return intrinsic(typer)


#: ``_affine_cos32v2_lanes(src, scale, phase, dst, factor, start, so, po, do)``:
#: ``dst[do + j] = factor * cos32v2(fl(fl(src[j] * scale[so + j]) + phase[po + j]))`` for
#: ``s <= j < s + 16`` (s = start) in one 512-bit vector, ``scale`` an array or one value, if
#: all 16 arguments are within ``[-COS32_MAX, COS32_MAX]`` (returns True); else nothing is
#: written (False). The offsets address rows of flattened tables without array views.
#:
#: The operations of :func:`cos32v2` in the same order (fma, subtract, multiply, xor; no
#: contraction), so lanes and the scalar path give identical bits; written as vector IR
#: because LLVM's loop vectorizer picks 256-bit vectors for the loop on this CPU.
_affine_cos32v2_lanes = _affine_lanes(1)

#: Vectors per step of the whole-array kernel (:func:`_affine_cos32v2_fused`): independent
#: polynomials in flight hide their latency (one thread, rows of 8192 values in L2, best of 40:
#: 0.43-0.55 ns per value with one vector per step, 0.35-0.37 with four, 0.33 with eight).
_GROUPS = 4
#: :func:`_affine_cos32v2_lanes` over ``_GROUPS`` consecutive vectors: all ``16 _GROUPS`` values
#: written if all their arguments are inside the domain (True), else none (False).
_affine_cos32v2_groups = _affine_lanes(_GROUPS)


def _v16_function(builder, name):
    """``llvm.<name>.v16f32`` (fma takes three vectors, the others one)."""
    vty = ir.VectorType(ir.FloatType(), _LANES)
    return cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(vty, [vty] * (3 if name == "fma" else 1)), f"llvm.{name}.v16f32")


def _emit_cos32v2(builder, x):
    """:func:`cos32v2` of a 16-lane float32 vector, the same operations in the same order."""
    vty, ity, const, _ = _vectors()
    fma = _v16_function(builder, "fma")
    t = builder.call(fma, [x, const(_INV_PI), const(_MAGIC)])
    n = builder.fsub(t, const(_MAGIC))
    r = builder.call(fma, [n, const(-_Q1), x])
    r = builder.call(fma, [n, const(-_Q2), r])
    r = builder.call(fma, [n, const(-_Q3), r])
    z = builder.fmul(r, r)
    q = builder.call(fma, [const(_K5), z, const(_K4)])
    for k in (_K3, _K2, _K1):
        q = builder.call(fma, [q, z, const(k)])
    c = builder.call(fma, [q, z, const(1.0)])
    flip = builder.shl(builder.bitcast(t, ity), ir.Constant(ity, [31] * _LANES))
    return builder.bitcast(builder.xor(builder.bitcast(c, ity), flip), vty)


def _transpose16(builder, rows):
    """The 16 x 16 transpose of 16 vectors of 16 lanes (``out[l][m] = rows[m][l]``), in four
    rounds of two-source shuffles (64 in all)."""
    v = list(rows)
    b = _LANES // 2
    while b >= 1:
        lo = [(q // (2 * b)) * 2 * b + q % (2 * b) + (0 if q % (2 * b) < b else _LANES - b) for q in range(_LANES)]
        hi = [i + b for i in lo]
        lo_mask = ir.Constant(ir.VectorType(ir.IntType(32), _LANES), lo)
        hi_mask = ir.Constant(ir.VectorType(ir.IntType(32), _LANES), hi)
        for j in range(_LANES):
            if j & b == 0:
                a, c = v[j], v[j + b]
                v[j], v[j + b] = builder.shuffle_vector(a, c, lo_mask), builder.shuffle_vector(a, c, hi_mask)
        b //= 2
    return v


@intrinsic
def _affine_cos32v2_transposed(typingctx, src, so, scale, phase, po, dst, do, stride, factor):
    """Sixteen values of 16 rows, stored by value (``src[so + 16 m + l]`` is value m of row l, as
    in Fastfood's row-group kernel), to the rows' layout: ``dst[do + l stride + m] = factor *
    cos32v2(fl(fl(src[so + 16 m + l] * scale[po + m]) + phase[po + m]))`` for m, l < 16, if all
    256 arguments are within ``[-COS32_MAX, COS32_MAX]`` (returns True); else nothing is written
    (False). Per value, the operations of :func:`_affine_cos32v2_lanes`, so the same bits."""
    arrays = (src, scale, phase, dst)
    if not all(isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" for a in arrays):
        return None
    sig = types.boolean(src, types.intp, scale, phase, types.intp, dst, types.intp, types.intp, factor)
    if not (src.dtype == scale.dtype == phase.dtype == dst.dtype == factor == types.float32):
        return sig, lambda c, b, s, a: cgutils.false_bit

    def codegen(context, builder, sig, args):
        vty, ity, const, _ = _vectors()
        data = [context.make_array(sig.args[i])(context, builder, args[i]).data for i in (0, 2, 3, 5)]
        src_p, scale_p, phase_p, dst_p = data

        def splat(value):
            vec = builder.insert_element(ir.Constant(vty, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
            return builder.shuffle_vector(vec, vec, ir.Constant(ity, [0] * _LANES))

        def at(base, index, m):
            return builder.gep(base, [builder.add(index, ir.Constant(index.type, m))], inbounds=True)

        args_ = []
        for m in range(_LANES):
            x = builder.load(builder.bitcast(at(src_p, args[1], _LANES * m), vty.as_pointer()), align=4)
            f = splat(builder.load(at(scale_p, args[4], m), align=4))
            args_.append(builder.fadd(builder.fmul(x, f), splat(builder.load(at(phase_p, args[4], m), align=4))))
        fabs = _v16_function(builder, "fabs")
        inside = builder.fcmp_ordered("<=", builder.call(fabs, [args_[0]]), const(COS32_MAX))
        for x in args_[1:]:
            inside = builder.and_(inside, builder.fcmp_ordered("<=", builder.call(fabs, [x]), const(COS32_MAX)))
        ok = builder.icmp_unsigned("==", builder.bitcast(inside, ir.IntType(_LANES)),
                                   ir.Constant(ir.IntType(_LANES), (1 << _LANES) - 1))
        with builder.if_then(ok, likely=True):
            f = splat(args[8])
            rows = _transpose16(builder, [builder.fmul(_emit_cos32v2(builder, x), f) for x in args_])
            for l, row in enumerate(rows):
                at_l = builder.add(args[6], builder.mul(args[7], ir.Constant(args[7].type, l)))
                ptr = builder.gep(dst_p, [at_l], inbounds=True)
                builder.store(row, builder.bitcast(ptr, vty.as_pointer()), align=4)
        return ok

    return sig, codegen


@njit(nogil=True, cache=True, inline="always")
def affine_cos32v2_transposed(src, so, scale, phase, po, dst, do, stride, factor):
    """:func:`_affine_cos32v2_transposed`, with the scalar path (libm beyond the domain) for a
    group holding a value beyond ``COS32_MAX`` or a non-finite one: every value gets the bits of
    :func:`affine_cos32v2_at`."""
    if not _affine_cos32v2_transposed(src, so, scale, phase, po, dst, do, stride, factor):
        for m in range(_LANES):
            for lane in range(_LANES):
                x = src[so + _LANES * m + lane] * scale[po + m] + phase[po + m]
                dst[do + lane * stride + m] = _cos32v2_any(x) * factor


@njit(nogil=True, cache=True, inline="always")
def affine_cos32v2_at(src, m, scale, so, phase, po, dst, do, factor):
    """``dst[do + j] = factor * cos(fl(fl(src[j] * scale[so + j]) + phase[po + j]))`` for j < m
    (``scale`` an array or one value; the offsets address rows of flattened tables), 16 lanes at
    a time; a group of 16 holding a value beyond ``COS32_MAX`` (or a non-finite one) and the
    remainder take the scalar path, with libm beyond the domain: every value gets the same bits
    as in :func:`cos32v2_into`'s chunked passes. ``src`` may be ``dst`` (with ``do`` 0)."""
    j0 = m - m % _LANES
    for j in range(0, j0, _LANES):
        if not _affine_cos32v2_lanes(src, scale, phase, dst, factor, j, so, po, do):
            for i in range(j, j + _LANES):
                dst[do + i] = _cos32v2_any(src[i] * _at(scale, so + i) + phase[po + i]) * factor
    for i in range(j0, m):
        dst[do + i] = _cos32v2_any(src[i] * _at(scale, so + i) + phase[po + i]) * factor


@njit(nogil=True, cache=True, inline="always")
def _affine_cos32v2_fused(src, scale, phase, dst, factor):
    """:func:`affine_cos32v2_at` over whole same-length arrays, ``_GROUPS`` vectors per step
    (:func:`_affine_cos32v2_groups`); a step holding an argument beyond the domain, and the
    remainder, go through :func:`affine_cos32v2_at` itself, so every value has the same bits."""
    step = _GROUPS * _LANES
    j1 = src.size - src.size % step
    for j in range(0, j1, step):
        if not _affine_cos32v2_groups(src, scale, phase, dst, factor, j, 0, 0, 0):
            affine_cos32v2_at(src[j : j + step], step, scale, j, phase, j, dst, j, factor)
    affine_cos32v2_at(src[j1:], src.size - j1, scale, j1, phase, j1, dst, j1, factor)


@njit(nogil=True, cache=True)
def affine_cos32v2(src, scale, phase, dst, factor):
    """``dst[j] = factor * cos(fl(fl(src[j] * scale[j]) + phase[j]))`` (product and sum rounded
    to float32, as in a separate pass) in one pass of 512-bit vectors; ``src`` may be ``dst``."""
    _affine_cos32v2_fused(src, scale, phase, dst, factor)


@njit(nogil=True, cache=True)
def shift_cos32v2(src, f, phase, dst, factor):
    """:func:`affine_cos32v2` with one scale ``f`` for the whole row: ``cos(src * f + phase)``."""
    _affine_cos32v2_fused(src, f, phase, dst, factor)


@njit(nogil=True, cache=True)
def shift_cos32v2_tile(P, r0, r1, c0, c1, scale, phase, factor):
    """In place, rows ``r0 <= i < r1`` and columns ``c0 <= j < c1`` of a C-contiguous float32
    array: ``P[i, j] = factor * cos(P[i, j] * scale[i] + phase[j])`` (:func:`shift_cos32v2`;
    each value's bits do not depend on the tile it is computed in)."""
    for i in range(r0, r1):
        row = P[i]
        shift_cos32v2(row[c0:c1], np.float32(scale[i]), phase[c0:c1], row[c0:c1], factor)


@njit(nogil=True, cache=True)
def shift_cos32v2_rows(P, scale, phase, factor):
    """In place, row i of a float32 block: ``P[i, j] = factor * cos(P[i, j] * scale[i] + phase[j])``
    (:func:`shift_cos32v2_tile` over the whole block)."""
    shift_cos32v2_tile(P, 0, P.shape[0], 0, P.shape[1], scale, phase, factor)


@njit(nogil=True, cache=True)
def cos32v2_array(x):
    """:func:`cos32v2_into` with factor 1 on a 1-D float32 array (tests, benchmarks)."""
    out = np.empty_like(x)
    cos32v2_into(x, x.size, out, 0, np.float32(1.0))
    return out
