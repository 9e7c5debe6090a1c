"""Numba scanner for svmlight text: the fast path of :func:`dask_kernels.io.svmlight._parse`.

It accepts a conservative subset of the format: decimal labels and values
(``[+-]digits[.digits][(e|E)[+-]digits]``, also ``.5`` and ``5.``), digit-only indices and
``qid:[+-]digits``. Anything else, and every error (a malformed token, an index out of range, a
repeated index), makes it give up on the whole byte range, and the pure-Python parser re-parses
that range: it either accepts what this scanner did not (say ``inf`` or ``1_0``) or raises the
error that names the line. So this module never decides what is an error, only how fast the
common case goes.

Numbers are converted exactly as Python's ``float`` does (correctly rounded): a mantissa below
2**53 with a power of ten of at most 22 is one exact IEEE multiplication or division (Clinger's
fast path, always finite); the rest go to numpy's text parser (``np.fromstring``, also
correctly rounded) in one batch, and a range where one of those is not finite is left to the
Python parser, which refuses it naming the line.
"""

import numpy as np
from numba import njit

GIVE_UP = -1

_POW10 = np.array([10.0**i for i in range(23)])  # all exact doubles
_TWO53 = 2**53


@njit(nogil=True, cache=True, inline="always")
def _space(c):
    return c == 32 or 9 <= c <= 13


@njit(nogil=True, cache=True, inline="always")
def _digit(c):
    return 48 <= c <= 57


@njit(nogil=True, cache=True)
def _number(buf, p, end, pow10):
    """Parse the decimal token starting at ``p`` (ending at whitespace or ``end``).

    Returns ``(stop, value, exact)``: ``stop`` is -1 if the token is not a plain decimal;
    ``exact`` is False when ``value`` must come from the slow, correctly rounded parser.
    """
    q = p
    neg = False
    if q < end and (buf[q] == 43 or buf[q] == 45):
        neg = buf[q] == 45
        q += 1
    m = np.uint64(0)
    n_digits = 0  # significant digits accumulated into m (leading zeros do not count)
    seen = 0
    scale = 0  # digits after the point
    while q < end and _digit(buf[q]):
        if m > 0 or buf[q] != 48:
            if n_digits < 19:  # more digits: m is not used (slow path)
                m = m * np.uint64(10) + np.uint64(buf[q] - 48)
            n_digits += 1
        seen += 1
        q += 1
    if q < end and buf[q] == 46:
        q += 1
        while q < end and _digit(buf[q]):
            if m > 0 or buf[q] != 48:
                if n_digits < 19:
                    m = m * np.uint64(10) + np.uint64(buf[q] - 48)
                    scale += 1
                n_digits += 1
            else:
                scale += 1
            seen += 1
            q += 1
    if seen == 0:
        return -1, 0.0, False
    exp = 0
    if q < end and (buf[q] == 101 or buf[q] == 69):
        q += 1
        eneg = False
        if q < end and (buf[q] == 43 or buf[q] == 45):
            eneg = buf[q] == 45
            q += 1
        e_digits = 0
        while q < end and _digit(buf[q]):
            if exp < 100000:
                exp = exp * 10 + (buf[q] - 48)
            e_digits += 1
            q += 1
        if e_digits == 0:
            return -1, 0.0, False
        if eneg:
            exp = -exp
    if q < end and not _space(buf[q]):
        return -1, 0.0, False
    if m == 0:
        return q, -0.0 if neg else 0.0, True
    e10 = exp - scale
    # exp stops growing at 100000 (it cannot overflow), so beyond that it is not the
    # exponent: such a token goes to the slow path whatever ``scale`` is
    if n_digits > 19 or m > np.uint64(_TWO53) or e10 > 22 or e10 < -22 or exp >= 100000 or exp <= -100000:
        return q, 0.0, False
    v = np.float64(m)
    v = v * pow10[e10] if e10 >= 0 else v / pow10[-e10]
    return q, -v if neg else v, True


@njit(nogil=True, cache=True, inline="always")
def _digits(buf, p, end):
    """``(stop, value, n)``: the run of at most 18 digits at ``p`` (18 cannot overflow int64;
    a longer run leaves a digit at ``stop``, which the callers treat as malformed)."""
    value = 0
    n = 0
    while p < end and _digit(buf[p]) and n < 18:
        value = value * 10 + (buf[p] - 48)
        n += 1
        p += 1
    return p, value, n


@njit(nogil=True, cache=True, inline="always")
def _defer(buf, a, b, hard, n_hard, slot, hard_text, h):
    """Queue the number text ``buf[a:b]`` of ``slot`` for the slow parser; returns the new
    ``(n_hard, h)``."""
    hard[n_hard] = slot
    hard_text[h : h + b - a] = buf[a:b]
    hard_text[h + b - a] = 32
    return n_hard + 1, h + b - a + 1


@njit(nogil=True, cache=True)
def _skip_space(buf, p, end):
    while p < end and _space(buf[p]):
        p += 1
    return p


@njit(nogil=True, cache=True)
def scan(buf, base, n_features, pow10, indptr, indices, values, labels, qids, hard, hard_text):
    """Tokenize one byte range into the given arrays (sized by :func:`parse`).

    Returns ``(status, n_lines, n_rows, nnz, n_hard, hard_bytes, max_col, has_qid)``;
    ``status`` is :data:`GIVE_UP` when the Python parser must take over. Numbers the fast path
    cannot convert exactly are listed in ``hard`` (a label of row r as ``r``, value k as
    ``-1 - k``) with their texts in ``hard_text``, separated by spaces. Rows come out sorted.
    """
    n = buf.size
    n_hard = 0
    needs_sort = False
    h = 0
    p = 0
    n_lines = 0
    n_rows = 0
    nz = 0
    max_col = -1
    has_qid = False
    while p < n:
        e = p
        while e < n and buf[e] != 10:
            e += 1
        n_lines += 1
        c_end = p
        while c_end < e and buf[c_end] != 35:  # '#' starts a comment
            c_end += 1
        q = _skip_space(buf, p, c_end)
        if q < c_end:
            t, v, exact = _number(buf, q, c_end, pow10)
            if t < 0:
                return GIVE_UP, 0, 0, 0, 0, 0, -1, False
            labels[n_rows] = v
            if not exact:
                n_hard, h = _defer(buf, q, t, hard, n_hard, n_rows, hard_text, h)
            q = _skip_space(buf, t, c_end)
            if q + 4 <= c_end and buf[q] == 113 and buf[q + 1] == 105 and buf[q + 2] == 100 and buf[q + 3] == 58:
                r = q + 4
                qneg = False
                if r < c_end and (buf[r] == 43 or buf[r] == 45):
                    qneg = buf[r] == 45
                    r += 1
                r, qv, d = _digits(buf, r, c_end)
                if d == 0 or (r < c_end and not _space(buf[r])):
                    return GIVE_UP, 0, 0, 0, 0, 0, -1, False
                qids[n_rows] = -qv if qneg else qv
                has_qid = True
                q = _skip_space(buf, r, c_end)
            prev = -1
            while q < c_end:
                q, col, d = _digits(buf, q, c_end)
                if d == 0 or q >= c_end or buf[q] != 58:
                    return GIVE_UP, 0, 0, 0, 0, 0, -1, False
                col -= base
                if col < 0 or (n_features >= 0 and col >= n_features):
                    return GIVE_UP, 0, 0, 0, 0, 0, -1, False
                t, v, exact = _number(buf, q + 1, c_end, pow10)
                if t < 0:
                    return GIVE_UP, 0, 0, 0, 0, 0, -1, False
                values[nz] = v
                if not exact:
                    n_hard, h = _defer(buf, q + 1, t, hard, n_hard, -1 - nz, hard_text, h)
                indices[nz] = col
                nz += 1
                needs_sort = needs_sort or col <= prev
                prev = col
                if col > max_col:
                    max_col = col
                q = _skip_space(buf, t, c_end)
            n_rows += 1
            indptr[n_rows] = nz
        p = e + 1
    if needs_sort and not _sort_rows(indptr[: n_rows + 1], indices[:nz], values[:nz], hard[:n_hard]):
        return GIVE_UP, 0, 0, 0, 0, 0, -1, False
    return 0, n_lines, n_rows, nz, n_hard, h, max_col, has_qid


@njit(nogil=True, cache=True)
def _sort_rows(indptr, indices, values, hard):
    """Sort each row by index, carrying values and the slots of unconverted values along.
    False if a row repeats an index (an error the Python parser reports)."""
    where = np.full(indices.size, -1, dtype=np.int64)  # value k -> its position in ``hard``
    for a in range(hard.size):
        if hard[a] < 0:
            where[-1 - hard[a]] = a
    for r in range(indptr.size - 1):
        lo, hi = indptr[r], indptr[r + 1]
        ordered = True
        for k in range(lo + 1, hi):
            if indices[k] <= indices[k - 1]:
                ordered = False
                break
        if ordered:
            continue
        order = np.argsort(indices[lo:hi], kind="mergesort") + lo
        idx = indices[order]
        for k in range(1, idx.size):
            if idx[k] == idx[k - 1]:
                return False
        vals = values[order]
        slots = where[order]
        indices[lo:hi] = idx
        values[lo:hi] = vals
        for k in range(hi - lo):
            if slots[k] >= 0:
                hard[slots[k]] = -1 - (lo + k)
    return True


@njit(nogil=True, cache=True)
def _count_lines(buf):
    # Only the start of a line decides: a row has something before any '#', and a file has
    # query ids when a row's second token starts with "qid:" (the format's only place for it;
    # a "qid:" anywhere else is an error the parse reports).
    n = buf.size
    n_lines = 0
    n_rows = 0
    has_qid = False
    p = 0
    while p < n:
        q = p
        while q < n and buf[q] != 10 and _space(buf[q]):
            q += 1
        if q < n and buf[q] != 10 and buf[q] != 35:
            n_rows += 1
            if not has_qid:
                while q < n and not _space(buf[q]) and buf[q] != 35:
                    q += 1
                while q < n and buf[q] != 10 and _space(buf[q]):
                    q += 1
                has_qid = (q + 3 < n and buf[q] == 113 and buf[q + 1] == 105 and buf[q + 2] == 100
                           and buf[q + 3] == 58)
        while q < n and buf[q] != 10:
            q += 1
        n_lines += 1
        p = q + 1
    return n_lines, n_rows, has_qid


def count(data):
    """``(n_lines, n_rows, has_qid)`` of a byte range without parsing numbers: rows are lines
    with something before their comment; ``has_qid``: some row has a ``qid:`` second token."""
    n_lines, n_rows, has_qid = _count_lines(np.frombuffer(data, dtype=np.uint8))
    return int(n_lines), int(n_rows), bool(has_qid)


def parse(data, n_features, zero_based):
    """Fast parse of one byte range: ``(n_lines, n_rows, max_col, has_qid, arrays)`` as
    :func:`dask_kernels.io.svmlight._parse` returns, or None when the Python parser must."""
    buf = np.frombuffer(data, dtype=np.uint8)
    n_lines_max = int(np.count_nonzero(buf == 10)) + 1
    n_pairs_max = int(np.count_nonzero(buf == 58))  # every index:value pair has a colon
    indptr = np.zeros(n_lines_max + 1, dtype=np.int64)
    indices = np.empty(n_pairs_max, dtype=np.int64)
    values = np.empty(n_pairs_max, dtype=np.float64)
    labels = np.empty(n_lines_max, dtype=np.float64)
    qids = np.full(n_lines_max, -1, dtype=np.int64)
    hard = np.empty(n_lines_max + n_pairs_max, dtype=np.int64)
    hard_text = np.empty(buf.size + 1, dtype=np.uint8)
    status, n_lines, n_rows, nz, n_hard, h, max_col, has_qid = scan(
        buf, 0 if zero_based else 1, -1 if n_features is None else int(n_features), _POW10,
        indptr, indices, values, labels, qids, hard, hard_text)
    if status == GIVE_UP:
        return None
    labels, values, hard = labels[:n_rows], values[:nz], hard[:n_hard]
    if n_hard:
        slow = np.fromstring(hard_text[:h].tobytes(), dtype=np.float64, sep=" ")
        # the fast path's values are finite by construction; a slow one that is not (1e400,
        # say) is an error the Python parser reports with its line
        if slow.size != n_hard or not np.isfinite(slow).all():
            return None
        is_label = hard >= 0
        labels[hard[is_label]] = slow[is_label]
        values[-1 - hard[~is_label]] = slow[~is_label]
    arrays = (indices[:nz], values, indptr[: n_rows + 1], labels, qids[:n_rows])
    return int(n_lines), int(n_rows), int(max_col), bool(has_qid), arrays
