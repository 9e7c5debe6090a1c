"""CSV files as dense rows: dask's CSV reader followed by :func:`~dask_kernels.io.tabular.from_dataframe`.

The reader does not guess whether the first line names the columns: a first line whose every field
is a number, but for one that is the label column's name (a class name in a headerless file's
first row), is a row of data, refused unless ``header=`` says what it is (an
:class:`~dask_kernels.io.tabular.InputChoiceError`).

Nor does it trust dask's guess of a column's type from the first rows: a feature column of
numbers there is read as float64 (a column of integers whose later rows hold 0.09 or an empty
cell is still numbers), and a non-number further down is an error naming the column, the value
and its row, not dask's table of mismatched dtypes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._compat import csv_float_options
from .tabular import InputChoiceError, _non_numeric, default_columns, from_dataframe

if TYPE_CHECKING:  # names used only in annotations
    import dask.array as da


def _first_line(path, storage_options, compression):
    """The first line of the first file of ``path`` (a file, a glob or a list), decoded."""
    import fsspec

    first = path[0] if isinstance(path, (list, tuple)) else path
    files = fsspec.open_files(first, mode="rt", compression=compression, storage_options=storage_options or {})
    if not files:
        raise FileNotFoundError(f"{path}: no CSV files found")
    with files[0] as f:
        return f.readline(1 << 20)


def _fields(line):
    import csv  # the standard library's (imports are absolute), not this module

    return next(csv.reader([line.rstrip("\r\n")]), [])


def _looks_like_data(line, label=None):
    """Whether every field of a CSV line reads as a number (then it is a row, not column names),
    but for one field equal to ``label`` (the label column's name, which may be a class name of
    a headerless file's first row). Returns False, or the position of ``label`` (None if no
    field is it)."""
    fields = [f.strip() for f in _fields(line)]
    if not fields or fields == [""]:
        return False
    at = fields.index(label) if label is not None and label in fields else None
    try:
        [float(f) for i, f in enumerate(fields) if i != at]
    except ValueError:
        return False
    return at if at is None or len(fields) > 1 else False  # a one-field line is a name


def _refuse_data_line(path, line, at):
    """The error for a first line of numbers (``at``: the position of a field that is the label
    column's name, or None)."""
    what = f"{path}: the first line looks like data, not column names ({line.strip()[:60]!r}); "
    if at is None:
        what += "say whether the file has a header: "
        raise InputChoiceError(what + "header=False (columns named '0', '1', ...) or header=True",
                               what + "--no-header (columns named 0, 1, ...) or --header")
    label = _fields(line)[at].strip()
    what += (f"every field but {label!r}, the label column's name, is a number, so {label!r} may be a value of a "
             "first row of data: if the file has no header line, ")
    raise InputChoiceError(
        what + f"read it with header=False and name the label column by its position (label='{at}'); if the "
               "first line names the columns, pass header=True",
        what + f"give --no-header and name the label column by its position (--label-column {at}); if the "
               "first line names the columns, pass --header")


def read_csv(path: str, *, columns: list[str] | None = None, label: str | None = None, blocksize: int | str = "64MB",
             header: bool | str = "auto", storage_options: dict | None = None,
             **kwargs: Any) -> da.Array | tuple[da.Array, da.Array]:
    """Numeric columns of CSV files (dask's reader) as dense rows; see :func:`from_dataframe`.

    Partitions are dask's byte ranges (``blocksize``); their row counts are computed once, which
    parses the files once more than featurizing alone would.

    ``header``: True, the first line names the columns; False, there is no header line and the
    columns are named ``"0"``, ``"1"``, ... (so ``label="0"`` is the first column); ``"auto"``
    (default), True unless every field of the first line is a number, or every field but one
    equal to ``label``, which is refused: such a line is a row of data (its label a class name),
    and reading it as column names would lose it and misname every column.

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(p, "w").write("a,b,y\\n1,2,0\\n3,4,1\\n")
    >>> X, y = read_csv(p, label="y")
    >>> X.compute().tolist(), y.compute().tolist()
    ([[1.0, 2.0], [3.0, 4.0]], [0, 1])
    """
    ddf, floats, int_label = _frame(path, header, blocksize, storage_options, kwargs, columns, label)
    if columns is None:  # a column of text among the first rows: named before the data is read
        columns = default_columns(ddf, label)
    try:  # the one pass that parses every row
        lengths, integers, extra = _lengths(ddf, label if int_label else None)
    except ValueError:
        # the label column too: read as float64 when its first rows hold integers
        found = _first_non_number(path, header, blocksize, storage_options, kwargs,
                                  floats + ([label] if int_label else []))
        if found is None:
            raise
        column, row, value, among_numbers = found
        if int_label and column == label:
            raise ValueError(f"{path}: row {row} of label column {label!r} holds {value!r} among numbers: labels are "
                             "either all numbers or all class names; if it marks a missing label, drop the rows "
                             "without one or fill them in first") from None
        raise _non_numeric(str(path), [column], ["text"], (row, value, among_numbers)) from None
    if extra is not None:
        _refuse_extra_fields(path, ddf.columns, header, *extra)
    if int_label and integers:  # integer class ids stay integers, as in the first rows
        ddf = ddf.assign(**{label: ddf[label].astype("int64")})
    return from_dataframe(ddf, columns=columns, label=label, lengths=lengths)


def _lengths(ddf, label):
    """``(rows per partition, whether every value of the float64 column label (if given) is an
    integer (no missing one, which the labels' check refuses naming its row), (row, extra fields)
    of the first partition whose rows have more fields than there are columns, or None)``."""
    import dask

    got = dask.compute(*[dask.delayed(_partition_facts)(p, label) for p in ddf.to_delayed()])
    lengths = tuple(n for n, _, _ in got)
    extra = next(((sum(lengths[:i]), e) for i, (_, _, e) in enumerate(got) if e), None)
    return lengths, label is not None and all(ok for _, ok, _ in got), extra


def _refuse_extra_fields(path, columns, header, row, extra):
    """The error for rows with ``extra`` fields more than the columns named: pandas reads the
    extra leading fields as the row index, so a header one name short silently dropped the
    first column. ``index_col=False`` is no better: pandas then drops the extra trailing fields,
    with only a warning."""
    k = len(columns)
    names = ", ".join(map(str, columns[:5])) + (", ..." if k > 5 else "")
    named = f"the header names {k} columns ({names})" if header is not False else f"the first line has {k} fields"
    raise ValueError(f"{path}: row {row} has {k + extra} fields but {named}, so pandas would read "
                     f"{'its first field' if extra == 1 else f'its first {extra} fields'} as the row index and drop "
                     "it: name every column in the header, or remove the extra fields")


def _partition_facts(df, label):
    """``(rows, whether every value of column label is an integer (False without a label),
    extra leading fields read as the index (0: none))`` of one partition."""
    import numpy as np
    import pandas as pd

    # read_csv gives a RangeIndex unless a row's extra leading fields were taken as the index
    extra = 0 if isinstance(df.index, pd.RangeIndex) else df.index.nlevels
    if label is None:
        return len(df), False, extra
    y = df[label].to_numpy(dtype=np.float64)
    return len(df), bool(np.all(np.isfinite(y) & (y == np.round(y)) & (np.abs(y) <= 2**53))), extra


def csv_columns(path: str, *, label: str | None = None, header: bool | str = "auto",
                storage_options: dict | None = None, **kwargs: Any) -> list[str]:
    """The feature columns :func:`read_csv` reads when none are named (every column but
    ``label``; a column of text is an error naming it), from the header and a sample of rows."""
    return default_columns(_frame(path, header, "64MB", storage_options, kwargs, None, label)[0], label)


def _options(path, header, storage_options, kwargs, label=None):
    """dask's ``read_csv`` options for ``path``, ``header`` resolved (see :func:`read_csv`)."""
    if header not in (True, False, "auto"):
        raise ValueError(f"header must be True, False or 'auto', got {header!r}")
    if header is not True or "sample" not in kwargs:
        line = _first_line(path, storage_options, kwargs.get("compression", "infer"))
    if "sample" not in kwargs:
        # dask types the columns from the first 256 kB, and refuses a file whose first line and a row
        # do not fit in them ("increase `sample`", which the command line cannot): a wide file's did not
        kwargs = {**kwargs, "sample": 256_000 + len(line.encode())}
    if header is not True:
        at = _looks_like_data(line, label) if header == "auto" else False
        if at is not False:
            _refuse_data_line(path, line, at)
        if header is False:
            kwargs = {**kwargs, "header": None, "names": [str(i) for i in range(len(_fields(line)))]}
    # every float exactly as written, on every supported pandas (the caller's kwargs win)
    return {**csv_float_options(), **kwargs}


def _frame(path, header, blocksize, storage_options, kwargs, columns, label):
    """``(dask DataFrame of the CSV files, its feature columns read as float64, whether the label
    column is integers in the first rows, read as float64)``.

    dask types each column from a sample of the first rows and refuses, as the rows are read, a
    column whose later rows disagree (integers, then 0.09 or an empty cell). Feature columns of
    numbers in the sample are therefore read as float64 (what the features are made of anyway),
    and so is a label column of integers there (:func:`read_csv` makes it integers again when
    every row holds one); columns the caller gave a ``dtype`` for keep it.
    """
    import dask.dataframe as dd

    options = _options(path, header, storage_options, kwargs, label)
    ddf = dd.read_csv(path, blocksize=blocksize, storage_options=storage_options, **options)
    given = options.get("dtype")
    if given is not None and not isinstance(given, dict):  # one dtype for every column: the caller's choice
        return ddf, [], False
    given = given or {}
    dtypes = ddf.dtypes  # once: ddf[c] builds a new collection per column (minutes for 20,000 columns)
    wanted = [c for c in dtypes.index if c != label] if columns is None else list(columns)
    floats = [c for c in wanted if c in dtypes.index and c not in given and dtypes[c].kind in "iuf"]
    int_label = label in dtypes.index and label not in given and label not in floats and dtypes[label].kind in "iu"
    as_float = floats + ([label] if int_label else [])
    if any(dtypes[c] != "float64" for c in as_float):
        ddf = dd.read_csv(path, blocksize=blocksize, storage_options=storage_options,
                          **{**options, "dtype": {**dict.fromkeys(as_float, "float64"), **given}})
    return ddf, floats, int_label


def _first_non_number(path, header, blocksize, storage_options, kwargs, floats):
    """``(column, row, value, among numbers)`` of the first value in the file of a ``floats``
    column that is not a number (``row``: of the data, from 0), or None. Only called once reading
    them as float64 failed, to say where: it reads those columns again, as text."""
    import dask
    import dask.dataframe as dd

    if not floats:
        return None
    options = _options(path, header, storage_options, kwargs)
    options.update(usecols=list(floats), dtype=dict.fromkeys(floats, object))
    try:
        text = dd.read_csv(path, blocksize=blocksize, storage_options=storage_options, **options)
        found = dask.compute(*[dask.delayed(_partition_non_number)(p, list(floats)) for p in text.to_delayed()])
    except Exception:  # noqa: BLE001 - only refines a message: the caller raises the original error
        return None
    offset = 0
    for n, first in found:
        if first is not None:
            row, column, value, among_numbers = first
            return column, offset + row, value, among_numbers
        offset += n
    return None


def _partition_non_number(df, columns):
    """``(rows, (row, column, value, among numbers) of its first non-number or None)`` of a
    partition read as text; a missing cell (NaN) is not a non-number (the features refuse it)."""
    import numpy as np
    import pandas as pd

    first = None
    for c in columns:
        present = df[c].notna().to_numpy()
        values = df[c].to_numpy(dtype=object)[present]
        bad = pd.to_numeric(pd.Series(values, dtype=object).astype(str), errors="coerce").isna().to_numpy()
        if bad.any():
            row = int(np.flatnonzero(present)[np.argmax(bad)])
            if first is None or row < first[0]:
                first = (row, c, str(values[np.argmax(bad)])[:40], bool((~bad).any()))
    return len(df), first
