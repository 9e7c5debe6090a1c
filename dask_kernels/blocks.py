"""The input contract: one check of a block of rows before any Numba kernel sees it.

:func:`validate_block` is the only place input rows are checked. It returns what the kernels
expect: a C-contiguous float array, or CSR with sorted, unique column indices (duplicates
summed, as SciPy defines them), so that dense and sparse input of the same rows visit nonzeros
in the same order and give identical results. It refuses, naming the global row and column:
complex, object and string data; a wrong width; malformed sparse structure (SciPy accepts a
CSR matrix whose indices are negative or out of range, or whose ``indptr`` decreases, and such
a matrix reads or writes out of bounds in compiled code); NaN and infinity; and finite values
beyond a map's magnitude bound (``max_abs``), where its arithmetic would overflow.

Values and structure are checked in one compiled pass over the block (about the cost of
reading it once), so the check runs on every block of every pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from numba import njit

#: Widest input any map accepts (column indices fit in int32 up to this width).
MAX_FEATURES_IN = 2**31


@njit(nogil=True, cache=True, error_model="numpy")
def _first_bad_row(X, bound):
    # No early exit inside a row: the or-reduction vectorizes (~0.15 ns per float32 value,
    # 10x the early-exit loop). ``not (|x| <= bound)`` is also true for NaN.
    n, d = X.shape
    for i in range(n):
        bad = False
        for j in range(d):
            bad |= not (abs(X[i, j]) <= bound)
        if bad:
            return i
    return -1


@njit(nogil=True, cache=True, error_model="numpy")
def _check_csr(data, indices, indptr, width, bound):
    """Check a compressed block: ``(status, row, position, canonical)``.

    status 0: valid; 1: ``indptr`` decreases or exceeds the stored entries at ``row``;
    2: index at ``position`` outside ``[0, width)``; 3: value at ``position`` not finite or
    beyond ``bound``. ``canonical``: every row's indices strictly increase.
    Indices and values are checked in flat or-reductions over all entries (they vectorize);
    rows matter only for ``indptr`` and for where an index may decrease.
    """
    nnz = indices.size
    n = indptr.size - 1
    for i in range(n):
        if indptr[i + 1] < indptr[i] or indptr[i + 1] > nnz:
            return 1, i, 0, False
    end = indptr[n] if n >= 0 else 0
    bad = False
    for p in range(end):
        j = indices[p]
        bad |= (j < 0) | (j >= width) | (not (abs(data[p]) <= bound))
    if bad:
        for p in range(end):
            row = np.searchsorted(indptr, p, side="right") - 1
            if indices[p] < 0 or indices[p] >= width:
                return 2, row, p, False
            if not (abs(data[p]) <= bound):
                return 3, row, p, False
    # decreases or repeats anywhere, minus those at the start of a row (allowed there)
    steps = 0
    for p in range(1, end):
        steps += indices[p] <= indices[p - 1]
    for i in range(1, n):
        p = indptr[i]
        if p > indptr[i - 1] and p < end:
            steps -= indices[p] <= indices[p - 1]
    return 0, -1, -1, steps == 0


def _where(i, row_offset, row_numbers):
    return int(row_numbers[i]) if row_numbers is not None else int(i) + int(row_offset)


def _rows(n, row_offset, row_numbers):
    if n == 0:
        return "no rows"
    if row_numbers is not None:
        return f"rows {int(np.min(row_numbers))}..{int(np.max(row_numbers))}"
    return f"rows {row_offset}..{row_offset + n - 1}"


class InputValueError(ValueError):
    """A value of the input rows that no map may read (NaN, infinity, beyond the map's bound);
    the message names its row and column, and a caller that knows the input's name adds it.

    ``value``, ``bound``, ``row`` (global) and ``column`` are kept as attributes (also through
    pickling: the error may be raised on a Dask worker), so that a caller that knows where the
    row came from (a file of a Parquet dataset) can name it with :meth:`at`.
    """

    def __init__(self, message: str, value: float | None = None, bound: float | None = None,
                 row: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.value, self.bound, self.row, self.column = value, bound, row, column

    def __reduce__(self):
        return type(self), (str(self), self.value, self.bound, self.row, self.column)

    def at(self, where: str) -> InputValueError:
        """The same error with its row described as ``where`` (e.g. ``"row 7 of part-1.parquet"``)."""
        return _value_error(self.value, self.bound, self.row, self.column, where)


def _value_error(value, bound, row, col, where=None):
    where = where or f"row {row}"
    if np.isfinite(value):
        return InputValueError(
            f"Input value {value!r} in {where}, column {col} exceeds the magnitude bound {bound:.6g} "
            "of this map (beyond it the map's arithmetic overflows): rescale the data.", value, bound, row, col
        )
    return InputValueError(
        f"Input contains NaN or infinity ({value}) in {where}, column {col}; clean or impute the data first.",
        value, bound, row, col
    )


def _float_dtype(dtype, dtypes, what):
    """The dtype a block of ``dtype`` is converted to, or a ValueError for non-numbers."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise ValueError(
            f"{what} has complex dtype {dtype}: complex input is not supported (features of the real "
            "part would silently drop the imaginary part); pass X.real or np.abs(X) explicitly."
        )
    if dtype.kind not in "biuf":
        raise ValueError(f"{what} has dtype {dtype}: expected real numbers (float, int or bool).")
    return dtype if dtype in dtypes else np.dtype(dtypes[0])


def _bound(bound, dtype):
    # The largest finite value when there is no bound: one comparison also catches inf and NaN.
    # In the block's dtype, so the comparison runs at its SIMD width (no widening).
    top = float(np.finfo(dtype).max)
    limit = top if bound is None else min(float(bound), top)
    b = np.dtype(dtype).type(limit)
    return b if float(b) <= limit else np.nextafter(b, b.dtype.type(0))  # round down, never up


def _check_compressed(X, inner, bound, row_offset, row_numbers, csc=False):
    """Structure and values of CSR (or CSC, whose "rows" are columns) arrays; returns canonical."""
    data, indices, indptr = X.data, X.indices, X.indptr
    outer = X.shape[1] if csc else X.shape[0]
    fmt = "CSC" if csc else "CSR"
    if indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu":
        raise ValueError(f"{fmt} input has non-integer indices ({indices.dtype}) or indptr ({indptr.dtype})")
    if indptr.ndim != 1 or indptr.size != outer + 1 or indptr[0] != 0:
        raise ValueError(
            f"malformed {fmt} input: indptr has {indptr.size} entries (first {indptr[:1].tolist()}), "
            f"expected {outer + 1} starting at 0 for {_rows(X.shape[0], row_offset, row_numbers)}"
        )
    if indices.size != data.size or indices.ndim != 1 or data.ndim != 1:
        raise ValueError(f"malformed {fmt} input: {indices.size} column indices for {data.size} values")
    status, i, p, canonical = _check_csr(data, indices, indptr, inner, _bound(bound, data.dtype))
    if status == 0:
        return canonical
    if csc:  # report (row, column) of the matrix
        if status == 2:
            raise ValueError(
                f"malformed CSC input: row index {int(indices[p])} in column {i} is outside [0, {inner}) "
                f"({_rows(X.shape[0], row_offset, row_numbers)})"
            )
        if status == 1:
            raise ValueError(f"malformed CSC input: indptr decreases or overruns the data at column {i}")
        raise _value_error(data[p].item(), bound, _where(indices[p], row_offset, row_numbers), i)
    row = _where(i, row_offset, row_numbers)
    if status == 1:
        raise ValueError(
            f"malformed CSR input: indptr decreases or overruns the {indices.size} stored values at row {row} "
            f"(indptr[{i}] = {int(indptr[i])}, indptr[{i + 1}] = {int(indptr[i + 1])})"
        )
    if status == 2:
        raise ValueError(
            f"malformed CSR input: row {row} has column index {int(indices[p])}, outside [0, {inner}) "
            "(SciPy does not check this)"
        )
    raise _value_error(data[p].item(), bound, row, int(indices[p]))


def _sparse_block(X, dtypes, bound, row_offset, row_numbers):
    """Canonical CSR (scipy ``csr_matrix``) of a checked sparse block."""
    fmt = X.format
    dtype = _float_dtype(X.dtype, dtypes, f"{fmt.upper()} input")
    if fmt == "coo":
        # COO -> CSR scatters by row index in compiled code: check the coordinates first.
        for name, idx, size in (("row", X.row, X.shape[0]), ("column", X.col, X.shape[1])):
            bad = np.flatnonzero((idx < 0) | (idx >= size)) if idx.size else ()
            if len(bad):
                raise ValueError(f"malformed COO input: {name} index {int(idx[bad[0]])} is outside [0, {size})")
    elif fmt == "csc":  # CSC -> CSR scatters by row index: check it as CSR of the transpose
        X = X.astype(dtype, copy=False)
        _check_compressed(X, X.shape[0], bound, row_offset, row_numbers, csc=True)
    if X.format != "csr":
        X = X.tocsr()
    X = X.astype(dtype, copy=False)
    canonical = _check_compressed(X, X.shape[1], bound, row_offset, row_numbers)
    X = sp.csr_matrix(X)
    if not canonical:
        # Unsorted or repeated indices are valid SciPy (repeats add up): sort and sum them in a
        # copy, then check the sums, which may overflow.
        X = X.copy()
        X.has_canonical_format = False
        X.sum_duplicates()
        _check_compressed(X, X.shape[1], bound, row_offset, row_numbers)
    return X


def validate_block(X: Any, width: int | None = None, *,
                   dtypes: Sequence[npt.DTypeLike] = (np.float64, np.float32), max_abs: float | None = None,
                   accept_sparse: bool = True, row_offset: int = 0,
                   row_numbers: npt.ArrayLike | None = None) -> np.ndarray | sp.csr_matrix:
    """Check a block of rows and return it in the form the kernels expect.

    Parameters
    ----------
    X : array-like or SciPy sparse matrix of shape (n_rows, width)
    width : int, optional
        Required number of columns (the map's ``n_features_in_``); None accepts any.
    dtypes : tuple of dtypes
        Accepted float dtypes; other real input (int, bool, float16) is converted to the first.
    max_abs : float, optional
        Largest accepted ``|x|`` (the map's ``max_abs_input``); None: any finite value.
    accept_sparse : bool
        False densifies checked sparse input.
    row_offset, row_numbers : int, array of int
        Row ``i`` of the block is global row ``row_offset + i``, or ``row_numbers[i]`` when given
        (a block gathered from scattered rows). Errors name global rows.

    Returns
    -------
    ndarray (C-contiguous, a dtype of ``dtypes``) or ``scipy.sparse.csr_matrix`` with sorted,
    unique indices (a new matrix when the input's indices were not; the input is never modified).

    Raises
    ------
    ValueError
        Naming the row (and column) of the first offending value or index.

    Examples
    --------
    >>> import numpy as np
    >>> from dask_kernels.blocks import validate_block
    >>> validate_block(np.array([[1, 2], [3, 4]]), 2).dtype
    dtype('float64')
    >>> validate_block(np.array([[1.0, 2.0], [3.0, 1e300]]), 2, max_abs=1e30, row_offset=10)
    Traceback (most recent call last):
    ...
    dask_kernels.blocks.InputValueError: Input value 1e+300 in row 11, column 1 exceeds the magnitude bound 1e+30 of this map (beyond it the map's arithmetic overflows): rescale the data.
    """
    dtypes = tuple(np.dtype(d) for d in dtypes)
    if sp.issparse(X):
        if width is not None and X.shape[1] != width:
            raise _width_error(X.shape, width, row_offset, row_numbers)
        X = _sparse_block(X, dtypes, max_abs, row_offset, row_numbers)
        return X if accept_sparse else X.toarray()
    X = np.asarray(X)
    if X.dtype.kind == "O":
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError) as e:
            raise ValueError(f"input has dtype object holding values that are not numbers: {e}") from None
    dtype = _float_dtype(X.dtype, dtypes, "input")
    if X.ndim != 2:
        raise ValueError(f"expected a 2-D block (rows, features), got shape {X.shape}")
    if width is not None and X.shape[1] != width:
        raise _width_error(X.shape, width, row_offset, row_numbers)
    X = np.ascontiguousarray(X, dtype=dtype)
    row = _first_bad_row(X, _bound(max_abs, dtype))
    if row >= 0:
        col = int(np.flatnonzero(~(np.abs(X[row]) <= _bound(max_abs, dtype)))[0])
        raise _value_error(X[row, col].item(), max_abs, _where(row, row_offset, row_numbers), col)
    return X


def _width_error(shape, width, row_offset, row_numbers):
    return ValueError(
        f"X has {shape[1]} features, but the map is expecting {width} features as input "
        f"({_rows(shape[0], row_offset, row_numbers)})"
    )


# -- older names, kept for code written against them ---------------------------------------------
def check_finite_rows(X: Any, row_offset: int = 0, row_numbers: npt.ArrayLike | None = None) -> None:
    """:func:`validate_block` without a width or bound (raises on NaN/inf, naming the row)."""
    validate_block(X, row_offset=row_offset, row_numbers=row_numbers)


def as_block(X: Any, dtype: Sequence[npt.DTypeLike] = (np.float64, np.float32)) -> np.ndarray | sp.csr_matrix:
    """:func:`validate_block` without a width or bound: the block in the kernels' form."""
    return validate_block(X, dtypes=dtype)


# -- row bounds of consecutive blocks --------------------------------------------------------------
def block_bounds(i: int, block_rows: int, n_rows: int) -> tuple[int, int]:
    """``(start, stop)`` of block ``i`` when ``n_rows`` rows are cut into blocks of ``block_rows``."""
    return i * block_rows, min((i + 1) * block_rows, n_rows)


def row_bounds(n_rows: int | None = None, block_rows: int | None = None, *,
               sizes=None) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive row blocks: ``n_rows`` rows in blocks of ``block_rows``
    (the last one shorter; none for zero rows), or blocks of the given ``sizes`` (kept as they
    are, empty ones included).

    Examples
    --------
    >>> from dask_kernels.blocks import row_bounds
    >>> row_bounds(5, 2)
    [(0, 2), (2, 4), (4, 5)]
    >>> row_bounds(sizes=[2, 0, 3])
    [(0, 2), (2, 2), (2, 5)]
    """
    if sizes is not None:
        edges = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))]).astype(np.int64)
    else:
        edges = np.append(np.arange(0, n_rows, block_rows, dtype=np.int64), np.int64(n_rows))
        edges = edges[:1] if n_rows == 0 else edges
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]
