"""Fast Walsh-Hadamard transform: in place, batched over the rows of a block, SIMD throughout.

``fwht(X)`` replaces every row ``x`` of ``X`` (length ``d = 2**l``) by ``H x``, where ``H`` is
the unnormalized Sylvester-Hadamard matrix (``scipy.linalg.hadamard(d)``, entries +-1). It
uses only additions and subtractions, so on small integers it is exact.

How it is fast (d = 1024 float32, one thread, row in L1: about 0.55 ns per element measured
on a loaded machine, against 1.05 ns for the previous radix-4 loops and 5.3 ns for a plain
radix-2 loop):

* The first ``log2(W)`` stages (butterfly spans 1, 2, 4, 8) act inside one 512-bit register of
  ``W`` consecutive values (W = 16 for float32, 8 for float64): one vector load, then per stage
  a lane swap and one fused multiply-add by a +-1 vector (``b + v`` or ``b - v``, rounded once:
  the same bits as an add or a subtract), one store (``_hadamard_lanes``, a small LLVM
  intrinsic). Written as loops, these short spans do not vectorize.
* The remaining stages go four (three, two or one) at a time over groups of 16 (8, 4, 2) vectors
  held in registers (``_radix16_lanes`` ...): two passes over the row at d = 1024, one at 256.

Every stage computes ``(lo + hi, lo - hi)`` on the same pairs in the same order whatever the
grouping, so the result is bitwise that of the radix-2 definition (tested against numpy).

Everything is serial and ``nogil``: callers (Dask tasks, a thread pool) supply parallelism.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .._compat import cgutils


def _lane_stages(builder, v, width):
    """The in-register stages (spans 1 .. W/2) on a vector ``v`` of W lanes: stage ``h`` swaps
    lanes ``i`` and ``i ^ h`` (a shuffle), then keeps ``v + b`` in lanes with bit ``h`` clear and
    ``b - v`` (partner minus self, i.e. low minus high) in the others, as one fused multiply-add
    by a +-1 vector: rounded once, the same bits as an add or a subtract."""
    vty = v.type
    fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty] * 3),
                                         f"llvm.fma.v{width}{'f32' if width == 16 else 'f64'}")
    h = 1
    while h < width:
        swap = ir.Constant(ir.VectorType(ir.IntType(32), width), [i ^ h for i in range(width)])
        b = builder.shuffle_vector(v, v, swap)
        sign = ir.Constant(vty, [1.0 if i & h == 0 else -1.0 for i in range(width)])
        v = builder.call(fma, [v, sign, b])
        h *= 2
    return v


def _vector_ptr(context, builder, ary_type, ary_value, index, vty):
    ary = context.make_array(ary_type)(context, builder, ary_value)
    return builder.bitcast(builder.gep(ary.data, [index], inbounds=True), vty.as_pointer())


def _lanes_typer(arrays, float_arrays):
    """W for these Numba array types (C-contiguous 1-D, the ``float_arrays`` of one float dtype),
    or None when they do not qualify."""
    if not all(isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" for a in arrays):
        return None
    dtype = float_arrays[0].dtype
    if dtype not in (types.float32, types.float64) or any(a.dtype != dtype for a in float_arrays):
        return None
    return 16 if dtype == types.float32 else 8


@intrinsic
def _hadamard_lanes(typingctx, x, start):
    """In place: the W-point Walsh-Hadamard transform of ``x[start:start + W]`` in a register.

    W = 16 for float32 and 8 for float64 (512 bits; LLVM splits the vector on CPUs without
    AVX-512, still correct); see :func:`_lane_stages`.
    """
    width = _lanes_typer((x,), (x,))
    if width is None:
        return None

    def codegen(context, builder, sig, args):
        vty = ir.VectorType(context.get_value_type(sig.args[0].dtype), width)
        align = sig.args[0].dtype.bitwidth // 8
        ptr = _vector_ptr(context, builder, sig.args[0], args[0], args[1], vty)
        builder.store(_lane_stages(builder, builder.load(ptr, align=align), width), ptr, align=align)
        return context.get_dummy_value()

    return types.void(x, types.intp), codegen


@intrinsic
def _scaled_lanes(typingctx, src, scale, dst, start, offset):
    """``dst[s:s + W]`` = the in-register stages of ``src[s:s + W] * scale[o + s:o + s + W]``
    (s = start, o = offset: a row of a flattened table, no array view per row): the diagonal
    before a transform, fused into its first pass."""
    width = _lanes_typer((src, scale, dst), (src, scale, dst))
    if width is None:
        return None

    def codegen(context, builder, sig, args):
        vty = ir.VectorType(context.get_value_type(sig.args[0].dtype), width)
        align = sig.args[0].dtype.bitwidth // 8
        x = builder.load(_vector_ptr(context, builder, sig.args[0], args[0], args[3], vty), align=align)
        at = builder.add(args[3], args[4])
        f = builder.load(_vector_ptr(context, builder, sig.args[1], args[1], at, vty), align=align)
        v = _lane_stages(builder, builder.fmul(x, f), width)
        builder.store(v, _vector_ptr(context, builder, sig.args[2], args[2], args[3], vty), align=align)
        return context.get_dummy_value()

    return types.void(src, scale, dst, types.intp, types.intp), codegen


@intrinsic
def _gathered_lanes(typingctx, src, index, scale, dst, start, offset):
    """``dst[s + m]`` for m < W = the in-register stages of ``src[index[o + s + m]] * scale[o + s + m]``
    (s = start, o = offset into the flattened tables): a permutation and a diagonal before a
    transform, fused into its first pass. The caller guarantees ``0 <= index < src.size``."""
    width = _lanes_typer((src, index, scale, dst), (src, scale, dst))
    if width is None or index.dtype != types.int32:
        return None

    def codegen(context, builder, sig, args):
        vty = ir.VectorType(context.get_value_type(sig.args[0].dtype), width)
        align = sig.args[0].dtype.bitwidth // 8
        # W scalar loads put into one vector: measured 1.4x faster than a 512-bit gather (and
        # than LLVM's own vectorized loop, which gathers) on the Xeon (AVX-512) of the benchmarks
        base = context.make_array(sig.args[0])(context, builder, args[0]).data
        iary = context.make_array(sig.args[1])(context, builder, args[1]).data
        row = builder.add(args[4], args[5])
        x = ir.Constant(vty, ir.Undefined)
        for m in range(width):
            at = builder.add(row, ir.Constant(args[4].type, m))
            j = builder.sext(builder.load(builder.gep(iary, [at], inbounds=True), align=4), args[4].type)
            value = builder.load(builder.gep(base, [j], inbounds=True), align=align)
            x = builder.insert_element(x, value, ir.Constant(ir.IntType(32), m))
        f = builder.load(_vector_ptr(context, builder, sig.args[2], args[2], row, vty), align=align)
        v = _lane_stages(builder, builder.fmul(x, f), width)
        builder.store(v, _vector_ptr(context, builder, sig.args[3], args[3], args[4], vty), align=align)
        return context.get_dummy_value()

    return types.void(src, index, scale, dst, types.intp, types.intp), codegen


@intrinsic
def scaled_vector(typingctx, src, so, f, dst, do):
    """``dst[do:do + W] = src[so:so + W] * f`` (one value ``f``), one 512-bit vector: a row of
    Fastfood's row-group layout (W rows' values of one input) times a diagonal entry, or moved
    by a permutation."""
    width = _lanes_typer((src, dst), (src, dst))
    if width is None or f != src.dtype:
        return None

    def codegen(context, builder, sig, args):
        vty = ir.VectorType(context.get_value_type(sig.args[0].dtype), width)
        align = sig.args[0].dtype.bitwidth // 8
        x = builder.load(_vector_ptr(context, builder, sig.args[0], args[0], args[1], vty), align=align)
        fv = builder.insert_element(ir.Constant(vty, ir.Undefined), args[2], ir.Constant(ir.IntType(32), 0))
        fv = builder.shuffle_vector(fv, fv, ir.Constant(ir.VectorType(ir.IntType(32), width), [0] * width))
        builder.store(builder.fmul(x, fv), _vector_ptr(context, builder, sig.args[3], args[3], args[4], vty),
                      align=align)
        return context.get_dummy_value()

    return types.void(src, types.intp, f, dst, types.intp), codegen


def _radix_lanes(stages):
    """An intrinsic ``f(x, i, h)``: ``stages`` butterfly stages (spans h, 2h, ...) on the
    ``2**stages`` vectors of W lanes at ``x[i + m h : i + m h + W]``, all in registers.

    Each stage maps a pair (lo, hi) to (lo + hi, lo - hi), the very operations of a radix-2
    pass in the same stage order, so grouping stages changes no bit. Written as vector IR
    (like :func:`_hadamard_lanes`) because LLVM's loop vectorizer, given the equivalent loop
    over four slices of one array, emits alias checks and short loops (measured ~3x slower).
    """
    n = 1 << stages

    def typer(typingctx, x, start, h):
        ok = isinstance(x, types.Array) and x.ndim == 1 and x.layout == "C"
        if not (ok and x.dtype in (types.float32, types.float64)):
            return None
        width = 16 if x.dtype == types.float32 else 8

        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            vty = ir.VectorType(context.get_value_type(sig.args[0].dtype), width)
            align = sig.args[0].dtype.bitwidth // 8
            ptrs = []
            for m in range(n):
                at = builder.add(args[1], builder.mul(args[2], ir.Constant(args[2].type, m)))
                ptrs.append(builder.bitcast(builder.gep(ary.data, [at], inbounds=True), vty.as_pointer()))
            v = [builder.load(p, align=align) for p in ptrs]
            span = 1
            while span < n:
                for m in range(n):
                    if m & span == 0:
                        lo, hi = v[m], v[m + span]
                        v[m], v[m + span] = builder.fadd(lo, hi), builder.fsub(lo, hi)
                span *= 2
            for p, value in zip(ptrs, v):
                builder.store(value, p, align=align)
            return context.get_dummy_value()

        return types.void(x, types.intp, types.intp), codegen

    typer.__name__ = f"_radix{n}_lanes"
    return intrinsic(typer)


_radix2_lanes = _radix_lanes(1)
_radix4_lanes = _radix_lanes(2)
_radix8_lanes = _radix_lanes(3)
_radix16_lanes = _radix_lanes(4)


@njit(nogil=True, cache=True, inline="always")
def _register_passes(x):
    """The stages after the in-register ones (d = x.size >= W), in register groups of 16, 8, 4 or
    2 vectors: 2 passes over the row instead of 3 at d = 1024, 1 instead of 2 at d = 256 (float32)
    (the row stays in L1; loads and stores are the cost; 16 vectors are half the registers)."""
    d = x.size
    width = 64 // x.itemsize
    h = width
    while h < d:
        rest = d // h  # 2 ** (stages left)
        if rest == 2:
            for r in range(0, h, width):
                _radix2_lanes(x, r, h)
            h *= 2
        elif rest == 4:
            for i in range(0, d, 4 * h):
                for r in range(i, i + h, width):
                    _radix4_lanes(x, r, h)
            h *= 4
        elif rest == 16 or rest == 256:
            for i in range(0, d, 16 * h):
                for r in range(i, i + h, width):
                    _radix16_lanes(x, r, h)
            h *= 16
        else:
            for i in range(0, d, 8 * h):
                for r in range(i, i + h, width):
                    _radix8_lanes(x, r, h)
            h *= 8


@njit(nogil=True, cache=True, inline="always")
def fwht_interleaved(x):
    """In place: the transform of each of the W rows interleaved in ``x`` (value i of row l at
    ``x[W i + l]``, W = 16 float32 or 8 float64), d = x.size / W values each: the stages of spans
    W .. x.size / 2 of one row of x.size values, butterflies between whole vectors (no lane
    shuffles), the same pairs in the same order as :func:`fwht_row` on each row."""
    _register_passes(x)


@njit(nogil=True, cache=True, inline="always")
def fwht_scaled_at(src, scale, offset, dst):
    """``dst = H (src * scale[offset:offset + d])`` (d = dst.size; elementwise product, then the
    transform), for rows of at least W values (16 float32, 8 float64): the product is fused into
    the first pass. ``scale`` is a flattened table: no array view per row (a view costs an
    atomic reference count in and out, and a call: see fastfood._project_row)."""
    width = 64 // dst.itemsize
    for i in range(0, dst.size, width):
        _scaled_lanes(src, scale, dst, i, offset)
    _register_passes(dst)


@njit(nogil=True, cache=True)
def fwht_scaled(src, scale, dst):
    """``dst = H (src * scale)``: :func:`fwht_scaled_at` of a whole ``scale``."""
    fwht_scaled_at(src, scale, 0, dst)


@njit(nogil=True, cache=True, inline="always")
def fwht_gathered_at(src, index, scale, offset, dst):
    """``dst = H (src[index[o:o + d]] * scale[o:o + d])`` (o = offset, d = dst.size; flattened
    tables), for rows of at least W values and int32 indices within ``src`` (a permutation,
    checked by the caller once): the gather is fused into the first pass."""
    width = 64 // dst.itemsize
    for i in range(0, dst.size, width):
        _gathered_lanes(src, index, scale, dst, i, offset)
    _register_passes(dst)


@njit(nogil=True, cache=True)
def fwht_gathered(src, index, scale, dst):
    """``dst = H (src[index] * scale)``: :func:`fwht_gathered_at` of whole tables."""
    fwht_gathered_at(src, index, scale, 0, dst)


@njit(nogil=True, cache=True)
def fwht_row(x):
    """In-place unnormalized Walsh-Hadamard transform of one contiguous 1-D array (len 2**l)."""
    d = x.size
    width = 64 // x.itemsize
    if d >= width:
        for i in range(0, d, width):
            _hadamard_lanes(x, i)
        _register_passes(x)
        return
    h = 1
    while h < d:
        if 4 * h <= d:
            for i in range(0, d, 4 * h):
                x0 = x[i : i + h]
                x1 = x[i + h : i + 2 * h]
                x2 = x[i + 2 * h : i + 3 * h]
                x3 = x[i + 3 * h : i + 4 * h]
                for r in range(h):
                    a = x0[r]
                    b = x1[r]
                    c = x2[r]
                    e = x3[r]
                    s0 = a + b
                    s1 = a - b
                    s2 = c + e
                    s3 = c - e
                    x0[r] = s0 + s2
                    x1[r] = s1 + s3
                    x2[r] = s0 - s2
                    x3[r] = s1 - s3
            h *= 4
        else:
            for i in range(0, d, 2 * h):
                xa = x[i : i + h]
                xb = x[i + h : i + 2 * h]
                for r in range(h):
                    a = xa[r]
                    b = xb[r]
                    xa[r] = a + b
                    xb[r] = a - b
            h *= 2


@njit(nogil=True, cache=True)
def _fwht_rows(X):
    for r in range(X.shape[0]):
        fwht_row(X[r])


def fwht(X):
    """Unnormalized fast Walsh-Hadamard transform of every row of ``X``, in place.

    Parameters
    ----------
    X : ndarray of float32 or float64, shape (n, d) or (d,), C-contiguous, d a power of two

    Returns
    -------
    X : the same array, each row ``x`` replaced by ``scipy.linalg.hadamard(d) @ x``.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels.maps._fwht import fwht
    >>> fwht(np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]], dtype=np.float32))
    array([[ 1.,  1.,  1.,  1.],
           [10., -2., -4.,  0.]], dtype=float32)
    """
    if not isinstance(X, np.ndarray) or X.dtype not in (np.float32, np.float64):
        raise TypeError("fwht needs a float32 or float64 ndarray")
    if not X.flags.c_contiguous or not X.flags.writeable:
        raise ValueError("fwht works in place: X must be C-contiguous and writeable")
    d = X.shape[-1]
    if X.ndim not in (1, 2) or d < 1 or d & (d - 1):
        raise ValueError(f"fwht needs rows whose length is a power of two, got shape {X.shape}")
    _fwht_rows(X.reshape(-1, d))
    return X
