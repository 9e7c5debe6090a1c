"""Numba replica of scikit-learn 1.9's ``_plain_sgd`` epoch on dense rows, for several
one-vs-rest classes at once, giving bitwise scikit-learn's coefficients; the rows may be read
in place through an index (a step's rows where they are kept) and converted to the model's
dtype as they are read.

scikit-learn fits the classes one after another (or one per thread); each row's dot product
is one sequential chain of additions, so a core waits on the adder's latency (~4 cycles per
term) and does little else. Here up to four classes advance together, row by row, each in its
own row order and with its own sequential sum (so every rounding is scikit-learn's): the four
chains interleave and the core runs them in the time of one. Every other step is the Cython
code's, operation for operation, in its dtypes: ``WeightVector`` (a double scale ``wscale``
times the stored vector, reset below 1e-9 for float64 and 1e-6 for float32), the L2 decay, the clipped
loss gradient, the ``our_rand_r`` Fisher-Yates shuffle of each class's rows. The float32
variant rounds where the C code does (the products of the dot in float, the dot's result, the
scale factor, the scale and update inside ``add``, the scale handed to BLAS ``scal``).

The kernels return a status instead of raising: ``ABORT`` when a weight vector's scale reaches
zero (scikit-learn's BLAS ``scal`` by zero may write ``+0.0`` where a product writes ``-0.0``)
or when a coefficient is not finite (scikit-learn raises): the caller then restores the
estimator and lets scikit-learn's own ``partial_fit`` do the call.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

#: losses (``SGDClassifier.loss``); ``label_encode``: log loss trains on labels {0, 1},
#: the others on {-1, +1}
LOG_LOSS, HINGE, SQUARED_HINGE, MODIFIED_HUBER = 0, 1, 2, 3
#: learning rates, scikit-learn's codes
CONSTANT, OPTIMAL, INVSCALING = 1, 2, 3
MAX_DLOSS = 1e12
OK, ABORT = 0, 1


def _as(x, like):  # pragma: no cover - replaced by the overload in compiled code
    return like.dtype.type(x)


@overload(_as)
def _as_overload(x, like):
    """``x`` rounded to the dtype of the array ``like`` (the C code's ``{{c_type}}``)."""
    if like.dtype == types.float32:
        return lambda x, like: np.float32(x)
    return lambda x, like: np.float64(x)


@njit(nogil=True, cache=True)
def dloss(kind: int, threshold: float, y: float, p: float) -> float:
    """The loss's ``cy_gradient(y, p)`` (``threshold``: hinge's margin, 1.0; 0.0 for the
    perceptron)."""
    if kind == LOG_LOSS:  # _loss.pyx's cgradient_half_binomial
        if p > -37:
            e = np.exp(-p)
            return ((1 - y) - y * e) / (1 + e)
        return np.exp(p) - y
    if kind == HINGE:
        if p * y <= threshold:
            return -y
        return 0.0
    if kind == SQUARED_HINGE:
        z = threshold - p * y
        if z > 0:
            return -2 * y * z
        return 0.0
    z = p * y  # modified Huber
    if z >= 1.0:
        return 0.0
    if z >= -1.0:
        return 2.0 * (1.0 - z) * -y
    return -4.0 * y


@njit(nogil=True, cache=True)
def shuffled_rows(n: int, seed: int) -> np.ndarray:
    """``SequentialDataset.shuffle(seed)`` of a fresh dataset: Fisher-Yates over 0..n-1 with
    ``our_rand_r`` (xorshift32, modulo 2**31)."""
    ind = np.arange(n).astype(np.int32)
    s = np.int64(seed) & 0xFFFFFFFF
    for i in range(n - 1):
        if s == 0:
            s = 1
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        j = i + (s % 2147483648) % (n - i)
        ind[i], ind[j] = ind[j], ind[i]
    return ind


@njit(nogil=True, cache=True)
def _dots(W, X, c, g, r0, r1, r2, r3):
    """Dot products of classes c..c+g-1 (g <= 4) with their rows, each a sequential sum in
    float64 of the products in the weights' dtype (``WeightVector.dot``), interleaved."""
    a0 = a1 = a2 = a3 = 0.0
    m = X.shape[1]
    # 2-D indexing, no row views: a view per row and class is a reference count update on the
    # shared W and X (an atomic operation on a cache line every thread touches)
    if g == 4:
        for j in range(m):
            a0 += W[c, j] * _as(X[r0, j], W)
            a1 += W[c + 1, j] * _as(X[r1, j], W)
            a2 += W[c + 2, j] * _as(X[r2, j], W)
            a3 += W[c + 3, j] * _as(X[r3, j], W)
    elif g == 3:
        for j in range(m):
            a0 += W[c, j] * _as(X[r0, j], W)
            a1 += W[c + 1, j] * _as(X[r1, j], W)
            a2 += W[c + 2, j] * _as(X[r2, j], W)
    elif g == 2:
        for j in range(m):
            a0 += W[c, j] * _as(X[r0, j], W)
            a1 += W[c + 1, j] * _as(X[r1, j], W)
    else:
        for j in range(m):
            a0 += W[c, j] * _as(X[r0, j], W)
    return a0, a1, a2, a3


@njit(nogil=True, cache=True)
def _rescale(W, k, s) -> None:
    """``WeightVector.reset_wscale``'s BLAS ``scal``: every weight of class k times the scale."""
    for j in range(W.shape[1]):
        W[k, j] *= s


@njit(nogil=True, cache=True)
def _finite(W, k) -> bool:
    for j in range(W.shape[1]):
        if not np.isfinite(W[k, j]):
            return False
    return True


@njit(nogil=True, cache=True)
def ovr_epoch(X: np.ndarray, Y: np.ndarray, W: np.ndarray, b: np.ndarray, order: np.ndarray, at: np.ndarray,
              c: int, g: int,
              loss: int, threshold: float, lr: int, eta0: float, alpha: float, power_t: float,
              optimal_init: float, t: float, l2: bool, fit_intercept: bool, reset: float) -> int:
    """One ``_plain_sgd`` epoch (``max_iter=1``) of classes c..c+g-1 (g <= 4), in place.

    X: rows, C-ordered, float32 or float64, each value read as the dtype of W (as ``astype``
    would give it: float32 -> float64 is exact); Y: (g, n) the labels of the group's classes in
    the dtype of W; W: (classes, m) coefficients, updated; b: (classes,) float64 intercepts,
    updated; order: (g, n) the group's row orders (shuffled), or (0, 0) for rows in order; at:
    (n,) the step's rows in X (row ``i`` of the step is ``X[at[i]]``: a step read where its
    rows are kept, not gathered), or (0,) for X's first n rows; t: the
    estimator's ``t_``; l2: penalty 'l2' (else None); reset: the ``wscale`` threshold.
    Returns OK, or ABORT (then W and b are partly updated: the caller restores them)."""
    n = Y.shape[1]
    shuffled, indexed = order.shape[0] > 0, at.shape[0] > 0
    scale = np.ones(4)  # WeightVector.wscale: a double in both variants
    r = np.zeros(4, dtype=np.int64)  # each class's step row
    s = np.zeros(4, dtype=np.int64)  # and its row of X
    for i in range(n):
        for k in range(g):
            r[k] = order[k, i] if shuffled else i
            s[k] = at[r[k]] if indexed else r[k]
        dots = _dots(W, X, c, g, s[0], s[1], s[2], s[3])
        if lr == OPTIMAL:
            eta = 1.0 / (alpha * (optimal_init + t - 1))
        elif lr == INVSCALING:
            eta = eta0 / t ** power_t
        else:
            eta = eta0
        for k in range(g):
            ck, rk = c + k, r[k]
            p = np.float64(_as(dots[k] * scale[k], W)) + b[ck]
            y = np.float64(Y[k, rk])
            d = dloss(loss, threshold, y, p)
            if d < -MAX_DLOSS:
                d = -MAX_DLOSS
            elif d > MAX_DLOSS:
                d = MAX_DLOSS
            update = -eta * d
            if l2:
                f = 1.0 - eta * alpha
                scale[k] *= np.float64(_as(f if f > 0 else 0, W))  # scale()'s argument is a c_type
                if scale[k] < reset:
                    if scale[k] == 0:
                        return ABORT
                    _rescale(W, ck, _as(scale[k], W))  # scal()'s alpha is a c_type
                    scale[k] = 1.0
            if update != 0.0:
                q = np.float64(_as(update, W) / _as(scale[k], W))  # add()'s c and wscale are c_types
                sk = s[k]
                for j in range(W.shape[1]):
                    W[ck, j] = _as(np.float64(W[ck, j]) + np.float64(_as(X[sk, j], W)) * q, W)
            if fit_intercept and update != 0:
                b[ck] += update * 1.0
        t += 1
    for k in range(g):
        if not (np.isfinite(b[c + k]) and _finite(W, c + k)):
            return ABORT
        _rescale(W, c + k, _as(scale[k], W))
    return OK
