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

from ._identity import InputChangedError
from .dense import from_array, read_npy, read_zarr
from .sparse import SparsePartitions, from_sparse
from .svmlight import SvmlightFormatError, read_svmlight
from .csv import read_csv
from .parquet import ParquetFormatError, read_parquet
from .tabular import InputChoiceError, from_dataframe

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
