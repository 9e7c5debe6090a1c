"""Rows and labels named on the command line, opened lazily (nothing is read until computed)."""

import logging

from ._args import UsageError, positive_int
from ._paths import CSV_COMPRESSED, compressed_error, existing, input_format, is_url

logger = logging.getLogger(__name__)


def add_table_arguments(parser):
    """``--columns`` and ``--label-column``: which columns of a Parquet or CSV input are what."""
    parser.add_argument("--columns", action="append", metavar="A,B,...",
                        help="Parquet/CSV: feature columns, in this order (comma-separated; may be repeated; "
                             "default: every numeric column but the label column)")
    parser.add_argument("--label-column", metavar="NAME",
                        help="Parquet/CSV: the column of labels, numbers or class names (kept out of the features)")
    header = parser.add_mutually_exclusive_group()
    header.add_argument("--header", dest="header", action="store_const", const=True, default="auto",
                        help="CSV: the first line names the columns (default: yes, unless it looks like data, "
                             "which is refused)")
    header.add_argument("--no-header", dest="header", action="store_const", const=False,
                        help="CSV: no header line; the columns are named 0, 1, ... (e.g. --label-column 0)")


def add_input_arguments(parser, blocksize_default=64 * 2**20, for_model=False):
    """The input flags; ``for_model``: a saved model's input (``predict``, ``score``), whose
    svmlight index base defaults to the one the model was trained with."""
    parser.add_argument("--format", choices=["auto", "npy", "zarr", "svmlight", "parquet", "csv"], default="auto",
                        help="input format (default: from the name: .npy, .zarr, .parquet/.pq or a folder of "
                             ".parquet files, .csv (also .csv.gz), anything else svmlight)")
    parser.add_argument("--n-features", type=positive_int, help="svmlight: input dimension (default: found in a "
                        "first pass; give the training dimension to read a file whose highest index is smaller)")
    parser.add_argument("--zero-based", action="store_true",
                        help="svmlight: indices start at 0 (default: " + ("as the model's training file, else "
                             if for_model else "") + "1, as in LIBSVM files)")
    parser.add_argument("--blocksize", type=positive_int, default=blocksize_default,
                        help="svmlight and CSV: bytes per partition")
    add_table_arguments(parser)


def table_columns(args):
    """The ``--columns`` list (None: all numeric), split on commas."""
    given = getattr(args, "columns", None)
    if not given:
        return None
    names = [c.strip() for value in given for c in value.split(",")]
    if not all(names):
        raise UsageError(f"--columns {','.join(given)}: an empty column name")
    return names


def columns_by_name(path, fmt, given, names, owner, flag="input"):
    """The feature columns to read from ``path``: ``given`` (``--columns``), else, for a Parquet
    or CSV input, ``names``, the input columns ``owner`` (a model, a store) was made from, which
    it reads by name (None: none known, the table's default columns)."""
    if names is None or input_format(existing(path, flag), fmt, flag) not in TABLES:
        return given
    names = [str(c) for c in names]
    if given is None:
        return names
    if given != names:
        logger.warning("--columns %s: the %s was made from columns %s", ",".join(given), owner, ",".join(names))
    return given


def open_rows(path, fmt="auto", *, n_features=None, zero_based=False, blocksize=64 * 2**20, block_rows=None,
              columns=None, label_column=None, flag="input", header="auto", named=False):
    """``(format, rows, labels)``, lazily; ``path`` normalized; with ``named`` also the names of
    a Parquet/CSV input's feature columns (None for other inputs).

    ``rows`` is a dask array (.npy, Zarr, Parquet, CSV), SparsePartitions (svmlight) or, for a
    feature store, the FeatureStore. ``labels`` are those the input carries (svmlight, a store,
    Parquet/CSV with ``label_column``), else None.
    """
    from .. import io

    path = existing(path, flag)
    fmt = input_format(path, fmt, flag)
    check_table_flags(fmt, columns, label_column, path)
    if header != "auto" and fmt != "csv":
        raise UsageError(f"--{'no-' if header is False else ''}header: for CSV input, not {fmt} ({path})")
    if fmt == "store":
        from ..pipeline import open_store

        store = open_store(path)
        return (fmt, store, store.labels) + ((None,) if named else ())
    if fmt == "npy":
        if is_url(path):
            raise UsageError(f"{flag} {path}: .npy input must be a local file (use a Zarr array for URLs)")
        open_npy(path, flag, ndim=2)  # a damaged file fails here, naming it, before any cluster work
        return (fmt, io.read_npy(path, block_rows=block_rows), None) + ((None,) if named else ())
    if fmt == "zarr":
        return (fmt, io.read_zarr(path, block_rows=block_rows), None) + ((None,) if named else ())
    if fmt in TABLES:
        return (fmt,) + open_table(path, fmt, columns, label_column, block_rows, blocksize, flag, header, named)
    from ..blocks import MAX_FEATURES_IN

    # wider input: a map refused it as "X", a raw model failed allocating its weights (1.5 TiB at 10**11)
    bound = f"more than the {MAX_FEATURES_IN:,} columns (2**31) any map or model reads"
    if n_features is not None and n_features > MAX_FEATURES_IN:
        raise UsageError(f"--n-features {n_features:,}: {bound}")
    try:
        X = io.read_svmlight(path, n_features=n_features, blocksize=blocksize, zero_based=zero_based)
    except Exception as e:  # a compressed file fails in many ways (even unpicklable worker errors)
        err = compressed_error(path, e, flag)
        if err is None:
            raise
        raise err from None
    if X.shape[1] > MAX_FEATURES_IN:
        raise UsageError(f"{flag} {path}: its largest feature index makes {X.shape[1]:,} columns, {bound}; "
                         "is the file damaged, or are its indices 64-bit hashes? Hash them to at most 2**31")
    return (fmt, X, X.labels) + ((None,) if named else ())


TABLES = ("parquet", "csv")


def check_table_flags(fmt, columns, label_column, path):
    """``--columns``/``--label-column`` name columns of a table: refused for other inputs."""
    if fmt not in TABLES and (columns or label_column):
        raise UsageError(f"--columns/--label-column: for Parquet and CSV input, not {fmt} ({path})")


def open_table(path, fmt, columns, label_column, block_rows=None, blocksize=64 * 2**20, flag="input",
               header="auto", named=False):
    """``(rows, labels or None)`` of a Parquet dataset or CSV file, and with ``named`` the feature
    columns' names (those the reader picks when ``columns`` is None); a file that is not one, a
    missing or non-numeric column: one UsageError naming ``flag`` and the path."""
    from .. import io

    compressed = fmt == "csv" and str(path).lower().endswith(CSV_COMPRESSED)
    csv_options = {"compression": "infer"} if compressed else {}
    try:
        if named and columns is None:
            from ..io.csv import csv_columns
            from ..io.parquet import parquet_columns

            columns = (parquet_columns(path, label=label_column) if fmt == "parquet" else
                       csv_columns(path, label=label_column, header=header, **csv_options))
        if fmt == "parquet":
            got = io.read_parquet(path, columns=columns, label=label_column, block_rows=block_rows)
        else:  # a compressed CSV cannot be cut into byte ranges: one partition per file
            got = io.read_csv(path, columns=columns, label=label_column, header=header,
                              blocksize=None if compressed else blocksize, **csv_options)
    except Exception as e:
        why = str(getattr(e, "cli", e)).replace(str(path), "").lstrip(": ") or type(e).__name__
        # the readers' own checks: a column missing or not a number, a damaged Parquet file
        if isinstance(e, (io.InputChoiceError, io.ParquetFormatError)) or type(e) is ValueError:
            raise UsageError(f"{flag} {path}: {why}") from None
        # pyarrow's, pandas' and the file system's errors (ArrowInvalid, ParserError, OSError, ...)
        what = "Parquet" if fmt == "parquet" else "CSV"
        raise UsageError(f"{flag} {path}: not readable as {what} rows ({type(e).__name__}: {why})") from None
    got = got if label_column else (got, None)
    return got + (columns,) if named else got


def labels_for(args, fmt, X, carried, *, source, required):
    """The labels of a command's input: ``--labels y.npy`` or those the input carries, never both.

    ``required``: a command that needs labels says where they come from for this format."""
    given = getattr(args, "labels", None)
    if given:
        if fmt not in ("npy", "zarr"):  # the others carry their labels (or, tables, name a column)
            why = {"svmlight": "svmlight files carry their labels", "store": "the store carries its labels",
                   "parquet": "Parquet labels are a column: use --label-column",
                   "csv": "CSV labels are a column: use --label-column"}[fmt]
            raise UsageError(f"--labels is for .npy and Zarr input: {why}")
        return load_labels(given, int(X.shape[0]))
    if carried is None and required:
        how = "--label-column NAME" if fmt in TABLES else "--labels y.npy"
        raise UsageError(f"{source}: has no labels; pass {how}")
    return carried


def open_npy(path, flag, ndim=None):
    """A local ``.npy`` memory-mapped (:func:`dask_kernels.io.dense.load_npy`), or one
    UsageError naming ``flag`` and the file."""
    from ..io.dense import load_npy

    try:
        return load_npy(path, ndim)
    except ValueError as e:  # it starts with the path
        raise UsageError(f"{flag} {e}") from None


def load_labels(path, n_rows, flag="--labels"):
    """A 1-D ``.npy`` of ``n_rows`` labels (memory-mapped), checked: numbers, or class names
    (a ``<U`` array; an object array is refused by :func:`open_npy`, pickle being the only way
    to load it)."""
    path = existing(path, flag)
    if is_url(path) or not path.endswith(".npy"):
        raise UsageError(f"{flag} {path}: expected a local .npy file")
    y = open_npy(path, flag)
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise UsageError(f"{flag} {path}: shape {y.shape}, expected ({n_rows},) (one label per input row)")
    if y.dtype.kind == "U":  # class names: checked here (length), counted where they are stored
        from ..labels import names

        try:
            return names(y, where=f"{flag} {path}")
        except ValueError as e:
            raise UsageError(str(e)) from None
    if y.dtype.kind not in "biuf":
        raise UsageError(f"{flag} {path}: dtype {y.dtype} is neither numbers nor class names (str); save labels "
                         "as numbers or as strings (numpy.save(path, y.astype(str)))")
    return y
