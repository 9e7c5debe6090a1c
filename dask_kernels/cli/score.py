"""``dask-kernels score MODEL INPUT``: accuracy (classifiers) or R^2 (regressors) of a saved
model on labelled rows, computed on the cluster. The score is the last field of the last line,
so scripts read it with ``tail -n1 | awk '{print $NF}'``.
"""

from ._args import UsageError
from ._cluster import add_cluster_arguments, client_for
from ._inputs import add_input_arguments

help = ("score a saved model (accuracy or R^2) on labelled rows: svmlight, .npy with --labels, Parquet/CSV with "
        "--label-column, or a store")


def add_arguments(parser):
    parser.add_argument("model", help="directory of a saved model (dask-kernels train -o)")
    parser.add_argument("input", help="labelled rows: svmlight file, .npy/Zarr rows with --labels, Parquet/CSV "
                                      "with --label-column, or a feature store with labels made with the model's map")
    parser.add_argument("--labels", help=".npy file of labels (for .npy and Zarr input)")
    add_input_arguments(parser)
    add_cluster_arguments(parser)


def run(args):
    import dask
    import numpy as np
    from sklearn.base import is_regressor  # loaded with the model's classes: no cost here

    from .. import load_model
    from ..learn.metrics import model_score
    from ._apply import check_npy_first, check_width, lazy_apply, open_for_model
    from ._inputs import load_labels
    from ._paths import existing

    model = load_model(existing(args.model, "model"))
    existing(args.input, "input")
    if args.labels:
        existing(args.labels, "--labels")
    check_npy_first(model, args.input, args)
    with client_for(args):
        X, y = open_for_model(model, args.input, args)
        if args.labels:
            if y is not None:
                raise UsageError(f"--labels: {args.input} carries its labels; drop --labels")
            y = load_labels(args.labels, int(X.shape[0]))
        if y is None:
            raise UsageError(f"input {args.input}: has no labels; pass --labels y.npy (.npy, Zarr) or "
                             "--label-column NAME (Parquet, CSV)")
        check_width(model, X, args.input)
        pred, y = dask.compute(lazy_apply(model, X, "predict"), y)
    y = np.asarray(y)
    name, value = model_score(is_regressor(model.estimator), y, pred)
    print(f"{args.input}: {len(y)} rows, {name} {float(value):.6f}")
    return 0
