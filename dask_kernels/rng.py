"""Counter-based random numbers: every value is a pure function of (seed, stream, index, counter).

Nothing here has state. A worker that needs the random parameter of feature ``index`` for hash
``counter`` recomputes it from the seed, so no parameter matrix is ever shipped between
processes and a row's features never depend on how the data was partitioned.

Scheme ``RNG_SCHEME = "dk-rng-1"`` (recorded in every spec and store; changing any formula below
requires a new identifier, and the known-answer tests in ``tests/test_rng.py`` pin it):

* ``mix64`` is the SplitMix64 finalizer (Stafford's variant 13), a bijection on 64-bit words.
* ``stream_key(seed, stream) = mix64(mix64(seed) ^ (stream * C_STREAM))``
* ``index_key(skey, index)  = mix64(skey ^ (index * C_INDEX))``           (index is a uint64)
* ``bits(ikey, counter)     = mix64(ikey ^ ((counter + 1) * C_COUNTER))``
* ``unit64(h) = ((h >> 12) + 0.5) * 2**-52``   float64 on the open interval (0, 1)
* ``unit32(h) = ((lo32(h) >> 9) + 0.5) * 2**-23``  float32 on (0, 1), from the low 32 bits
  (``unit32_hi`` does the same with the high 32 bits: a second, independent one)
* ``normal``: Box-Muller, ``sqrt(-2 log u1) cos(2 pi u2)`` with u1, u2 = ``unit64`` of counters
  ``2c`` and ``2c + 1``.
* ``gamma2``: Gamma(2, 1) as ``-log(u1) - log(u2)``, u1, u2 = ``unit64`` of counters ``2c``,
  ``2c + 1``.
* ``gamma2_f32``: Gamma(2, 1) in float32 from one 64-bit word, ``-log32(u_lo * u_hi)``, with
  :func:`log32` below. Used on hot paths (GCWS), where libm's scalar ``log`` would dominate.
* ``rank``: ``bits`` itself, a uniformly random 64-bit word for minwise hashing.

``log32`` is our own float32 logarithm (Cephes polynomial, under 2 ulp). It is part of the scheme:
it is written in plain arithmetic so that LLVM can vectorize loops that call it, and so the
values do not depend on the platform's libm.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

RNG_SCHEME = "dk-rng-1"

# ---------------------------------------------------------------------------------------------
# stream registry: every stream id in use, by name, so two maps can never share one

_STREAMS = {}  # id -> name


def register_stream(name: str, stream: int) -> int:
    """Claim stream id ``stream`` for ``name`` (e.g. ``"gcws.r"``) and return the id.

    Call it at module level (``STREAM = register_stream("gcws.r", 1)``): a second claim of the
    same id by another name raises at import time, so two kinds of random parameters can never
    draw the same numbers. Claiming the same (name, id) again is allowed (a module reload).
    Existing ids never change: they are part of what a spec produces.

    Examples
    --------
    >>> from dask_kernels.rng import register_stream, registered_streams
    >>> registered_streams()[1]
    'gcws.icws'
    """
    if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)) or not 0 <= int(stream) < 2**64:
        raise ValueError(f"stream id for {name!r} must be an integer in [0, 2**64), got {stream!r}")
    stream = int(stream)
    owner = _STREAMS.get(stream)
    if owner is not None and owner != name:
        raise ValueError(f"RNG stream {stream} is already registered to {owner!r}; {name!r} needs another id")
    taken = [s for s, n in _STREAMS.items() if n == name and s != stream]
    if taken:
        raise ValueError(f"RNG stream name {name!r} is already registered with id {taken[0]}")
    _STREAMS[stream] = name
    return stream


def unregister_stream(stream: int) -> None:
    """Release stream id ``stream`` (for tests that register temporary streams)."""
    _STREAMS.pop(int(stream), None)


def registered_streams() -> dict:
    """Registered stream ids mapped to their names (the maps register theirs when imported)."""
    return dict(sorted(_STREAMS.items()))


_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
C_STREAM = np.uint64(0x9E3779B97F4A7C15)
C_INDEX = np.uint64(0xD1B54A32D192ED03)
C_COUNTER = np.uint64(0xAEF17502108EF2D9)

_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S12 = np.uint64(12)
_ONE = np.uint64(1)
_TWO_M52 = 2.0**-52
_TWO_M23 = np.float32(2.0**-23)
_HALF32 = np.float32(0.5)


@njit(nogil=True, cache=True, inline="always")
def mix64(z: int) -> np.uint64:
    """SplitMix64 finalizer: a bijective avalanche of a 64-bit word."""
    z = np.uint64(z)
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(nogil=True, cache=True, inline="always")
def stream_key(seed: int, stream: int) -> np.uint64:
    """Key of one random stream (one kind of parameter) under one seed."""
    return mix64(mix64(np.uint64(seed)) ^ (np.uint64(stream) * C_STREAM))


@njit(nogil=True, cache=True, inline="always")
def index_key(skey: int, index: int) -> np.uint64:
    """Key of one index (an input dimension, a block, ...) within a stream."""
    return mix64(skey ^ (np.uint64(index) * C_INDEX))


@njit(nogil=True, cache=True, inline="always")
def bits(ikey: int, counter: int) -> np.uint64:
    """Random 64-bit word number ``counter`` of an index key."""
    return mix64(ikey ^ ((np.uint64(counter) + _ONE) * C_COUNTER))


@njit(nogil=True, cache=True, inline="always")
def unit64(h: int) -> float:
    """float64 uniform on the open interval (0, 1) from a 64-bit word."""
    return (np.float64(h >> _S12) + 0.5) * _TWO_M52


@njit(nogil=True, cache=True, inline="always")
def unit32_word(w):
    """float32 uniform on (0, 1) from a 32-bit word: its top 23 bits, plus one half."""
    return (np.float32(np.int32(np.uint32(w) >> np.uint32(9))) + _HALF32) * _TWO_M23


@njit(nogil=True, cache=True, inline="always")
def lo32(h):
    """Low 32 bits of a 64-bit word."""
    return np.uint32(h & np.uint64(0xFFFFFFFF))


@njit(nogil=True, cache=True, inline="always")
def hi32(h):
    """High 32 bits of a 64-bit word."""
    return np.uint32(h >> np.uint64(32))


@njit(nogil=True, cache=True, inline="always")
def unit32(h):
    """float32 uniform on (0, 1) from the low 32 bits of a word (23 bits of resolution)."""
    return unit32_word(lo32(h))


@njit(nogil=True, cache=True, inline="always")
def unit32_hi(h):
    """float32 uniform on (0, 1) from the high 32 bits of a word, independent of ``unit32(h)``."""
    return unit32_word(hi32(h))


# ---------------------------------------------------------------------------------------------
# float32 logarithm in plain arithmetic (vectorizable, libm-independent)


def _bitcast(src, dst, name):
    """A Numba intrinsic that reads the bits of a ``src`` value as a ``dst`` value (same width)."""

    def cast(typingctx, x):
        if x != src:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(dst))

        return dst(src), codegen

    cast.__name__ = cast.__qualname__ = name
    return intrinsic(cast)


_f32_as_i32 = _bitcast(types.float32, types.int32, "_f32_as_i32")
_i32_as_f32 = _bitcast(types.int32, types.float32, "_i32_as_f32")


_SQRTHF = np.float32(0.707106781186547524)
_LN2_HI = np.float32(0.693359375)
_LN2_LO = np.float32(-2.12194440e-4)
_P0 = np.float32(7.0376836292e-2)
_P1 = np.float32(-1.1514610310e-1)
_P2 = np.float32(1.1676998740e-1)
_P3 = np.float32(-1.2420140846e-1)
_P4 = np.float32(1.4249322787e-1)
_P5 = np.float32(-1.6668057665e-1)
_P6 = np.float32(2.0000714765e-1)
_P7 = np.float32(-2.4999993993e-1)
_P8 = np.float32(3.3333331174e-1)
_F1 = np.float32(1.0)
_F05 = np.float32(0.5)
_EXP_BIAS = np.float32(2.0**23 + 126)


@njit(nogil=True, cache=True, inline="always")
def log32(x):
    """Natural logarithm of a positive, finite, normal float32 (Cephes ``logf``)."""
    i = _f32_as_i32(np.float32(x))
    # Exponent to float through the mantissa of 2**23 and mantissa into [0.5, 1), all in
    # 32-bit integer lanes: an int64 detour halves the SIMD width.
    e_bits = np.int32(np.int32(i >> np.int32(23)) & np.int32(0xFF))
    e = _i32_as_f32(np.int32(e_bits | np.int32(0x4B000000))) - _EXP_BIAS
    m = _i32_as_f32(np.int32(np.int32(i & np.int32(0x7FFFFF)) | np.int32(0x3F000000)))
    small = m < _SQRTHF
    e = e - _F1 if small else e
    f = (m + m - _F1) if small else (m - _F1)
    z = f * f
    y = _P0
    y = y * f + _P1
    y = y * f + _P2
    y = y * f + _P3
    y = y * f + _P4
    y = y * f + _P5
    y = y * f + _P6
    y = y * f + _P7
    y = y * f + _P8
    y = y * f * z
    y = y + e * _LN2_LO
    y = y - _F05 * z
    return f + y + e * _LN2_HI


# ---------------------------------------------------------------------------------------------
# distributions


@njit(nogil=True, cache=True)
def index_keys(seed, stream, n):
    """``index_key`` of indices ``0 .. n-1`` in one stream (uint64), for loops that hoist them."""
    return index_keys_of(seed, stream, np.arange(n, dtype=np.uint64))


@njit(nogil=True, cache=True)
def index_keys_of(seed, stream, ids):
    """``index_key`` of the indices ``ids`` in one stream (uint64), for loops that hoist them."""
    skey = stream_key(np.uint64(seed), np.uint64(stream))
    keys = np.empty(ids.size, dtype=np.uint64)
    for j in range(ids.size):
        keys[j] = index_key(skey, np.uint64(ids[j]))
    return keys


@njit(nogil=True, cache=True)
def uniform(seed, stream, index, counter):
    """Uniform on (0, 1), float64."""
    return unit64(bits(index_key(stream_key(seed, stream), index), counter))


@njit(nogil=True, cache=True, inline="always")
def normal_of_key(ikey, counter):
    """Standard normal from an index key: Box-Muller on its counters 2c and 2c + 1.

    The scheme's one Gaussian transform: :func:`normal` and every map's normal draws (tables,
    hot loops with their index keys hoisted) call it, so they give the same bits.
    """
    c = np.uint64(counter) * np.uint64(2)
    u1 = unit64(bits(ikey, c))
    u2 = unit64(bits(ikey, c + _ONE))
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


@njit(nogil=True, cache=True)
def normal(seed, stream, index, counter):
    """Standard normal, float64 (Box-Muller on counters 2c and 2c + 1)."""
    return normal_of_key(index_key(stream_key(seed, stream), index), counter)


@njit(nogil=True, cache=True, inline="always")
def gamma2_of_key(ikey, counter):
    """Gamma(shape=2, scale=1) from an index key: minus the logs of its uniforms 2c and 2c + 1."""
    c = np.uint64(counter) * np.uint64(2)
    return -np.log(unit64(bits(ikey, c))) - np.log(unit64(bits(ikey, c + _ONE)))


@njit(nogil=True, cache=True)
def gamma2(seed, stream, index, counter):
    """Gamma(shape=2, scale=1), float64: the sum of two standard exponentials."""
    return gamma2_of_key(index_key(stream_key(seed, stream), index), counter)


@njit(nogil=True, cache=True, inline="always")
def gamma2_f32(h):
    """Gamma(2, 1) in float32 from one 64-bit word: ``-log32(u_lo * u_hi)``."""
    return gamma2_f32_words(lo32(h), hi32(h))


@njit(nogil=True, cache=True, inline="always")
def gamma2_f32_words(lo, hi):
    """``gamma2_f32`` from the two 32-bit halves of its word (for loops kept in 32-bit lanes)."""
    return -log32(unit32_word(lo) * unit32_word(hi))


@njit(nogil=True, cache=True)
def rank(seed, stream, index, counter):
    """A uniformly random 64-bit word: the rank of ``index`` under minwise hash ``counter``."""
    return bits(index_key(stream_key(seed, stream), index), counter)


# Vectorized front-ends, mostly for tests and for building small parameter tables.


@njit(nogil=True, cache=True)
def _float_table(seed, stream, indices, counters, kind):
    """The float64 front-ends' one loop: uniform (kind 0), normal (1) or gamma2 (2) on the outer
    product ``indices x counters``, each value from its index key as the scalar function gives it."""
    keys = index_keys_of(seed, stream, indices)
    out = np.empty((indices.size, counters.size))
    for a in range(indices.size):
        for b in range(counters.size):
            if kind == 0:
                out[a, b] = unit64(bits(keys[a], counters[b]))
            elif kind == 1:
                out[a, b] = normal_of_key(keys[a], counters[b])
            else:
                out[a, b] = gamma2_of_key(keys[a], counters[b])
    return out


@njit(nogil=True, cache=True)
def uniform_array(seed: int, stream: int, indices: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """``uniform`` on the outer product ``indices x counters`` (shape (len(i), len(c)))."""
    return _float_table(seed, stream, indices, counters, 0)


@njit(nogil=True, cache=True)
def normal_array(seed: int, stream: int, indices: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """``normal`` on the outer product ``indices x counters``."""
    return _float_table(seed, stream, indices, counters, 1)


@njit(nogil=True, cache=True)
def gamma2_array(seed: int, stream: int, indices: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """``gamma2`` on the outer product ``indices x counters``."""
    return _float_table(seed, stream, indices, counters, 2)


@njit(nogil=True, cache=True)
def rank_array(seed: int, stream: int, indices: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """``rank`` on the outer product ``indices x counters`` (uint64)."""
    out = np.empty((indices.size, counters.size), dtype=np.uint64)
    skey = stream_key(seed, stream)
    for a in range(indices.size):
        ikey = index_key(skey, indices[a])
        for b in range(counters.size):
            out[a, b] = bits(ikey, counters[b])
    return out
