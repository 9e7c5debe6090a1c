"""CSV files as dense rows: dask's CSV reader followed by :func:`~dask_kernels.io.tabular.from_dataframe`.

The reader does not guess whether the first line names the columns: a first line whose every field
is a number is a row of data, refused unless ``header=`` says what it is (an
:class:`~dask_kernels.io.tabular.InputChoiceError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._compat import csv_float_options
from .tabular import InputChoiceError, default_columns, from_dataframe

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


def _looks_like_data(line):
    """Whether every field of a CSV line reads as a number (then it is a row, not column names)."""
    fields = [f.strip() for f in _fields(line)]
    if not fields or fields == [""]:
        return False
    try:
        [float(f) for f in fields]
    except ValueError:
        return False
    return True


def read_csv(path: str, *, columns: list[str] | None = None, label: str | None = None, blocksize: int | str = "64MB",
             header: bool | str = "auto", storage_options: dict | None = None,
             **kwargs: Any) -> da.Array | tuple[da.Array, da.Array]:
    """Numeric columns of CSV files (dask's reader) as dense rows; see :func:`from_dataframe`.

    Partitions are dask's byte ranges (``blocksize``); their row counts are computed once, which
    parses the files once more than featurizing alone would.

    ``header``: True, the first line names the columns; False, there is no header line and the
    columns are named ``"0"``, ``"1"``, ... (so ``label="0"`` is the first column); ``"auto"``
    (default), True unless every field of the first line is a number, which is refused: such a
    line is a row of data, and reading it as column names would lose it and misname every column.

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(p, "w").write("a,b,y\\n1,2,0\\n3,4,1\\n")
    >>> X, y = read_csv(p, label="y")
    >>> X.compute().tolist(), y.compute().tolist()
    ([[1.0, 2.0], [3.0, 4.0]], [0, 1])
    """
    return from_dataframe(_frame(path, header, blocksize, storage_options, kwargs), columns=columns, label=label)


def csv_columns(path: str, *, label: str | None = None, header: bool | str = "auto",
                storage_options: dict | None = None, **kwargs: Any) -> list[str]:
    """The feature columns :func:`read_csv` reads when none are named (every column but
    ``label``; a column of text is an error naming it), from the header and a sample of rows."""
    return default_columns(_frame(path, header, "64MB", storage_options, kwargs), label)


def _frame(path, header, blocksize, storage_options, kwargs):
    """dask's DataFrame of the CSV files, ``header`` resolved (see :func:`read_csv`)."""
    import dask.dataframe as dd

    if header not in (True, False, "auto"):
        raise ValueError(f"header must be True, False or 'auto', got {header!r}")
    if header is not True:
        line = _first_line(path, storage_options, kwargs.get("compression", "infer"))
        if header == "auto" and _looks_like_data(line):
            what = (f"{path}: the first line looks like data, not column names ({line.strip()[:60]!r}); "
                    "say whether the file has a header: ")
            raise InputChoiceError(what + "header=False (columns named '0', '1', ...) or header=True",
                                   what + "--no-header (columns named 0, 1, ...) or --header")
        if header is False:
            kwargs = {**kwargs, "header": None, "names": [str(i) for i in range(len(_fields(line)))]}
    # every float exactly as written, on every supported pandas (the caller's kwargs win)
    return dd.read_csv(path, blocksize=blocksize, storage_options=storage_options, **{**csv_float_options(), **kwargs})
