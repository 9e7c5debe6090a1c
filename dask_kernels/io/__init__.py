"""Readers that turn what users have into row-partitioned input for the pipeline.

* dense rows: :func:`read_npy` (memory-mapped ``.npy``), :func:`read_zarr`, :func:`from_array`
  (in-memory NumPy) all give a :class:`dask.array.Array` chunked along rows only;
* tables: :func:`read_parquet` (row counts from the Parquet metadata), :func:`read_csv` and
  :func:`from_dataframe` (any dask DataFrame) give the numeric columns as dense rows (and the
  label column);
* sparse rows: :func:`from_sparse` (in-memory SciPy matrix) and :func:`read_svmlight`
  (svmlight/LIBSVM text split into byte ranges) give a :class:`SparsePartitions`.

Every reader names its output after a cheap fingerprint of the input (file path, size and
modification time, or a content hash for in-memory data), so a resumed store can tell whether it
is being fed the same input.
"""

from .._lazy import lazy_attributes

# Imported on first use: a command that reads a store or one kind of input imports that reader
# only (the dense readers' dask.array, the tables' pandas and pyarrow are not free).
_LAZY = {"InputChangedError": "._identity", "from_array": ".dense", "read_npy": ".dense", "read_zarr": ".dense",
         "SparsePartitions": ".sparse", "from_sparse": ".sparse", "SvmlightFormatError": ".svmlight",
         "read_svmlight": ".svmlight", "read_csv": ".csv", "ParquetFormatError": ".parquet",
         "read_parquet": ".parquet", "InputChoiceError": ".tabular", "from_dataframe": ".tabular"}
__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)

__all__ = [
    "InputChangedError",
    "InputChoiceError",
    "ParquetFormatError",
    "SparsePartitions",
    "SvmlightFormatError",
    "from_array",
    "from_dataframe",
    "from_sparse",
    "read_csv",
    "read_npy",
    "read_parquet",
    "read_svmlight",
    "read_zarr",
]
