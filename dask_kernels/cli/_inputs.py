"""Rows and labels named on the command line, opened lazily (nothing is read until computed)."""

from ._args import UsageError, positive_int
from ._paths import compressed_error, existing, input_format, is_url


def add_input_arguments(parser, blocksize_default=64 * 2**20):
    parser.add_argument("--format", choices=["auto", "npy", "zarr", "svmlight"], default="auto",
                        help="input format (default: from the name: .npy, .zarr, anything else svmlight)")
    parser.add_argument("--n-features", type=positive_int, help="svmlight: input dimension (default: found in a "
                        "first pass; give the training dimension to read a file whose highest index is smaller)")
    parser.add_argument("--zero-based", action="store_true",
                        help="svmlight: indices start at 0 (default: 1, as in LIBSVM files)")
    parser.add_argument("--blocksize", type=positive_int, default=blocksize_default, help="svmlight: bytes per partition")


def open_rows(path, fmt="auto", *, n_features=None, zero_based=False, blocksize=64 * 2**20, block_rows=None,
              flag="input"):
    """``(format, rows)``: a dask array (.npy, Zarr) or SparsePartitions (svmlight); ``path``
    normalized. A feature store is returned as ``("store", FeatureStore)``."""
    from .. import io

    path = existing(path, flag)
    fmt = input_format(path, fmt, flag)
    if fmt == "store":
        from ..pipeline import open_store

        return fmt, open_store(path)
    if fmt == "npy":
        if is_url(path):
            raise UsageError(f"{flag} {path}: .npy input must be a local file (use a Zarr array for URLs)")
        open_npy(path, flag, ndim=2)  # a damaged file fails here, naming it, before any cluster work
        return fmt, io.read_npy(path, block_rows=block_rows)
    if fmt == "zarr":
        return fmt, io.read_zarr(path, block_rows=block_rows)
    try:
        return fmt, io.read_svmlight(path, n_features=n_features, blocksize=blocksize, zero_based=zero_based)
    except Exception as e:  # a compressed file fails in many ways (even unpicklable worker errors)
        err = compressed_error(path, e, flag)
        if err is None:
            raise
        raise err from None


def open_npy(path, flag, ndim=None):
    """A local ``.npy`` memory-mapped (:func:`dask_kernels.io.dense.load_npy`), or one
    UsageError naming ``flag`` and the file."""
    from ..io.dense import load_npy

    try:
        return load_npy(path, ndim)
    except ValueError as e:  # it starts with the path
        raise UsageError(f"{flag} {e}") from None


def load_labels(path, n_rows, flag="--labels"):
    """A 1-D ``.npy`` of ``n_rows`` labels (memory-mapped), checked."""
    path = existing(path, flag)
    if is_url(path) or not path.endswith(".npy"):
        raise UsageError(f"{flag} {path}: expected a local .npy file")
    y = open_npy(path, flag)
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise UsageError(f"{flag} {path}: shape {y.shape}, expected ({n_rows},) (one label per input row)")
    if y.dtype.kind not in "biuf":
        raise UsageError(f"{flag} {path}: dtype {y.dtype} is not numeric; give class labels as integers "
                         "(e.g. numpy.unique(y, return_inverse=True)[1])")
    return y
