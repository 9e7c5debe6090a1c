"""Paths at the command line's boundary: normalized once, formats told apart by name.

A local path (or a ``file://`` URL) becomes an absolute path with symbolic links resolved, so
the same file named relatively, absolutely or through a link is the same job (stores fingerprint
their input's path). Other URLs (``s3://``, ``gs://``, ...) pass through to fsspec unchanged.
"""

import os

from .._files import file_problem
from ._args import UsageError

#: First bytes of compressed files -> compression name.
MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))


def is_url(path):
    return "://" in str(path) and not str(path).startswith("file://")


def normalize(path):
    """Absolute, resolved local path; other URLs unchanged."""
    path = str(path)
    if path.startswith("file://"):
        path = path[len("file://"):]
    if is_url(path):
        return path
    return os.path.realpath(os.path.expanduser(path))


def is_glob(path):
    return any(c in str(path) for c in "*?[")


def exists(path, storage_options=None):
    """Whether something is at ``path``; for a glob (``data/*.parquet``), whether it matches."""
    if not is_url(path):
        if is_glob(path):
            import glob

            return bool(glob.glob(path))
        return os.path.lexists(path)
    from ..pipeline.location import filesystem

    fs, p = filesystem(path, storage_options)
    return bool(fs.glob(p)) if is_glob(p) else fs.exists(p)


def existing(path, flag):
    """``normalize(path)``, or a UsageError naming ``flag`` when nothing is there."""
    # the path as given: resolved, a process substitution's /dev/fd/63 becomes "pipe:[...]", not found
    local = isinstance(path, (str, os.PathLike)) and not is_url(os.fspath(path)) and not is_glob(os.fspath(path))
    if local and os.path.exists(path) and not os.path.isdir(path):
        problem = file_problem(path, 2**63)  # the readers would block on a FIFO forever, read a device without end
        if problem is not None:
            raise UsageError(f"{flag} {path} {problem}: the readers read a file more than once; write it to a file")
    p = normalize(path)
    try:
        found = exists(p)
    except (OSError, ValueError, ImportError) as e:
        raise UsageError(f"{flag} {path}: cannot be reached ({e})") from None
    if not found:
        raise UsageError(f"{flag} {path}: no such file or directory")
    return p


def output_store(path, overwrite=False, flag="output"):
    """``normalize(path)`` of a store to write, refused (UsageError naming ``flag``) before any
    work when it is inside a saved model or another store, or (``overwrite``) when the store
    there holds entries it does not consist of."""
    from ..pipeline.creation import refuse_strays
    from ..pipeline.location import refuse_nesting

    p = normalize(path)
    try:
        refuse_nesting(p)
        if overwrite and is_store(p):
            refuse_strays(p)
    except ValueError as e:
        raise UsageError(f"{flag} {e}") from None
    return p


def is_store(path):
    """Whether ``path`` holds a dask_kernels feature store (a directory/prefix with our zarr.json)."""
    from ..pipeline.location import inspect_path

    try:
        return inspect_path(path)[0] == "ours"
    except (OSError, ValueError):
        return False


#: Suffixes of formats the command line does not read -> what to do instead. Without this they
#: were parsed as svmlight and refused for their first line's "label".
NOT_ROWS = {
    ".tsv": "read it in Python with dask_kernels.read_csv(path, sep='\\t'), or save it as CSV or Parquet",
    ".npz": "save one array per file with numpy.save",
}

#: Table formats by suffix (compressed CSV too: dask reads it whole, one partition per file).
TABULAR = {".parquet": "parquet", ".pq": "parquet", ".parq": "parquet", ".csv": "csv"}
CSV_COMPRESSED = (".csv.gz", ".csv.bz2", ".csv.xz")


def _parquet_folder(path):
    """Whether ``path`` is a folder (local or URL) holding ``*.parquet`` files, as Spark and dask
    write a dataset."""
    try:
        if not is_url(path):
            return os.path.isdir(path) and any(n.endswith(".parquet") for n in os.listdir(path))
        from ..pipeline.location import filesystem

        fs, p = filesystem(path)
        return fs.isdir(p) and bool(fs.glob(p.rstrip("/") + "/*.parquet"))
    except (OSError, ValueError):
        return False


def input_format(path, fmt="auto", flag="input"):
    """"npy", "zarr", "store", "parquet", "csv" or "svmlight" (by name; a feature store by its
    contents, a Parquet dataset by its files)."""
    if fmt != "auto":
        return fmt
    p = str(path).rstrip("/")
    if p.endswith(".npy"):
        return "npy"
    if is_store(p):
        return "store"
    if p.endswith(".zarr"):
        return "zarr"
    lower = p.lower()
    suffix = os.path.splitext(lower)[1]
    if suffix in TABULAR:
        return TABULAR[suffix]
    if lower.endswith(CSV_COMPRESSED):
        return "csv"
    if suffix in NOT_ROWS:
        raise UsageError(f"{flag} {path}: the command line reads .npy, Zarr, Parquet, CSV and svmlight/LIBSVM rows, "
                         f"not {suffix} files; {NOT_ROWS[suffix]} (or pass --format svmlight if it is svmlight)")
    if _parquet_folder(p):
        return "parquet"
    if not is_url(p) and os.path.isdir(p):  # not a store, not Zarr, no Parquet files in it
        names = sorted(os.listdir(p))
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "") if names else "nothing"
        raise UsageError(f"{flag} {path}: a folder without .parquet files (it holds {shown}); give a file "
                         "(.npy, .parquet, .csv, svmlight), a folder of .parquet files, a Zarr array or a "
                         "feature store")
    return "svmlight"


def compression(path):
    """The compression of the file at ``path`` by its first bytes ("gzip", "bzip2", ...) or None."""
    try:
        if is_url(path):
            from ..pipeline.location import filesystem

            fs, p = filesystem(path)
            with fs.open(p, "rb") as f:
                head = f.read(8)
        else:
            with open(path, "rb") as f:
                head = f.read(8)
    except (OSError, ValueError):
        return None
    return next((name for magic, name in MAGIC if head.startswith(magic)), None)


def compressed_error(path, exc, flag="input"):
    """A one-line UsageError for a reader's failure on a compressed file, or None."""
    kind = compression(path)
    if kind is None:
        return None
    return UsageError(f"{flag} {path}: a {kind}-compressed file, which this version's svmlight reader cannot "
                      f"parse ({type(exc).__name__}); decompress it first, e.g. `{kind} -dk FILE`")
