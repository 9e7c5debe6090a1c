"""Numba kernels of :class:`~dask_kernels.learn.softmax.SoftmaxSGD`: one SGD pass over one block.

Rows come in one of three forms (``mode``): 0 = b-bit GCWS codes ``(n, k)`` (row ``i`` has a one
at column ``j * 2**bits + X[i, j]``; no expansion), 1 = dense floats ``(n, d)`` (float32 or
float64, each value read as float64: exactly what ``astype`` would give), 2 = CSR
(``indptr``, ``indices``, ``data``). The first layer ``A`` is stored as (features, m) so the m
weights of one active column are contiguous: a row's scores are a gather of its active rows of
``A``. Full model: ``A`` = W^T (m = C classes); bottleneck: ``A`` = V^T (m = r) and ``U``
(C, r), scores = U (V z) + c. Codes and dense rows are read where they are (:func:`_row_hidden`,
:func:`_row_update`); a CSR row's columns and values are first copied out (:func:`_load_row`).

L2 decay of ``A`` is a scalar factor ``s`` (true ``A`` = s * stored ``A``) so that a step only
touches the row's active columns; averaged SGD keeps the sum of all iterates with the lazy
update of Xu (2011): sum = S * A - acc, with ``S`` the sum of the scales and ``acc`` fed
``S_{t-1} * delta`` at every sparse update. Both are folded back before returning, so a block
starts and ends with plain arrays (what checkpoints store).
"""

import numpy as np
from numba import njit

#: Rescale ``A`` when the decay factor falls below this (keeps the stored weights in range).
_MIN_SCALE = 1e-9


@njit(nogil=True, cache=True)
def _load_row(i, indptr, indices, data, cols, vals):
    """Active columns and values of CSR row ``i`` into ``cols``/``vals``; returns their number."""
    a = indptr[i]
    nnz = indptr[i + 1] - a
    for q in range(nnz):
        cols[q] = indices[a + q]
        vals[q] = data[a + q]
    return nnz


@njit(nogil=True, cache=True)
def _dots(nnz, cols, vals, A, a, w, h):
    """h[a:a + w] (w in 1, 2, 4) = sum over active columns of value * A[col, a:a + w], each
    output a sequential sum in column order. The w outputs advance together in local
    variables: registers, where ``h[a] +=`` would be a load and a store per term (``h`` may
    alias ``A`` for the compiler), and w addition chains overlap instead of each waiting on
    the adder's latency in turn."""
    s0 = s1 = s2 = s3 = 0.0
    if w == 4:
        for q in range(nnz):
            j, v = cols[q], vals[q]
            s0 += A[j, a] * v
            s1 += A[j, a + 1] * v
            s2 += A[j, a + 2] * v
            s3 += A[j, a + 3] * v
        h[a + 2], h[a + 3] = s2, s3
    elif w == 2:
        for q in range(nnz):
            j, v = cols[q], vals[q]
            s0 += A[j, a] * v
            s1 += A[j, a + 1] * v
    else:
        for q in range(nnz):
            s0 += A[cols[q], a] * vals[q]
    h[a] = s0
    if w >= 2:
        h[a + 1] = s1


@njit(nogil=True, cache=True)
def _hidden(nnz, cols, vals, A, h):
    """h = sum over active columns of value * A[col] (A as stored, unscaled), each output a
    sequential sum in column order.

    Up to 4 outputs: in one block of :func:`_dots` (3 as two overlapping blocks of 2: the
    shared output is computed twice, to the same value). More: one pass over the columns,
    every output's partial sum in ``h``; its m chains then overlap by themselves (measured:
    with 10 outputs, blocks of 4 were 0.8x this loop; with 2 to 4 outputs, 1.4x)."""
    m = A.shape[1]
    if m > 4:
        for a in range(m):
            h[a] = 0.0
        for q in range(nnz):
            v = vals[q]
            row = A[cols[q]]
            for a in range(m):
                h[a] += row[a] * v
        return
    w = 4 if m == 4 else (2 if m >= 2 else 1)
    a = 0
    while a < m:
        a = min(a, m - w)
        _dots(nnz, cols, vals, A, a, w, h)
        a += w


@njit(nogil=True, cache=True)
def _column(mode, X, r, j, bits):
    """Row ``r``'s ``j``-th active column and its value, read in place: column ``j`` with
    value ``X[r, j]`` for dense rows (mode 1); ``j * 2**bits + X[r, j]`` with value 1 for
    codes (mode 0)."""
    if mode == 1:
        return j, np.float64(X[r, j])
    return (np.int64(j) << bits) + np.int64(X[r, j]), 1.0


@njit(nogil=True, cache=True)
def _row_hidden(mode, X, r, bits, A, h):
    """:func:`_hidden` of row ``r`` of dense rows or codes, read in place: the same sums in
    the same order (so the same bits) without first copying the row's columns and values
    out; up to 4 outputs advance together, as in :func:`_dots`."""
    m = A.shape[1]
    if m > 4:
        for a in range(m):
            h[a] = 0.0
        for j in range(X.shape[1]):
            col, v = _column(mode, X, r, j, bits)
            for a in range(m):
                h[a] += A[col, a] * v
        return
    s0 = s1 = s2 = s3 = 0.0
    if m == 4:
        for j in range(X.shape[1]):
            col, v = _column(mode, X, r, j, bits)
            s0 += A[col, 0] * v
            s1 += A[col, 1] * v
            s2 += A[col, 2] * v
            s3 += A[col, 3] * v
        h[0], h[1], h[2], h[3] = s0, s1, s2, s3
        return
    for j in range(X.shape[1]):
        col, v = _column(mode, X, r, j, bits)
        s0 += A[col, 0] * v
        if m > 1:
            s1 += A[col, 1] * v
        if m > 2:
            s2 += A[col, 2] * v
    h[0] = s0
    if m > 1:
        h[1] = s1
    if m > 2:
        h[2] = s2


@njit(nogil=True, cache=True)
def _scores(h, U, c, z):
    C = c.shape[0]
    if U.shape[1] == 0:
        for cc in range(C):
            z[cc] = h[cc] + c[cc]
    else:
        for cc in range(C):
            acc = c[cc]
            for a in range(U.shape[1]):
                acc += U[cc, a] * h[a]
            z[cc] = acc


@njit(nogil=True, cache=True)
def _softmax_inplace(z):
    """z <- softmax(z); returns log(sum(exp(z))) of the input."""
    mx = z[0]
    for cc in range(1, z.shape[0]):
        mx = max(mx, z[cc])
    tot = 0.0
    for cc in range(z.shape[0]):
        z[cc] = np.exp(z[cc] - mx)
        tot += z[cc]
    for cc in range(z.shape[0]):
        z[cc] /= tot
    return mx + np.log(tot)


@njit(nogil=True, cache=True)
def _hinge_gradient(z, yi):
    """z <- the gradient of the one-vs-rest hinge loss ``sum_c max(0, 1 - s_c z_c)`` (s_c = +1
    for the true class ``yi``, -1 for the others) w.r.t. the scores z; returns that loss."""
    loss = 0.0
    for cc in range(z.shape[0]):
        sign = 1.0 if cc == yi else -1.0
        margin = 1.0 - sign * z[cc]
        if margin > 0.0:
            loss += margin
            z[cc] = -sign
        else:
            z[cc] = 0.0
    return loss


@njit(nogil=True, cache=True)
def _row_update(mode, X, r, bits, A, acc, gh, S, average):
    """A[col] += gh * value over the active columns of row ``r`` of dense rows or codes, read
    in place (and ``acc[col] += S * that`` with averaging): the update of :func:`sgd_block`."""
    m = A.shape[1]
    for j in range(X.shape[1]):
        col, v = _column(mode, X, r, j, bits)
        if average:
            for a in range(m):
                dlt = gh[a] * v
                A[col, a] += dlt
                acc[col, a] += S * dlt
        else:
            for a in range(m):
                A[col, a] += gh[a] * v


@njit(nogil=True, cache=True)
def sgd_block(order, at, mode, X, indptr, indices, data, bits, width, y, A, U, c,
              acc, U_sum, c_sum, eta0, invscaling, power_t, alpha, t, hinge):
    """One SGD pass over the rows ``order`` of a block, updating ``A``, ``U``, ``c`` in place.

    Row ``i`` of the block is row ``at[i]`` of dense ``X`` (a step's rows read where they are
    kept, not gathered), or row ``i`` if ``at`` is empty; ``y`` holds the block's class
    indices. With averaging (``acc`` not empty) ``acc`` comes in holding
    minus the sum of the previous iterates of ``A`` and leaves holding plus the sum including
    this block's; ``U_sum``/``c_sum`` are increased by every iterate. The loss is the softmax's
    log loss, or with ``hinge`` the one-vs-rest hinge loss (:func:`_hinge_gradient`). Returns
    the summed training loss (before each row's update).
    """
    C = c.shape[0]
    m = A.shape[1]
    lowrank = U.shape[1] > 0
    average = acc.shape[0] > 0
    indexed = at.shape[0] > 0
    cols = np.empty(width, np.int64)  # a CSR row's active columns and values
    vals = np.empty(width)
    h = np.empty(m)
    z = np.empty(C)
    gh = np.empty(m)
    s = 1.0   # true A = s * A
    S = 0.0   # sum of the scales of the iterates so far (averaging)
    loss = 0.0
    for ii in range(order.shape[0]):
        i = order[ii]
        r = at[i] if indexed else i
        if mode < 2:
            nnz = X.shape[1]
            _row_hidden(mode, X, r, bits, A, h)
        else:
            nnz = _load_row(r, indptr, indices, data, cols, vals)
            _hidden(nnz, cols, vals, A, h)
        for a in range(m):
            h[a] *= s
        _scores(h, U, c, z)
        yi = y[i]
        if hinge:
            loss += _hinge_gradient(z, yi)
        else:
            zy = z[yi]
            loss += _softmax_inplace(z) - zy
            z[yi] -= 1.0  # z is now the gradient of the loss w.r.t. the scores
        eta = eta0 / t ** power_t if invscaling else eta0
        if lowrank:
            for a in range(m):
                gh[a] = 0.0
            for cc in range(C):
                for a in range(m):
                    gh[a] += U[cc, a] * z[cc]
            decay = 1.0 - eta * alpha
            for cc in range(C):
                for a in range(m):
                    U[cc, a] = U[cc, a] * decay - eta * z[cc] * h[a]
        else:
            for a in range(m):
                gh[a] = z[a]
        s *= 1.0 - eta * alpha
        step = eta / s
        for a in range(m):
            gh[a] *= -step
        if mode < 2:
            _row_update(mode, X, r, bits, A, acc, gh, S, average)
        elif average:
            for q in range(nnz):
                row, arow, v = A[cols[q]], acc[cols[q]], vals[q]
                for a in range(m):
                    d = gh[a] * v
                    row[a] += d
                    arow[a] += S * d
        else:
            for q in range(nnz):
                row, v = A[cols[q]], vals[q]
                for a in range(m):
                    row[a] += gh[a] * v
        for cc in range(C):
            c[cc] -= eta * z[cc]
        if average:
            S += s
            for cc in range(C):
                c_sum[cc] += c[cc]
            if lowrank:
                for cc in range(C):
                    for a in range(m):
                        U_sum[cc, a] += U[cc, a]
        t += 1.0
        if s < _MIN_SCALE:
            A *= s
            S /= s
            s = 1.0
    if average:
        for j in range(A.shape[0]):
            for a in range(m):
                acc[j, a] = S * A[j, a] - acc[j, a]
    if s != 1.0:
        A *= s
    return loss


@njit(nogil=True, cache=True)
def code_hidden(X, bits, A, out):
    """out[i] = sum_j A[j * 2**bits + X[i, j]]: the first layer on codes (no expansion)."""
    m = A.shape[1]
    for i in range(X.shape[0]):
        for a in range(m):
            out[i, a] = 0.0
        for j in range(X.shape[1]):
            row = A[(np.int64(j) << bits) + np.int64(X[i, j])]
            for a in range(m):
                out[i, a] += row[a]
