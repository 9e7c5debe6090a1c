"""Byte-level primitives of the Numba decoders (:mod:`._parquet_pages`, :mod:`._snappy`):
unaligned 64-bit loads and stores in native byte order, and ULEB128 varints (Thrift's compact
protocol and Snappy's preamble both use them). The callers check every index against the
array's length first: these do no bounds checks of their own."""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def load64(typingctx, arr, index):
    """The 8 bytes ``arr[index:index + 8]`` of a uint8 array as one native (little-endian)
    uint64, unaligned; the caller checks that they are inside the array."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype == types.uint8):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]], inbounds=True), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)

    return types.uint64(arr, types.intp), codegen


@intrinsic
def store64(typingctx, arr, index, value):
    """``arr[index:index + 8]`` = the 8 bytes of uint64 ``value`` (native order, unaligned); the
    caller checks that they are inside the array."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype == types.uint8 and arr.mutable):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]], inbounds=True), ir.IntType(64).as_pointer())
        builder.store(args[2], ptr, align=1)
        return context.get_dummy_value()

    return types.void(arr, types.intp, types.uint64), codegen


@njit(nogil=True, cache=True)
def varint(buf, p, end):
    """``(value, next position)`` of the ULEB128 integer at ``p``; position -1 if malformed."""
    value = np.uint64(0)
    shift = 0
    while p < end and shift < 64:
        b = buf[p]
        p += 1
        value |= np.uint64(b & 0x7F) << np.uint64(shift)
        if b < 0x80:
            return value, p
        shift += 7
    return np.uint64(0), -1
