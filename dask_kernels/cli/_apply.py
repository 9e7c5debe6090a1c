"""A saved model applied lazily to rows named on the command line (computed on the cluster)."""

import dask
import dask.array as da
import numpy as np

from ._args import UsageError
from ._inputs import columns_by_name, open_rows, table_columns
from ._paths import existing, input_format


def _apply_part(model, method, part):
    return getattr(model, method)(part[0])


def lazy_apply(model, X, method):
    """``model.<method>(X)`` as a dask array: X a dask array, a feature store, or SparsePartitions
    (one task per partition)."""
    if not hasattr(X, "to_delayed") or not hasattr(X, "row_counts"):
        return getattr(model, method)(X)
    classes = getattr(model.estimator, "classes_", None)
    if method == "predict_proba":
        width, dtype = len(classes), np.dtype(np.float64)
    else:
        width, dtype = None, np.asarray(classes).dtype if classes is not None else np.dtype(np.float64)
    m = dask.delayed(model, pure=True)
    cols = []
    for part, n in zip(X.to_delayed(), X.row_counts):
        shape = (n,) if width is None else (n, width)
        cols.append(da.from_delayed(dask.delayed(_apply_part)(m, method, part), shape=shape, dtype=dtype))
    if not cols:
        return da.empty((0,) if width is None else (0, width), dtype=dtype)
    return da.concatenate(cols)


def open_for_model(model, path, args, flag="input"):
    """``(rows, labels)`` of ``path`` for ``model``: labels lazily, None when the input has none.

    svmlight input is read with the model's input dimension (a test file's highest index may be
    smaller than the training file's) and index base (``svmlight_zero_based_``, when the model
    knows it: another base would shift every column by one).
    """
    n_features = args.n_features
    if n_features is None and model.feature_map is not None:
        n_features = int(model.feature_map.n_features_in_)
    zero_based = svmlight_base_for(model, path, args, flag)
    # a table: the columns of the names the model was trained on, in that order, whatever else it holds
    given = table_columns(args)
    columns = columns_by_name(path, args.format, given, getattr(model, "feature_names_in_", None), "model", flag)
    try:
        fmt, X, labels = open_rows(path, args.format, n_features=n_features, zero_based=zero_based,
                                   blocksize=args.blocksize, columns=columns, label_column=args.label_column,
                                   flag=flag, header=args.header)
    except UsageError as e:
        if given is not None or columns is None or "not found" not in str(e) or "label column" in str(e):
            raise
        raise UsageError(f"{e}; the model was trained on columns {','.join(columns)} and reads them by name: "
                         "name the input's columns with --columns") from None
    return X, labels


def svmlight_base_for(model, path, args, flag="input"):
    """``--zero-based``, or for svmlight input the index base the model was trained with; a
    ``--zero-based`` against a model trained one-based is refused (the flag cannot say one-based)."""
    trained = getattr(model, "svmlight_zero_based_", None)
    if trained is None or input_format(existing(path, flag), args.format, flag) != "svmlight":
        return args.zero_based  # a model saved before it kept the base, or trained on other input
    if args.zero_based and not trained:
        raise UsageError(f"--zero-based: the model was trained on svmlight input with 1-based indices (as in "
                         f"LIBSVM files), so reading {path} from 0 would shift every column by one; drop "
                         "--zero-based (svmlight input is read with the model's index base)")
    return trained


def check_npy_first(model, path, args):
    """A ``.npy`` input's file and width checked before a cluster starts (its header is all it
    takes): a damaged file or the wrong number of columns is one line, not a wait for workers."""
    from ._inputs import open_npy
    from ._paths import input_format, normalize

    path = normalize(path)
    if input_format(path, args.format) == "npy":
        check_width(model, open_npy(path, "input", ndim=2), args.input)


def check_width(model, X, path):
    """The input has as many columns as the model was trained on (before any task runs)."""
    fmap = model.feature_map
    want = int(fmap.n_features_in_) if fmap is not None else getattr(model.estimator, "n_features_in_", None)
    if hasattr(X, "feature_map"):  # a store: its map must be the model's (checked by KernelModel)
        return
    if want is not None and int(X.shape[1]) != int(want):
        raise UsageError(f"input {path}: {int(X.shape[1])} columns, but the model was trained on {want} "
                         "(svmlight: pass --n-features; Parquet/CSV: name the label column with --label-column, "
                         "or the features with --columns)")
