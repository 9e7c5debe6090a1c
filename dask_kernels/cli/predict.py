"""``dask-kernels predict MODEL INPUT -o OUTPUT``: apply a saved model on the cluster.

Predictions (or ``--proba`` class probabilities) of every input row are computed by the
workers, partition by partition, and written to ``OUTPUT``: a Zarr array (``.zarr``: written
by the workers), a Parquet dataset (``.parquet``: written by the workers, with a ``row`` column
giving each prediction's 0-based row number in the input), a ``.npy`` file or a ``.csv`` file
(``row`` and prediction columns; both gathered by the client). Row ``i`` of a Zarr or ``.npy``
output is input row ``i``. A model trained on class names predicts class names: a ``<U``
``.npy``, a Parquet or CSV string column, a Zarr array of variable-length UTF-8 strings. Results are written under a temporary name beside
``OUTPUT`` and renamed into place. An existing ``OUTPUT`` is replaced only with ``--overwrite``
and only when it is a prediction output that ``predict`` wrote (:mod:`._owned`); a job file's
``[[outputs]]`` replace what the same job wrote on its previous run.
"""

import argparse
import os

from ._args import UsageError
from ._cluster import add_cluster_arguments, client_for
from ._inputs import add_input_arguments
from ._owned import FILE_KINDS, check_replaceable, publish, write_marker, writer_of, written_aside
from ._paths import exists, is_url, normalize

help = "predict labels or probabilities of raw rows (or a store) with a saved model; write Zarr, Parquet, .npy or CSV"

KINDS = {".zarr": "zarr", ".parquet": "parquet", ".npy": "npy", ".csv": "csv"}


def add_arguments(parser):
    parser.add_argument("model", help="directory of a saved model (dask-kernels train -o)")
    parser.add_argument("input", help="rows to predict: .npy, Zarr array, Parquet, CSV, svmlight file, or a feature store "
                                      "made with the model's map")
    parser.add_argument("-o", "--output", required=True,
                        help="where to write: NAME.zarr, NAME.parquet, NAME.npy or NAME.csv (must not exist, see "
                             "--overwrite)")
    parser.add_argument("--proba", action="store_true", help="class probabilities instead of labels")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace OUTPUT if it is a prediction output written by dask-kernels predict "
                             "(anything else is refused, never replaced)")
    parser.add_argument("--job", default=None, help=argparse.SUPPRESS)  # set by `run`: the job file writing OUTPUT
    add_input_arguments(parser, for_model=True)
    add_cluster_arguments(parser)


def output_kind(path, replace_for=False, folder_made=True):
    """"zarr", "parquet", "npy" or "csv" from the output's suffix; checked before any work.

    ``replace_for``: False (an existing output is refused), None (``--overwrite``: any prediction
    output may be replaced) or a job's writer (only that job's outputs may be). ``folder_made``
    False: the output's folder is made later (by ``run``), so nothing is there yet."""
    kind = KINDS.get(os.path.splitext(str(path).rstrip("/"))[1].lower())
    if kind is None:
        raise UsageError(f"-o {path}: unknown output format; use a name ending in .zarr, .parquet, .npy or .csv")
    if kind == "parquet":
        try:
            import pyarrow  # noqa: F401
            import dask.dataframe  # noqa: F401
        except ImportError:
            raise UsageError(f"-o {path}: Parquet output needs pyarrow and dask[dataframe] "
                             "(pip install pyarrow); or write .zarr or .npy") from None
    if kind in FILE_KINDS and is_url(path):
        raise UsageError(f"-o {path}: .{kind} output must be a local file; use .zarr for URLs")
    if not folder_made:
        return kind
    if exists(path):
        if replace_for is False:
            raise UsageError(f"-o {path}: already exists; refusing to replace it (choose another name or move it "
                             "away, or give --overwrite if dask-kernels predict wrote it)")
        check_replaceable(path, kind, replace_for)
    if not is_url(path) and not os.path.isdir(os.path.dirname(path)):
        raise UsageError(f"-o {path}: folder {os.path.dirname(path)} does not exist")
    return kind


def write(result, path, kind, columns, writer="command line", replace_for=False):
    """Compute ``result`` (a dask array) on the cluster into ``path``, marked as written by ``writer``."""
    import numpy as np

    with written_aside(path, kind, replace_for) as tmp:
        if kind == "zarr":  # Zarr wants equal chunks (but the last): partitions may differ in size
            result = result.rechunk({0: max(result.chunks[0]) if result.shape[0] else 1})
            if result.dtype.kind == "U":  # class names: Zarr's variable-length UTF-8 strings (specified)
                import dask.array as da
                import zarr

                da.store(result, zarr.create_array(tmp, shape=result.shape, chunks=result.chunksize, dtype=str),
                         lock=False)
            else:
                result.to_zarr(tmp, overwrite=False)
        elif kind == "parquet":
            import dask.dataframe as dd

            import dask.array as da

            frame = dd.from_dask_array(result if result.ndim == 2 else result[:, None], columns=columns)
            # each prediction names its input row (0-based position), whatever the partitions
            rows = dd.from_dask_array(da.arange(result.shape[0], chunks=result.chunks[0], dtype="int64"))
            frame = frame.assign(row=rows)[["row"] + list(columns)]
            # zero-padded part names: readers that list files by name read the rows in order
            frame.to_parquet(tmp, write_index=False, name_function=lambda i: f"part.{i:06d}.parquet")
        elif kind == "csv":
            import pandas as pd

            values = result.compute()
            table = pd.DataFrame(values if values.ndim == 2 else values[:, None], columns=list(columns))
            table.insert(0, "row", np.arange(values.shape[0], dtype=np.int64))
            table.to_csv(tmp + ".csv", index=False)
            os.rename(tmp + ".csv", tmp)
        else:
            values = result.compute()
            try:
                np.save(tmp + ".npy", values)
            except OSError as e:
                if e.errno is not None:
                    raise
                # NumPy's short write ("N requested and M written") names neither the file nor a cause
                raise UsageError(f"-o {path}: the predictions were not written in full ({e}): is the disk full "
                                 "or a file size limit reached? Free space, then run the command again") from None
            os.rename(tmp + ".npy", tmp)
        digest = write_marker(tmp, kind, writer, path)  # a file's beside it: before the rename, and again after
        publish(tmp, path, kind, replace_for)
        if kind in FILE_KINDS:  # the file now in place, its digest alone
            write_marker(path, kind, writer, path, digest=digest)


def run(args):
    from .. import load_model
    from ._apply import check_npy_first, check_width, lazy_apply, open_for_model
    from ._paths import existing

    model_path = existing(args.model, "model")
    output = normalize(args.output)
    writer = writer_of(args.job)
    replace_for = writer if args.job else (None if args.overwrite else False)
    kind = output_kind(output, replace_for)
    existing(args.input, "input")
    model = load_model(model_path)
    if args.proba and not hasattr(model.estimator, "predict_proba"):
        from .._estimator import is_regressor

        est = model.estimator
        loss = est.get_params().get("loss")
        how = ("a regressor predicts values, not class probabilities: drop --proba" if is_regressor(est)
               else "train with --loss log_loss" if type(est).__name__ == "SoftmaxSGD"
               else "train with --estimator sgd, softmax or a naive Bayes estimator")
        raise UsageError(f"--proba: the model's {type(est).__name__}"
                         + (f" (loss={loss!r})" if loss else "") + f" has no predict_proba ({how})")
    method = "predict_proba" if args.proba else "predict"
    check_npy_first(model, args.input, args)
    with client_for(args):
        X, _ = open_for_model(model, args.input, args)
        check_width(model, X, args.input)
        result = lazy_apply(model, X, method)
        columns = ([f"proba_{c}" for c in model.estimator.classes_] if args.proba else ["prediction"])
        write(result, output, kind, columns, writer, replace_for)
    what = "probabilities" if args.proba else "predictions"
    print(f"{output}: {what} of {int(result.shape[0])} rows ({kind})")
    return 0
