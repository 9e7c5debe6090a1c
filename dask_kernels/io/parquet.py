"""Numeric columns of Parquet files as dense rows, read by pyarrow.

The result is a dask array chunked along rows with *known* row counts (so global row numbers,
store blocks and error messages are fixed before any data is read) plus, with ``label=``, the
label column chunked the same way.

:func:`read_parquet` reads only the files' footers up front: rows per row group come from the
Parquet metadata; a partition is a run of consecutive row groups of one file (about 32 MiB of
float64 input), read by one task, only the requested columns, by pyarrow (one row group at a
time, without pyarrow's thread pool: a task has one core), then copied into rows. pyarrow is the
only Parquet decoder: a damaged file gives pyarrow's rows or a :class:`ParquetFormatError`
naming the file and row group, never a crash or other rows. The array is named by the files'
paths, sizes and modification times, and each task re-checks its file's size and modification
time after reading it (a file rewritten mid-job is an :class:`InputChangedError`, not a mix of
rows).

Finding these read layers again in a graph (one task reading a partition's rows and labels, the
file behind a row) is :mod:`dask_kernels.io._layers`.
"""

from __future__ import annotations

import functools
import json
from collections import Counter

import dask
import dask.array as da
import numpy as np

from .._compat import BlockwiseDepDict, HighLevelGraph, blockwise
from .._hashing import parts_hash
from ._identity import FileIdentity, InputChangedError
from .dense import default_block_rows
from .tabular import _non_numeric


class ParquetFormatError(ValueError):
    """A Parquet file that pyarrow cannot read, or whose row groups disagree with its footer;
    the message names the file and the row group."""


#: Bytes of rows a partition may hold: a row group whose footer claims more (a task cannot split
#: one) is refused when the array is built, before any task allocates for it.
MAX_PARTITION_BYTES = 16 << 30


def _hash(*parts):
    return parts_hash(*parts, text=repr)


def _numeric_kind(arrow_type):
    import pyarrow.types as pt

    return pt.is_integer(arrow_type) or pt.is_floating(arrow_type) or pt.is_boolean(arrow_type)


def _label_type(arrow_type):
    """The type of a label column's values: a dictionary-encoded column (pandas' ``category``,
    R's factors) holds its dictionary's values, class names or numbers, read decoded."""
    import pyarrow.types as pt

    return arrow_type.value_type if pt.is_dictionary(arrow_type) else arrow_type


def _text_kind(arrow_type):
    """Strings: a label column of class names (read as an object array of str)."""
    import pyarrow.types as pt

    return pt.is_string(arrow_type) or pt.is_large_string(arrow_type) or getattr(pt, "is_string_view", bool)(arrow_type)


def _files(path, storage_options):
    """``(filesystem, Parquet file URLs)`` of ``path``, in dask's ``read_parquet`` order: the files
    of a folder or a glob in natural order (``part.2`` before ``part.10``, as dask writes and
    reads them), a list as given."""
    import fsspec
    from dask.utils import natural_sort_key

    fs, _, paths = fsspec.get_fs_token_paths(path, storage_options=storage_options or {})
    if not isinstance(path, (list, tuple)):  # a glob's matches (fsspec sorts them as text)
        paths = sorted(paths, key=natural_sort_key)
    out = []
    for p in paths:
        if fs.isdir(p):
            found = sorted(fs.find(p), key=natural_sort_key)
            out.extend(f for f in found if f.endswith(PARQUET_SUFFIXES))
            _refuse_other_files(path, p, [f for f in found if not f.endswith(PARQUET_SUFFIXES)])
        else:
            out.append(p)
    if not out:
        raise FileNotFoundError(f"{path}: no Parquet files found (.parquet, .parq or .pq)")
    protocol = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
    prefix = "" if protocol in ("file", "local") else f"{protocol}://"
    return fs, [prefix + p if prefix and "://" not in p else p for p in out]


PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")


def _refuse_other_files(path, folder, others):
    """A folder read as a Parquet dataset holds nothing else but what writers leave beside the
    data (names starting with ``_`` or ``.``, such as ``_SUCCESS`` and ``_metadata``): a CSV file
    among Parquet files would otherwise be left out without a word."""
    root = folder.rstrip("/") + "/"
    named = [f[len(root):] if f.startswith(root) else f for f in others]
    data = [n for n in named if not any(part.startswith(("_", ".")) for part in n.split("/"))]
    if data:
        shown = ", ".join(data[:5]) + (f" and {len(data) - 5} more" if len(data) > 5 else "")
        raise ValueError(f"{path}: the folder holds files that are not Parquet ({shown}); read a "
                         "folder of Parquet files only, or name the Parquet files with a glob "
                         "(FOLDER/*.parquet)")


def _options_json(storage_options):
    return json.dumps(storage_options or {}, sort_keys=True)


def _footer(url, storage_options):
    """``(schema, rows per row group, identity)`` of one Parquet file (reads the footer only,
    into the process's cache: the task that runs this parses it once for the reads as well)."""
    ident = FileIdentity(url, storage_options)
    try:
        meta = _metadata(url, _options_json(storage_options), ident.size, ident.mtime)
    except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
        raise ParquetFormatError(f"{url}: not a readable Parquet file ({type(e).__name__}: {e})") from None
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    for g, rows in enumerate(groups):
        if rows < 0:
            raise ParquetFormatError(f"{url}: row group {g}: the footer gives {rows} rows; the file is damaged")
    return meta.schema.to_arrow_schema(), groups, ident


@functools.lru_cache(maxsize=64)
def _leaf_index(url, options_json, size, mtime):
    """``{column name: leaf index}`` of a file's flat leaves (the index of its column chunks)."""
    schema = _metadata(url, options_json, size, mtime).schema
    return {schema.column(i).path: i for i in range(len(schema))}


@functools.lru_cache(maxsize=64)
def _metadata(url, options_json, size, mtime):
    """A file's Parquet footer, parsed once per process and file version: it holds an entry per
    row group and column, so parsing it in every task would cost O(row groups x columns) each
    (160 ms for 64 row groups of 784 columns)."""
    import fsspec
    import pyarrow.parquet as pq

    fs, p = fsspec.core.url_to_fs(url, **json.loads(options_json))
    with fs.open(p, "rb") as f:
        return pq.ParquetFile(f).metadata


class _PartReader:
    """Reads one partition (a run of row groups of one file) as rows: the task function of
    :func:`read_parquet`. What all its tasks share (fsspec options, column names, dtype) is held
    here, so a task is ``(reader, url, groups, n, identity)``: dask walks every list in a task
    and a list of 784 column names per task cost about as much as decoding a small partition."""

    def __init__(self, storage_options, columns, dtype, column=False):
        self.storage_options, self.columns, self.dtype = storage_options, tuple(columns), np.dtype(dtype)
        self.column = column  # one column, returned 1-d (the label)

    def tables(self, url, groups, n, identity, columns, dictionary=()):
        """The row groups' ``columns`` as Arrow tables, one per row group, from the file first
        seen: each read by pyarrow and checked against the footer (its rows, and each column
        chunk's value count: a flat column holds one value or null per row). The columns
        ``dictionary`` are read dictionary-encoded (class names: each distinct name once)."""
        import fsspec
        import pyarrow.parquet as pq

        options = self.storage_options or {}
        fs, p = fsspec.core.url_to_fs(url, **options)
        key = (url, _options_json(options), identity.size, identity.mtime)
        meta, leaves = _metadata(*key), _leaf_index(*key)
        columns = list(columns)
        chunks = [leaves[c] for c in columns if c in leaves]
        tables = []
        with fs.open(p, "rb") as f:
            reader = pq.ParquetFile(f, metadata=meta, read_dictionary=list(dictionary) or None)
            for g in groups:
                try:
                    # one thread: a task has one core (pyarrow's pool would take them all)
                    table = reader.read_row_group(g, columns=columns, use_threads=False)
                except Exception as e:  # noqa: BLE001 - pyarrow raises OSError, ArrowInvalid, ...
                    identity.check()  # a file rewritten under the read is that, not damage
                    raise ParquetFormatError(f"{url}: row group {g}: pyarrow cannot read it ({type(e).__name__}: "
                                             f"{e})") from None
                # the columns' metadata only after pyarrow read them: parsing a damaged one
                # outside a read aborts the process (an uncaught C++ exception in pyarrow)
                rg = meta.row_group(g)
                counts = {rg.num_rows, table.num_rows, *(rg.column(i).num_values for i in chunks)}
                if len(counts) > 1:
                    identity.check()
                    raise ParquetFormatError(
                        f"{url}: row group {g}: its footer gives {rg.num_rows} rows, pyarrow read {table.num_rows}, "
                        f"its column chunks hold {sorted({rg.column(i).num_values for i in chunks})} values; "
                        "the file is damaged")
                tables.append(table)
        identity.check()  # after the read: these rows came from the file first seen
        if sum(t.num_rows for t in tables) != n:  # the footer changed since the job started
            raise InputChangedError(f"{url}: row groups {list(groups)} hold {sum(t.num_rows for t in tables)} rows, "
                                    f"the file's metadata said {n} when the job started")
        return tables

    def rows(self, tables, n, url, groups, identity):
        """The rows of :meth:`tables`' tables (``n`` in all, checked there) of row groups ``groups``
        of ``url``, as one array."""
        if self.column:
            return self.labels(tables, url, groups, identity)
        out = np.empty((n, len(self.columns)), dtype=self.dtype)
        start = 0
        for table in tables:
            if table.column_names != list(self.columns):  # a joint read: the label and the features
                table = table.select(list(self.columns))
            _to_rows(table, out[start:start + table.num_rows])
            start += table.num_rows
        return out

    def labels(self, tables, url, groups, identity):
        """The label column of the tables, in its own type: never through float64 (which rounds
        integers above 2**53 and turns uint64 2**64 - 1 into 0). A null is refused here, naming
        its row in the file: an integer or boolean column has no value for it."""
        import pyarrow.compute as pc

        def row(g, i):  # row i of row group g, as a row of the file
            meta = _metadata(url, _options_json(self.storage_options), identity.size, identity.mtime)
            return sum(meta.row_group(k).num_rows for k in range(g)) + i

        name, parts = self.columns[0], []
        for g, table in zip(groups, tables):
            column = table.column(name)
            if column.null_count:
                i = int(np.flatnonzero(pc.is_null(column).to_numpy(zero_copy_only=False))[0])
                raise ValueError(f"{url}: row {row(g, i)} (row group {g}): label column {name!r} is null; every "
                                 "row needs a label: drop the rows without one or fill them in first")
            if self.dtype.kind == "O":
                _refuse_long_names(column, url, g, name, row)
            parts.append(_decoded(column).to_numpy(zero_copy_only=False))
        return np.concatenate(parts).astype(self.dtype, copy=False) if parts else np.empty(0, self.dtype)

    def dictionary(self):
        """The columns read dictionary-encoded: a label column of class names."""
        return self.columns if self.column and self.dtype.kind == "O" else ()

    def __call__(self, url, groups, n, identity):
        tables = self.tables(url, groups, n, identity, self.columns, self.dictionary())
        return self.rows(tables, n, url, groups, identity)


def _refuse_long_names(column, url, g, name, row):
    """Refuse a class name longer than :data:`~dask_kernels.labels.MAX_CLASS_CHARS` in the
    dictionary-encoded ``column`` before it is decoded: 40 rows repeating one 50 MiB name, 3 KB
    compressed, decoded to 2 GB (the names are checked again as labels, after decoding)."""
    import pyarrow.compute as pc

    from ..labels import MAX_CLASS_CHARS

    start = 0
    for chunk in column.chunks:
        lengths = pc.utf8_length(chunk.dictionary).to_numpy(zero_copy_only=False)
        if lengths.size and lengths.max() > MAX_CLASS_CHARS:  # the dictionary may hold names no row uses
            codes = chunk.indices.to_numpy(zero_copy_only=False)
            long = np.flatnonzero(lengths[codes] > MAX_CLASS_CHARS)
            if long.size:
                i = int(long[0])
                raise ValueError(f"{url}: row {row(g, start + i)} (row group {g}): label column {name!r} holds a class "
                                 f"name of {int(lengths[codes[i]]):,} characters, more than MAX_CLASS_CHARS = "
                                 f"{MAX_CLASS_CHARS} (dask_kernels.labels); use shorter class names")
        start += len(chunk)


def _call(reader, part):
    """A read task: ``reader(*part)`` (the layers' function; ``part`` is the block's own entry
    of the layer's ``BlockwiseDepDict``, so a task carries only its file, groups and identity)."""
    return reader(*part)


class _Parts(BlockwiseDepDict):
    """A read layer's parts by block, tokenized by the layer's name (which already hashes every
    file's path, size and modification time): dask tokenizes a ``Blockwise`` layer's
    ``BlockwiseDepDict`` by its contents, 2 s per 100,000 partitions."""

    def __init__(self, mapping, numblocks, token):
        super().__init__(mapping, numblocks=numblocks)
        self.token = token

    def __dask_tokenize__(self):
        return ("dask_kernels.read_parquet parts", self.token)


def _read_layer(reader, name, parts, ndim):
    """A ``Blockwise`` layer whose task i is ``reader(*parts[i])``.

    Blockwise, not a dict of tasks, so that dask fuses a block's read into the task that
    consumes it under that task's own key: a dict-of-tasks layer is fused by the low-level
    linear fusion, which renames the fused task and keeps an alias task under the consumer's
    key, a second task per block for the scheduler and the worker (measured: about 1.3 ms more
    between two tasks on a worker, and ~2 CPU-ms a block in the scheduler and worker event loops).
    """
    index = "ij"[:ndim]
    dep = _Parts({(i, 0)[:ndim]: part for i, part in enumerate(parts)}, (len(parts), 1)[:ndim], name)
    return blockwise(_call, name, index, reader, None, dep, index, numblocks={}, _data_producer=True)


#: Columns gathered at once when turning Parquet's columns into rows (the general path).
_COLUMN_BATCH = 64


def _to_rows(table, out):
    """Write the table's columns into ``out``, C-contiguous rows (``table.num_rows`` of them);
    nulls become NaN, which input validation refuses naming the row and column.

    When every column already has ``out``'s dtype (float32 or float64), Arrow copies each record
    batch into a column-major block in C++ (``to_tensor``) and NumPy transposes it once: 1.7x
    faster than the general path, which pays a Python call per column (784 per block).
    """
    import pyarrow as pa

    want = pa.from_numpy_dtype(out.dtype)  # once: per column it cost 1.7 ms of a 784-column block
    if all(t == want for t in table.schema.types):
        start = 0
        for batch in table.to_batches():
            out[start:start + batch.num_rows] = np.asarray(batch.to_tensor(null_to_nan=True, row_major=False))
            start += batch.num_rows
        return
    # columns of other types (integers, booleans, mixed): _COLUMN_BATCH at a time, gathered
    # contiguously, then written transposed (64 adjacent values per row instead of one: writing
    # column by column into row-major rows touches a new cache line per value, ~1.7x slower)
    batch = np.empty((min(_COLUMN_BATCH, table.num_columns), table.num_rows), dtype=out.dtype)
    for a in range(0, table.num_columns, _COLUMN_BATCH):
        k = min(_COLUMN_BATCH, table.num_columns - a)
        for j in range(k):
            batch[j] = _decoded(table.column(a + j)).to_numpy(zero_copy_only=False)
        out[:, a:a + k] = batch[:k].T


def _decoded(column):
    """A column's values (a dictionary-encoded label column: its dictionary's values, row by row)."""
    import pyarrow.types as pt

    return column.cast(column.type.value_type) if pt.is_dictionary(column.type) else column


def _array(name, parts, storage_options, columns, dtype, column=False):
    """A dask array whose task i reads partition i; each task carries only its own file, row
    groups and identity (a graph linear in the number of partitions)."""

    counts = tuple(p[2] for p in parts)
    reader = _PartReader(storage_options, columns, dtype, column=column)
    if column:
        chunks, meta = (counts,), np.empty((0,), dtype)
    else:
        chunks, meta = (counts, (len(columns),)), np.empty((0, 0), dtype)
    layer = _read_layer(reader, name, parts, len(chunks))
    return da.Array(HighLevelGraph.from_collections(name, layer, dependencies=[]), name, chunks, meta=meta)


def _index_columns(schema):
    """Columns holding the DataFrame index that pandas or dask stored with the data
    (``__index_level_0__``, dask's ``__null_dask_index__``, a named index), from the pandas
    metadata in the file's schema: an index is not a feature."""
    meta = schema.pandas_metadata or {}
    return {c for c in meta.get("index_columns", []) if isinstance(c, str)}  # a RangeIndex is a dict


def _pick_columns(schema, columns, label, where):
    names = list(schema.names)
    if label is not None and label not in names:
        raise ValueError(f"{where}: label column {label!r} not found (columns: {names[:20]})")
    index = _index_columns(schema)
    count = Counter(names)
    for c in ([n for n in names if n not in index] if columns is None else list(columns)) + [label]:
        if count[c] > 1:  # pyarrow finds such a column by no name ("Column a does not exist in schema")
            raise ValueError(f"{where}: column {c!r} appears {count[c]} times in the file's schema; columns are read "
                             "by name: give each column its own name")
    if columns is None:
        candidates = [n for n in names if n != label and n not in index]
        other = [n for n in candidates if not _numeric_kind(schema.field(n).type)]
        if other:
            raise _non_numeric(where, other, [schema.field(n).type for n in other])
        columns = candidates
        if not columns:
            raise ValueError(f"{where}: no numeric columns besides the label")
    else:
        columns = list(columns)
        for c in columns:
            if c not in names:
                raise ValueError(f"{where}: column {c!r} not found (columns: {names[:20]})")
    for c in columns:
        if not _numeric_kind(schema.field(c).type):
            raise ValueError(f"{where}: column {c!r} has type {schema.field(c).type}, not a number; select "
                             "numeric columns with columns=[...]")
    if label is not None and not (_numeric_kind(_label_type(schema.field(label).type))
                                  or _text_kind(_label_type(schema.field(label).type))):
        raise ValueError(f"{where}: label column {label!r} has type {schema.field(label).type}: labels are numbers "
                         "or class names (strings)")
    return columns


def parquet_columns(path: str, *, label: str | None = None, storage_options: dict | None = None) -> list[str]:
    """The feature columns :func:`read_parquet` reads when none are named, from the first file's
    footer: every numeric column but ``label`` and a stored DataFrame index (a column of text
    is an error naming it)."""
    urls = _files(path, storage_options)[1]
    return _pick_columns(_footer(urls[0], storage_options)[0], None, label, urls[0])


def read_parquet(path: str, *, columns: list[str] | None = None, label: str | None = None,
                 block_rows: int | None = None,
                 storage_options: dict | None = None) -> da.Array | tuple[da.Array, da.Array]:
    """Numeric columns of Parquet files as dense rows (a lazy dask array with known row counts).

    Only the footers are read here (in parallel on the active scheduler): rows per row group come
    from the metadata. A partition is a run of consecutive row groups of one file holding about
    ``block_rows`` rows, read by one task, only the selected columns, by pyarrow. A null is read
    as NaN, which featurizing refuses; into a store, the error names the file and its row there
    (see :func:`~dask_kernels.io._layers.name_input_error`). A file pyarrow cannot read, or
    whose row groups hold other row counts than its footer gives, raises
    :class:`ParquetFormatError` naming the file and the row group; a row group too large for one
    task (:data:`MAX_PARTITION_BYTES` of rows) is refused here, before any task runs.

    Parameters
    ----------
    path : str or list of str
        A file, a folder of ``*.parquet`` files, a glob, or a list; local or fsspec URL
        (``s3://...``), readable by every worker. Rows come in dask's ``read_parquet`` order:
        a folder's or a glob's files in natural order (``part.2`` before ``part.10``), a list's
        as given.
    columns : list of str, optional
        Feature columns, in this order. Default: every numeric column except ``label`` and the
        DataFrame index pandas or dask stored as a column (``__index_level_0__``,
        ``__null_dask_index__`` or a named index, as the file's pandas metadata lists them).
    label : str, optional
        Label column, returned as a second array chunked like the rows: numbers in the
        column's own type (int64 and uint64 exactly, bool), or class names (a string column,
        returned as an object array of ``str``); a dictionary-encoded column (pandas'
        ``category``, R's factors) gives its values. A null label is refused when the labels
        are read, naming the file and its row.
    block_rows : int, optional
        Target rows per partition (row groups are never split); default about 32 MiB of float64
        input.
    storage_options : dict, optional
        fsspec options (e.g. S3 credentials and ``client_kwargs``).

    Returns
    -------
    X : dask.array.Array of shape (n_rows, len(columns))
        Float64 (or the columns' common float type), chunked along rows.
    y : dask.array.Array of shape (n_rows,)
        Only when ``label`` is given: ``(X, y)`` is returned.

    Raises
    ------
    ParquetFormatError
        Here or when a task reads its row groups: a damaged file (naming it and the row group).
    InputChangedError
        When a task finds its file changed (size or modification time) since this call.

    Examples
    --------
    >>> import os, tempfile, numpy as np, pyarrow as pa, pyarrow.parquet as pq
    >>> p = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pq.write_table(pa.table({"a": np.arange(6.0), "b": np.ones(6), "y": [0, 1] * 3}), p, row_group_size=2)
    >>> X, y = read_parquet(p, label="y", block_rows=4)
    >>> X.chunks, y.compute().tolist()
    (((4, 2), (2,)), [0, 1, 0, 1, 0, 1])
    """
    fs, urls = _files(path, storage_options)
    footers = dask.compute(*[dask.delayed(_footer, pure=False)(u, storage_options) for u in urls])
    schema = footers[0][0]
    columns = _pick_columns(schema, columns, label, urls[0])
    for u, (s, _, _) in zip(urls[1:], footers[1:]):
        for c in columns + ([label] if label is not None else []):
            # a label's dictionary may have other index widths from file to file: its values count
            same = (c in s.names and (s.field(c).type == schema.field(c).type
                    or (c == label and _label_type(s.field(c).type) == _label_type(schema.field(c).type))))
            if not same:
                raise ValueError(f"{u}: column {c!r} is missing or has another type than in {urls[0]}")
    # float32 columns stay float32; anything else (integers, booleans, float64) becomes float64,
    # which holds integers exactly up to 2**53
    f32 = all(schema.field(c).type.to_pandas_dtype() == np.float32 for c in columns)
    dtype = np.dtype(np.float32 if f32 else np.float64)
    target = int(block_rows or default_block_rows(len(columns)))
    if target < 1:
        raise ValueError(f"block_rows must be >= 1, got {block_rows}")
    x_parts = []
    for u, (_, groups, ident) in zip(urls, footers):
        run, n = [], 0
        for g, rows in enumerate(groups):
            if rows * len(columns) * dtype.itemsize > MAX_PARTITION_BYTES:  # bounded: refused before a task allocates
                raise ParquetFormatError(
                    f"{u}: row group {g}: its footer gives {rows} rows, {rows * len(columns) * dtype.itemsize / 2**30:.1f} "
                    f"GiB as rows of {len(columns)} {dtype} columns, more than a task holds "
                    f"({MAX_PARTITION_BYTES >> 30} GiB; a row group is never split): rewrite the file with smaller row "
                    "groups (pyarrow: row_group_size=...), or select fewer columns")
            run.append(g)
            n += rows
            if n >= target:
                x_parts.append((u, tuple(run), n, ident))
                run, n = [], 0
        if run:
            x_parts.append((u, tuple(run), n, ident))
    token = _hash([(u, f[2].size, f[2].mtime, f[1]) for u, f in zip(urls, footers)], target)
    X = _array(f"parquet-{token}-{_hash(columns, dtype.str)}", x_parts, storage_options, columns, dtype)
    if label is None:
        return X
    if _text_kind(_label_type(schema.field(label).type)):
        ldtype = np.dtype(object)  # class names: checked and encoded where they are stored
    else:
        ldtype = np.dtype(_label_type(schema.field(label).type).to_pandas_dtype())
        ldtype = np.dtype(np.float64) if ldtype.kind not in "iufb" else ldtype
    y = _array(f"parquet-{token}-label-{_hash(label)}", x_parts, storage_options, [label], ldtype, column=True)
    return X, y
