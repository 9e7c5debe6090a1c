"""Numeric columns of any dask DataFrame as dense rows.

The result is a dask array chunked along rows with *known* row counts (so global row numbers,
store blocks and error messages are fixed before any data is read) plus, with ``label=``, the
label column chunked the same way.

:func:`from_dataframe` takes any dask DataFrame: partitions become blocks; their lengths are
computed once (one pass over the data: dask DataFrames do not know them). :func:`as_rows` does
the same for the pipeline and the learners. :class:`InputChoiceError` (an input the readers will
not guess about) is raised by every table reader.

CSV files are read by :func:`dask_kernels.io.csv.read_csv` (dask's CSV reader followed by
:func:`from_dataframe`), Parquet files by :func:`dask_kernels.io.parquet.read_parquet`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import dask
import dask.array as da
import numpy as np

if TYPE_CHECKING:  # names used only in annotations
    import dask.dataframe as dd


class InputChoiceError(ValueError):
    """An input the readers will not guess about (a column of text among the features, a first
    CSV line that may be a header or a row): ``str()`` says what to pass in Python, ``cli`` the
    same in command-line flags."""

    def __init__(self, message, cli):
        super().__init__(message)
        self.cli = cli


def _non_numeric(where, names, types, example=None):
    """The error for feature columns that are not numbers; ``example``: ``(row, value, among
    numbers)`` of the first of them (:func:`_first_text`), shown when known."""
    shown = ", ".join(f"{n!r} ({t})" for n, t in zip(names[:5], types[:5]))
    what = (f"{where}: column{'s' if len(names) > 1 else ''} {shown} {'are' if len(names) > 1 else 'is'} "
            "not numeric")
    if example is not None:
        row, value, among_numbers = example
        what += f" (row {row} of {names[0]!r} holds {value!r}"
        # a mostly numeric CSV column with a marker such as "?": what to do differs
        what += " among numbers: if it marks a missing value, clean or impute the data first)" if among_numbers else ")"
    what += "; a column of labels (numbers or class names) is named with "
    return InputChoiceError(what + "label=NAME; select the feature columns with columns=[...]",
                            what + "--label-column NAME; select the feature columns with --columns A,B,...")


#: rows of the first partition searched for a value to show in the error for a text column
EXAMPLE_ROWS = 10_000


def _first_text(ddf, column):
    """``(row, value, among_numbers)`` of the first value of ``column`` that is not a number, in
    the first :data:`EXAMPLE_ROWS` rows, or None (not found there, or not readable: it only
    refines a message). ``among_numbers``: other values there are numbers."""
    import pandas as pd

    try:
        head = ddf[column].head(EXAMPLE_ROWS, npartitions=1, compute=True).reset_index(drop=True)
        values = head.dropna()
        parsed = pd.to_numeric(values.astype(str), errors="coerce")
        text = values[parsed.isna()]
        if text.empty:
            return None
        value = text.iloc[0]
        return int(text.index[0]), str(value)[:40], bool(parsed.notna().any())
    except Exception:  # noqa: BLE001 - only refines a message
        return None


# -- dask DataFrames in general --------------------------------------------------------------------
def is_dataframe(X):
    """Whether ``X`` is a dask DataFrame or Series (without importing dask.dataframe needlessly)."""
    mod = type(X).__module__ or ""
    return mod.startswith(("dask.dataframe", "dask_expr")) and hasattr(X, "npartitions")


def column_names(X) -> list[str] | None:
    """The column names of a pandas or dask DataFrame, as strings; None for anything else."""
    if not hasattr(X, "columns") or not (is_dataframe(X) or (type(X).__module__ or "").startswith("pandas")):
        return None
    return [str(c) for c in X.columns]


def partition_lengths(*frames):
    """Rows per partition of each dask DataFrame or Series (a list of tuples), computed together:
    one pass over the data (dask DataFrames do not know them; frames taken from the same
    DataFrame, such as its feature columns and its label column, share their reads)."""
    return [tuple(int(n) for n in got) for got in dask.compute(*[f.map_partitions(len) for f in frames])]


def _is_number(dtype):
    from pandas.api.types import is_numeric_dtype  # numbers and booleans (NumPy or pandas dtypes)

    return is_numeric_dtype(dtype)


def _is_text(dtype):
    """A column of class names (object or pandas string dtype; each value checked when stored)."""
    from pandas.api.types import is_object_dtype, is_string_dtype

    return is_string_dtype(dtype) or is_object_dtype(dtype)


def _check_numeric(ddf, columns, where):
    dtypes = ddf.dtypes  # once: ddf[c] builds a new collection per column (minutes for 20,000 columns)
    for c in columns:
        dt = dtypes[c]
        if not _is_number(dt):
            raise ValueError(f"{where}: column {c!r} has dtype {dt}, not a number; select numeric columns "
                             "with columns=[...]")


def default_columns(ddf: dd.DataFrame, label: str | None = None) -> list[str]:
    """The feature columns :func:`from_dataframe` reads when none are named: every column but
    ``label``, all of which must be numbers (a column of text is an error naming it)."""
    names = list(ddf.columns)
    if label is not None and label not in names:
        raise ValueError(f"label column {label!r} not found (columns: {names[:20]})")
    dtypes = ddf.dtypes  # once: ddf[c] builds a new collection per column (minutes for 20,000 columns)
    other = [c for c in names if c != label and not _is_number(dtypes[c])]
    if other and ddf.head(1, npartitions=-1, compute=True).empty:
        # no row to infer a type from (a CSV of its header alone): text is the readers' guess
        raise ValueError("the DataFrame has no rows (a file of a header alone?): nothing to read")
    if other:
        raise _non_numeric("DataFrame", other, [dtypes[c] for c in other], _first_text(ddf, other[0]))
    columns = [c for c in names if c != label]
    if not columns:
        raise ValueError("the DataFrame has no numeric columns besides the label")
    return columns


def from_dataframe(ddf: dd.DataFrame, *, columns: list[str] | None = None, label: str | None = None,
                   lengths: tuple[int, ...] | None = None) -> da.Array | tuple[da.Array, da.Array]:
    """Numeric columns of a dask DataFrame as dense rows: partitions as blocks, lengths known.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
    columns : list of str, optional
        Feature columns; default every column except ``label``, which must then all be numeric
        (a column of text is an error naming it, never dropped silently).
    label : str, optional
        Label column, returned as a second array chunked like the rows: numbers, or class
        names (a string or object column, returned as an object array).
    lengths : sequence of int or False, optional
        Rows per partition when known; otherwise computed once (one pass over the data); False:
        not computed, the row chunks are of unknown sizes (NaN).

    Returns
    -------
    X : dask.array.Array of shape (n_rows, n_columns), float64, chunked by partition
    y : dask.array.Array of shape (n_rows,), only with ``label`` (then ``(X, y)``)

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> ddf = dd.from_pandas(pd.DataFrame({"a": [1.0, 2, 3], "b": [4, 5, 6], "y": [0, 1, 0]}), npartitions=2)
    >>> X, y = from_dataframe(ddf, label="y")
    >>> X.chunks, X.compute().tolist()
    (((2, 1), (2,)), [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])
    """
    if label is not None and label not in ddf.columns:
        raise ValueError(f"label column {label!r} not found (columns: {list(ddf.columns)[:20]})")
    if label is not None and _is_categorical(ddf[label].dtype):
        ddf = ddf.assign(**{label: _decoded(ddf[label])})
    columns = default_columns(ddf, label) if columns is None else list(columns)
    missing = [c for c in columns if c not in ddf.columns]
    if missing:
        raise ValueError(f"column {missing[0]!r} not found (columns: {list(ddf.columns)[:20]})")
    _check_numeric(ddf, columns + ([label] if label is not None and not _is_text(ddf[label].dtype) else []),
                   "DataFrame")
    if lengths is False:
        lengths = None
    else:
        lengths = list(lengths if lengths is not None else partition_lengths(ddf)[0])
        if len(lengths) != ddf.npartitions:
            raise ValueError(f"{len(lengths)} partition lengths for {ddf.npartitions} partitions")
    X = ddf[columns].to_dask_array(lengths=lengths).astype(np.float64)
    if label is None:
        return X
    return X, _label_array(ddf[label], lengths)


def _is_categorical(dtype):
    import pandas as pd

    return isinstance(dtype, pd.CategoricalDtype)


def _decoded(series):
    """A categorical Series of labels (pandas' ``category``, a Parquet dictionary column) as its
    values: class names as objects, numbers as the categories' dtype (object when dask does not
    know the categories: their values are class names then, checked where they are stored)."""
    known = series.cat.known if is_dataframe(series) else True
    categories = series.dtype.categories.dtype if known else np.dtype(object)
    return series.astype(categories if _is_number(categories) else object)


def _label_array(series, lengths):
    """A dask Series of labels as a dask array; class names as Python strings (object), cast in
    the Series first: dask warns when it converts pandas' string dtype itself."""
    if _is_categorical(series.dtype):
        series = _decoded(series)
    if _is_text(series.dtype) and series.dtype != object:
        series = series.astype(object)
    return series.to_dask_array(lengths=lengths)


def as_rows(X, y=None, *, lengths=True):
    """``(X, y)`` with dask DataFrames/Series turned into dask arrays of known row counts
    (everything else is returned as it is); the hook the pipeline and the learners call.

    The row counts of both are computed in one pass. ``lengths=False``: none is computed, the
    arrays have row chunks of unknown sizes (NaN, as dask's own ``to_dask_array()``), for a
    consumer that needs no row offsets."""
    if not (is_dataframe(X) or is_dataframe(y)):
        return X, y
    import dask.dataframe as dd  # noqa: PLC0415 - only once a DataFrame is seen

    if is_dataframe(X) and not isinstance(X, dd.DataFrame):
        raise ValueError("rows must be a dask DataFrame (or array), got a dask Series; use "
                         "series.to_frame()")
    if is_dataframe(y) and not isinstance(y, dd.Series):
        raise ValueError("labels must be a dask Series, got a DataFrame")
    frames = [f for f in (X, y) if is_dataframe(f)]
    counts = partition_lengths(*frames) if lengths else [None] * len(frames)
    if is_dataframe(X):
        X = from_dataframe(X, lengths=counts.pop(0) if lengths else False)
    if is_dataframe(y):  # its own lengths: its partitions need not be the rows' (slices are global)
        y = _label_array(y, None if counts[0] is None else list(counts[0]))
    return X, y
