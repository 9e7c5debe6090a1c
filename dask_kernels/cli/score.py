"""``dask-kernels score MODEL INPUT``: accuracy (classifiers) or R^2 (regressors) of a saved
model on labelled rows, computed on the cluster. The score is the last field of the last line,
so scripts read it with ``tail -n1 | awk '{print $NF}'``.

The workers reduce each partition's predictions and labels to a few numbers (counts, or for R^2
the label mean and squared deviations and the squared residuals), merged pairwise in a tree: the
client receives those numbers, never the predictions or labels of all rows.
"""

from ._args import UsageError
from ._cluster import add_cluster_arguments, client_for
from ._inputs import add_input_arguments

#: Partial results merged per task of the reduction tree.
FAN_IN = 8

help = ("score a saved model (accuracy or R^2) on labelled rows: svmlight, .npy with --labels, Parquet/CSV with "
        "--label-column, or a store")


def add_arguments(parser):
    parser.add_argument("model", help="directory of a saved model (dask-kernels train -o)")
    parser.add_argument("input", help="labelled rows: svmlight file, .npy/Zarr rows with --labels, Parquet/CSV "
                                      "with --label-column, or a feature store with labels made with the model's map")
    parser.add_argument("--labels", help=".npy file of labels (for .npy and Zarr input)")
    add_input_arguments(parser, for_model=True)
    add_cluster_arguments(parser)


def run(args):
    import dask
    from .. import load_model
    from .._estimator import is_regressor
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
        regressor = is_regressor(model.estimator)
        # ``pred`` held while computing: its graph holds the model scattered on a Client, which
        # the delayed reduction names by key only (released with the last reference)
        pred = lazy_apply(model, X, "predict")
        stats = dask.compute(score_stats(pred, y, regressor))[0]
    n = int(stats[0])
    if n == 0:
        raise UsageError(f"input {args.input}: no rows to score")
    name, value = ("r2", r2_of(stats)) if regressor else ("accuracy", stats[1] / n)
    print(f"{args.input}: {n} rows, {name} {float(value):.6f}")
    return 0


def labels_like(y, pred):
    """The labels ``y`` (a dask array, or a ``.npy`` mapping or in-memory array) as a dask array
    in the row chunks of the dask array ``pred``; a mapped file is read by each task itself."""
    import dask.array as da
    import numpy as np

    from ..io.dense import mapped, read_mapped

    chunks = (pred.chunks[0],)
    if not isinstance(y, da.Array):
        f = mapped(y)
        y = read_mapped(f, chunks) if f is not None else da.from_array(np.asarray(y), chunks=chunks)
    return y.rechunk(chunks)


def score_stats(pred, y, regressor):
    """A delayed tuple of the few numbers the score needs, computed on the workers: per block
    :func:`block_stats`, merged in a tree of :data:`FAN_IN` by :func:`merge_stats`."""
    import dask
    import dask.array as da

    if not isinstance(pred, da.Array):  # an in-memory prediction: one block
        pred = da.from_array(pred, chunks=-1)
    parts = [dask.delayed(block_stats)(p, b, regressor) for p, b in zip(pred.to_delayed().ravel(),
                                                                          labels_like(y, pred).to_delayed().ravel())]
    while len(parts) > 1:
        parts = [dask.delayed(merge_stats)(*parts[i : i + FAN_IN]) for i in range(0, len(parts), FAN_IN)]
    return parts[0]


def block_stats(pred, y, regressor):
    """One block's numbers: ``(n, correct)`` for a classifier (with the label checks of
    :func:`~dask_kernels.learn.metrics.accuracy`), ``(n, mean of y, sum of (y - mean)^2, sum of
    (y - pred)^2)`` for a regressor (float64)."""
    import numpy as np

    from ..learn.metrics import n_correct

    y, pred = np.asarray(y), np.asarray(pred)
    if not regressor:
        return (len(y), n_correct(y, pred) if len(y) else 0)
    y, pred = y.astype(np.float64), pred.astype(np.float64)
    mean = float(y.mean()) if len(y) else 0.0
    return (len(y), mean, float(np.sum((y - mean) ** 2)), float(np.sum((y - pred) ** 2)))


def merge_stats(*parts):
    """:func:`block_stats` of consecutive blocks merged: counts added; for a regressor the means
    and squared deviations combined exactly (Chan et al.'s pairwise update)."""
    total = parts[0]
    for part in parts[1:]:
        if len(total) == 2:
            total = (total[0] + part[0], total[1] + part[1])
            continue
        (na, ma, sa, ra), (nb, mb, sb, rb) = total, part
        n = na + nb
        if n == 0:
            continue
        delta = mb - ma
        total = (n, ma + delta * nb / n, sa + sb + delta * delta * na * nb / n, ra + rb)
    return total


def r2_of(stats):
    """R^2 from merged regressor numbers, as scikit-learn's ``r2_score``: 1 - residual / total
    sum of squares; 1.0 when both are 0, 0.0 when only the total is; NaN below two rows."""
    n, _, ss_tot, ss_res = stats
    if n < 2:
        return float("nan")
    if ss_tot == 0:
        return 1.0 if ss_res == 0 else 0.0
    return 1.0 - ss_res / ss_tot
