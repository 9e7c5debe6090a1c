"""``dask-kernels train``: train a linear model out of core and save it.

From a feature store (``dask-kernels train features.zarr -o model.dk``) or from raw rows in a
``.npy`` file (labels from ``--labels y.npy``) or an svmlight/LIBSVM file, featurized block by
block with ``--method`` (nothing stored; by default GCWS, the default recipe; ``--method raw``
trains on the rows as they are). On stderr: progress within each epoch (a bar on a
terminal, a line at least every 10 s elsewhere) and each epoch's row of the table as soon as the
epoch ends; on stdout, the whole table at the end (unless stdout goes where stderr does, a
terminal or ``> log 2>&1``, which has shown it already). The saved model loads with
:func:`dask_kernels.load_model`. With ``--scheduler``, ``--scheduler-file`` or ``--workers``
the blocks are read and featurized on that cluster; without them, in this process.
"""

import argparse
import os
import sys
import warnings

from ._args import UsageError, fraction, make_map, nonnegative_float, parse_params, positive_float, \
    positive_int
from ._cluster import add_cluster_arguments, client_for, threads_here
from ._inputs import add_table_arguments

help = "train a linear model out of core on a feature store or raw .npy/svmlight rows; save it"

#: --metric: "auto" or a metric of dask_kernels.learn.metrics.LOWER_IS_BETTER (kept in step by a test; not
#: imported here, so that building the parser does not import scikit-learn)
METRICS = ("auto", "accuracy", "erp", "error", "inertia", "log_loss", "mse", "r2")
ESTIMATORS = ("sgd", "sgd-hinge", "perceptron", "multinomial-nb", "bernoulli-nb", "sgd-regressor", "softmax")
#: --method gcws without --n-components / --param bits: k and b of the default recipe (chosen on
#: validation splits of six real datasets: docs/guide/training.md, "The default recipe on real data")
GCWS_DEFAULTS = {"n_components": 2048, "bits": 4}
#: the map of raw input without --method; RAW trains on the rows as they are
DEFAULT_METHOD, RAW = "gcws", "raw"
#: without --validation-fraction, inputs of at least HOLDOUT_MIN_ROWS rows hold HOLDOUT_FRACTION out
#: for the schedule and early stopping; smaller ones train on every row. A held-out set of fewer
#: than 10,000 rows measures accuracy near 90 % to +-0.3 points (one standard error), as much as
#: the changes between epochs the schedule acts on. On validation splits of 12 real datasets of
#: 106-12,000 training rows (benchmarks/sweep_recipe.py), 20 epochs on every row were as accurate
#: or more on 9 (Glass +9.4 points) and less on 3 (wine 1.2, Satellite 1.6, Pima 2.6): the table
#: is in docs/guide/training.md
HOLDOUT_MIN_ROWS, HOLDOUT_FRACTION = 100_000, 0.1
#: --epochs without it: with a held-out set (early stopping may end sooner) / without one
EPOCHS_HOLDOUT, EPOCHS_ALL_ROWS = 10, 20
#: k without --n-components: SCALED_COMPONENTS for rff, nrff, fastfood and nystroem, N_COMPONENTS
#: for the others (core). On validation splits of twelve real datasets (benchmarks/sweep_recipe.py,
#: docs/guide/training.md) k = 1024 was 0.8-1.5 points ahead of 256 on average for each of the
#: four, and k = 2048 another 0.1-0.3 at twice the time
N_COMPONENTS, SCALED_COMPONENTS = 256, 1024
#: the Gaussian maps' bandwidth without --param gamma (or sigma): scikit-learn's "scale",
#: 1 / (d var X) learned from the rows. Their own default, gamma=1.0, assumes features of unit
#: scale: on raw UCI, digit and MNIST rows RFF scored near chance with it (docs/guide/training.md)
GAUSSIAN_METHODS, GAUSSIAN_GAMMA = ("rff", "nrff", "fastfood"), "scale"
#: the input scaling of these maps and of Nystroem without --param scale: GCWS's default rule
#: (each column's range onto [-1, 1], or divided by its largest |x| for mostly-zero rows); the
#: maps' own default, None, leaves columns in their units, which decide the kernel
#: (docs/guide/training.md)
SCALED_METHODS, DEFAULT_SCALE = GAUSSIAN_METHODS + ("nystroem",), "auto"
#: GCWS's input scaling on dense rows (.npy, CSV, Parquet) without --param scale or center: each
#: column standardized, or divided by its largest |x| when at most half of the entries are nonzero.
#: On validation splits of twelve real datasets (benchmarks/sweep_input_rule.py --validation,
#: docs/guide/training.md) standardizing was 0.8 points ahead of GCWS's own "auto" on average
#: (Glass +3.7, Satellite +2.9, Ionosphere +1.1, Pima +1.0; Sonar -0.6, breast cancer -0.5), but
#: on MNIST's rows of mostly zeros behind and twice as slow (centred, every zero is a nonzero GCWS
#: hashes). Sparse rows keep "auto" ("maxabs": standardizing would densify them)
GCWS_DENSE_SCALE = "auto_standard"
#: the default learning rate of SoftmaxSGD on GCWS codes, times 1 / (mean squared row norm) = 1 / k:
#: with log loss 4 / k (same measurement as GCWS_DEFAULTS; 1 / k underfit in 10 epochs), with the
#: hinge loss 1 / k (1 / (4k) was 0.1 points behind on average, 4 / k 0.5: docs/guide/training.md)
SOFTMAX_ETA_FACTOR = {"log_loss": 4.0, "hinge": 1.0}
#: SoftmaxSGD's losses (--loss), the default first. On validation splits of thirteen real datasets
#: the hinge loss was 0.1 points ahead on average (Letter +0.7), but on the overlapping classes of
#: the synthetic training sets 2 to 11 points behind (docs/guide/training.md); and it gives no
#: probabilities
LOSSES = ("log_loss", "hinge")


def add_arguments(parser):
    parser.add_argument("source", help="feature store directory, .npy file of rows, Parquet/CSV rows "
                                       "(labels: --label-column), or svmlight/LIBSVM file")
    parser.add_argument("-o", "--output", required=True,
                        help="directory to save the trained model to: must not exist, or hold a saved model "
                             "and --overwrite be given (anything else is refused, never replaced)")
    parser.add_argument("--overwrite", action="store_true", help="replace a saved model at --output")
    parser.add_argument("--labels", help=".npy file of labels (for .npy input)")
    parser.add_argument("--n-features", type=positive_int, default=None,
                        help="svmlight: input dimension (default: the file's highest index); give the full "
                             "dimension so the model can score files whose highest index is larger")
    parser.add_argument("--zero-based", action="store_true",
                        help="svmlight indices start at 0 (default: 1, as in LIBSVM files)")
    parser.add_argument("--blocksize", type=positive_int, default=None,
                        help="svmlight and CSV: bytes per partition (default 64 MiB); one training block per "
                             "partition")
    add_table_arguments(parser)
    parser.add_argument("--method", help=f"feature map for raw input (default {DEFAULT_METHOD}: the default recipe, "
                        "dense input columns standardized, sparse ones divided by their largest |x|; also rff, nrff, "
                        "fastfood (each column's range onto [-1, 1], or divided by its largest |x| for mostly-zero "
                        "rows, unless --param scale=null; gamma=\"scale\" unless --param gamma or sigma is given), "
                        "nystroem (scaled so too), core; raw: a linear model on the rows as they are)")
    parser.add_argument("--n-components", type=positive_int, default=None,
                        help=f"k for --method (default {GCWS_DEFAULTS['n_components']} for gcws, with bits="
                             f"{GCWS_DEFAULTS['bits']} unless --param bits is given; {SCALED_COMPONENTS} for rff, nrff, "
                             f"fastfood and nystroem; {N_COMPONENTS} for core)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="extra map parameter, VALUE as JSON (e.g. --param bits=8 --param gamma=0.5)")
    parser.add_argument("--estimator", choices=ESTIMATORS, default=None,
                        help="sgd = SGDClassifier(log_loss); sgd-hinge; perceptron; multinomial-nb; bernoulli-nb; "
                        "sgd-regressor; softmax = SoftmaxSGD (one pass per row for all classes, reads GCWS codes "
                        "without expanding them; --loss). Default: softmax on GCWS features (faster and as "
                        "accurate in the training benchmark), sgd on any other")
    parser.add_argument("--rank", type=positive_int, default=None,
                        help="softmax: rank r of the linear bottleneck W = U V (default: the full W)")
    parser.add_argument("--loss", choices=LOSSES, default=None,
                        help="softmax: log_loss (default: the multinomial softmax, with probabilities for "
                             "predict --proba) or hinge (one-vs-rest linear SVMs, no probabilities; more accurate "
                             "on some datasets, far less on overlapping classes: see docs/guide/training.md)")
    parser.add_argument("--alpha", type=nonnegative_float, default=1e-5, help="SGD regularization (default 1e-5)")
    parser.add_argument("--eta0", type=positive_float, default=None,
                        help="initial learning rate (default: 1 / mean squared row norm of the first block, "
                             "i.e. 1 / k on GCWS codes; for softmax with log loss on GCWS codes "
                             f"{SOFTMAX_ETA_FACTOR['log_loss']:g} times that)")
    parser.add_argument("--epochs", type=positive_int, default=None,
                        help=f"passes over the rows (default {EPOCHS_HOLDOUT} with a held-out set, early stopping "
                             f"may end sooner; {EPOCHS_ALL_ROWS} without one)")
    parser.add_argument("--validation-fraction", type=fraction, default=None,
                        help=f"fraction of the rows held out for the schedule and early stopping (default "
                             f"{HOLDOUT_FRACTION} on inputs of {HOLDOUT_MIN_ROWS:,} rows or more; on smaller ones 0: "
                             "every row trains, no early stopping)")
    parser.add_argument("--n-iter-no-change", type=positive_int, default=3,
                        help="stop after this many epochs without a new best held-out score (default 3)")
    parser.add_argument("--min-epochs", type=positive_int, default=5,
                        help="never stop early before this many epochs (default 5: see docs/guide/training.md)")
    parser.add_argument("--metric", choices=METRICS, default="auto",
                        help="held-out metric the schedule and early stopping decide on (default auto: erp for "
                             "probabilistic classifiers, error for other classifiers, mse for regressors); naming "
                             f"one holds {HOLDOUT_FRACTION} out on inputs of any size unless --validation-fraction "
                             "says otherwise")
    # deprecated spellings (one release): same meaning, a FutureWarning when used
    parser.add_argument("--validation", type=fraction, default=None, dest="old_validation", help=argparse.SUPPRESS)
    parser.add_argument("--patience", type=positive_int, default=None, dest="old_patience", help=argparse.SUPPRESS)
    parser.add_argument("--block-rows", type=positive_int, default=None)
    parser.add_argument("--step-blocks", type=positive_int, default=1,
                        help="blocks' rows per partial_fit call (default 1): fewer, longer calls, faster on "
                             "several cores; 5 was less accurate in the training benchmark")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", help="checkpoint file (resumed if it exists; only a checkpoint is "
                                             "ever overwritten)")
    parser.add_argument("--checkpoint-every", type=positive_int, default=None, help="also checkpoint every N blocks")
    parser.add_argument("--checkpoint-interval", type=positive_float, default=None, metavar="SECONDS",
                        help="also checkpoint within an epoch once SECONDS have passed since the last checkpoint")
    parser.add_argument("--no-resume", action="store_true", help="start over instead of resuming --checkpoint")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress on stderr (default: a bar within each epoch on a terminal, else a line "
                             "at least every 10 s, and each epoch's row of the table as it ends)")
    add_cluster_arguments(parser)


def _linear_model():
    import sklearn.linear_model  # only when chosen: with it come sklearn.model_selection and metrics

    return sklearn.linear_model


def _naive_bayes():
    import sklearn.naive_bayes

    return sklearn.naive_bayes


def _estimator(args, eta0, src=None):
    from dask_kernels import SoftmaxSGD

    fmap = getattr(src, "feature_map", None)
    code_bits = fmap.bits if getattr(fmap, "method", None) == "gcws" else None  # GCWS: codes, not one-hot
    name = args.estimator or ("softmax" if code_bits is not None else "sgd")
    if args.rank is not None and name != "softmax":
        raise UsageError(f"--rank is a parameter of --estimator softmax, not of {name}")
    if args.loss is not None and name != "softmax":
        hint = " (SGDClassifier's hinge loss is --estimator sgd-hinge)" if name == "sgd" else ""
        raise UsageError(f"--loss is a parameter of --estimator softmax, not of {name}{hint}")

    if src is not None:  # the weights' memory, before any row is read
        from dask_kernels.learn.softmax import MAX_RANK, check_weights
        from dask_kernels.maps._bounds import MAX_TABLE_BYTES

        n_weights = 2**code_bits * int(fmap.n_output_features_) if code_bits is not None else src.learner_width()
        if name == "softmax" and args.rank is not None:
            if args.rank > MAX_RANK:
                raise UsageError(f"--rank {args.rank:,}: at most {MAX_RANK:,} (as many as classes there can be)")
            try:
                check_weights(args.rank, n_weights)
            except ValueError as e:
                raise UsageError(str(e)) from None
        elif 8 * n_weights > MAX_TABLE_BYTES:  # at least one float64 per feature (and per class but of two)
            raise UsageError(f"--estimator {name}: the learner sees {n_weights:,} features, so its weights take at "
                             f"least {8 * n_weights:,} bytes (float64), more than the bound of {MAX_TABLE_BYTES:,}; "
                             + ("hash the input to fewer features (--method gcws, rff, ...)" if fmap is None else
                                "lower --n-components (or bits)"))
    common = {"alpha": args.alpha, "learning_rate": "constant", "eta0": eta0, "random_state": args.seed}
    return {
        "sgd": lambda: _linear_model().SGDClassifier(loss="log_loss", **common),
        "sgd-hinge": lambda: _linear_model().SGDClassifier(loss="hinge", **common),
        "perceptron": lambda: _linear_model().Perceptron(random_state=args.seed),
        "multinomial-nb": lambda: _naive_bayes().MultinomialNB(),
        "bernoulli-nb": lambda: _naive_bayes().BernoulliNB(),
        "sgd-regressor": lambda: _linear_model().SGDRegressor(**common),
        "softmax": lambda: SoftmaxSGD(loss=args.loss or LOSSES[0], code_bits=code_bits, rank=args.rank, **common),
    }[name]()


def _source(args):
    """``(training source, feature column names or None)`` of ``args.source``: the names of a
    Parquet/CSV table's feature columns, which the model keeps (predict and score read them by name)."""
    from dask_kernels.learn import ArraySource, StoreSource

    from ._center import resolve_center
    from ._paths import existing, input_format, is_url

    path = existing(args.source, "source")
    fmt = input_format(path, flag="source")
    from ._inputs import TABLES, check_table_flags, open_table, table_columns

    check_table_flags(fmt, args.columns, args.label_column, path)
    if fmt == "store":
        if args.method:
            raise UsageError("a feature store carries its own map: drop --method")
        from dask_kernels import open_store

        store = open_store(path)
        if args.labels:
            raise UsageError(f"--labels: the store {path} carries its labels (stored by featurize --labels); "
                             "drop --labels")
        if store.labels is None:
            raise UsageError(f"source {path}: the store has no labels; featurize it again with --labels y.npy "
                             "(.npy input) or from an svmlight file")
        return StoreSource(store, block_rows=args.block_rows), store.feature_names
    fmap = None
    method = args.method or DEFAULT_METHOD
    if method != RAW:
        params = dict(GCWS_DEFAULTS) if method == "gcws" else \
            {"n_components": SCALED_COMPONENTS if method in SCALED_METHODS else N_COMPONENTS}
        if args.n_components is not None:
            params["n_components"] = args.n_components
        params["seed"] = args.seed
        given = parse_params(args.param)
        if args.n_components is not None and "n_components" in given:  # which one wins is no guess to leave
            raise UsageError(f"--n-components {args.n_components} and --param n_components={given['n_components']} "
                             "both set the number of components; give one of them")
        if method in GAUSSIAN_METHODS and not {"gamma", "sigma"} & set(given):
            params["gamma"] = GAUSSIAN_GAMMA
        if method in SCALED_METHODS:
            params["scale"] = DEFAULT_SCALE
        if method == "gcws" and fmt != "svmlight" and not {"scale", "center"} & set(given):
            params["scale"] = GCWS_DENSE_SCALE
        params.update(given)
        fmap = make_map(method, params, others=(RAW,))
    elif args.param or args.n_components is not None:
        raise UsageError(f"{'--param' if args.param else '--n-components'}: --method raw trains on the rows as "
                         "they are, with no map to parameterize; drop it, or name a map with --method")
    if args.header != "auto" and fmt != "csv":
        raise UsageError(f"--{'no-' if args.header is False else ''}header: for CSV input, not {fmt} ({path})")
    if fmt == "npy":
        if not args.labels:
            raise UsageError(f"--labels is required for .npy input ({path})")
        if is_url(path):
            raise UsageError(f"source {path}: .npy input must be a local file")
        from ._inputs import load_labels, open_npy

        X = open_npy(path, "source", ndim=2)
        y = load_labels(args.labels, X.shape[0])
        _check_rows(X.shape[0], path)
        if fmap is not None:
            from dask_kernels.io import read_npy

            fmap = resolve_center(fmap, read_npy(path))  # one pass over the file, in blocks
        return ArraySource(X, y, fmap, block_rows=args.block_rows), None
    if fmt in TABLES:
        if args.labels:
            raise UsageError(f"--labels is for .npy input: {fmt} labels are a column, use --label-column")
        if not args.label_column:
            raise UsageError(f"source {path}: --label-column NAME is required (the column of labels)")
        kw = {} if args.blocksize is None else {"blocksize": args.blocksize}
        X, y, names = open_table(path, fmt, table_columns(args), args.label_column, block_rows=args.block_rows,
                                 flag="source", header=args.header, named=True, **kw)
        _check_rows(X.shape[0], path)
        if fmap is not None:
            fmap = resolve_center(fmap, X)
        return ArraySource(X, y, fmap, block_rows=args.block_rows), names
    if fmt == "zarr":
        raise UsageError(f"source {path}: train reads a feature store, a .npy, Parquet, CSV or svmlight file; "
                         "featurize a Zarr array first (dask-kernels featurize --labels)")
    if args.labels:
        raise UsageError("--labels is for .npy input: svmlight files carry their labels")
    from dask_kernels.learn import PartitionSource

    from ._inputs import open_rows

    # byte-range partitions, parsed block by block
    kw = {} if args.blocksize is None else {"blocksize": args.blocksize}
    _, parts, _ = open_rows(path, "svmlight", n_features=args.n_features, zero_based=args.zero_based, **kw,
                         flag="source")
    _check_rows(sum(parts.row_counts), path)
    if fmap is not None:
        fmap = resolve_center(fmap, parts)
    return PartitionSource(parts, fmap), None


def _check_rows(n_rows, path):
    """Refuse input of no rows, naming it, before a map is fitted on nothing (whose message names
    no file)."""
    if n_rows == 0:
        raise _no_rows(path)


def _no_rows(path):
    return UsageError(f"source {path}: has no rows (an empty file?): nothing to train on")


#: Rows expanded at a time for the default eta0 (a store block of 262144 GCWS rows expanded whole
#: to one-hot float64 CSR took 800 MB, the command's peak)
ETA0_ROWS = 8192


def _default_eta0(src, name):
    # 1 / E||x||^2 keeps the first SGD steps of size ~1 whatever the width (GCWS rows have
    # k ones, Fourier rows have norm ~1); from the first block that has rows, expanded a few rows
    # at a time (each row's squared norm is computed alone: the same values as the whole block's)
    import numpy as np
    import scipy.sparse as sp

    for i in range(src.n_blocks):
        X = src.read(i)[0]
        if X.shape[0]:
            parts = []
            for a in range(0, X.shape[0], ETA0_ROWS):
                F = src.expand(X[a:a + ETA0_ROWS])
                parts.append(np.asarray(F.multiply(F).sum(axis=1)).ravel() if sp.issparse(F) else
                             np.square(np.asarray(F, np.float64)).sum(axis=1))
            sq = np.concatenate(parts)
            return float(1.0 / max(float(np.mean(sq)), 1e-12))
    raise _no_rows(name)  # a store of no rows (raw input was refused by _check_rows)


def check_args(args, folder_made=True):
    """What ``args`` get wrong that no data is needed to tell: checked before training, not after
    it (and by ``run`` before its job's first step; ``folder_made`` False: the model's folder is
    made later, so nothing is there yet)."""
    from dask_kernels.learn.persist import check_model_path

    if args.validation_fraction == 0 and args.metric != "auto":
        raise UsageError(f"--metric {args.metric}: the schedule decides on held-out rows, and "
                         "--validation-fraction 0 holds none out; drop one of them")
    if folder_made:
        check_model_path(args.output, args.overwrite)


def run(args):
    from ._malloc import release_large_blocks

    check_args(args)
    release_large_blocks()  # the steps (a block's features each) come and go: see _malloc
    if args.scheduler or args.scheduler_file or args.workers:
        with client_for(args):  # blocks are read (and featurized) on the cluster
            return _train(args)
    with threads_here():  # no cluster named: dask's local scheduler, in this process
        return _train(args)


def _classes(est, src):
    """A classifier's classes (one pass over the labels, which training then reuses), or None.

    Continuous labels (a regression target) are refused: a classifier took every distinct value
    as a class and trained to accuracy 0 without a word.
    """
    import numpy as np

    from .._estimator import is_classifier

    if not is_classifier(est):
        return None
    classes = np.asarray(src.classes())
    if classes.dtype.kind != "f":  # integer or string labels are classes: only floats are asked about
        return classes
    from sklearn.utils.multiclass import type_of_target

    if type_of_target(classes) == "continuous":
        raise UsageError(f"the labels are continuous ({classes.size} distinct values, e.g. {classes[0]:g}, "
                         f"{classes[-1]:g}) but {type(est).__name__} is a classifier: for regression pass "
                         "--estimator sgd-regressor")
    return classes


def _same_destination(a, b):
    """Whether streams ``a`` and ``b`` write to the same place (one terminal, or ``> log 2>&1``):
    there the progress on stderr has already shown the epoch table stdout would repeat."""
    try:
        return os.path.sameopenfile(a.fileno(), b.fileno())
    except (AttributeError, OSError, ValueError):  # not file descriptors (e.g. captured in a test)
        return False


def _schedule(args, n_rows):
    """``(held-out fraction, epochs)``: the options given, else the defaults for ``n_rows`` rows
    (a ``--metric`` named asks for held-out rows to decide on)."""
    fraction = args.validation_fraction
    if fraction is None:
        fraction = HOLDOUT_FRACTION if n_rows >= HOLDOUT_MIN_ROWS or args.metric != "auto" else 0.0
    return fraction, args.epochs or (EPOCHS_HOLDOUT if fraction else EPOCHS_ALL_ROWS)


def _train(args):
    from dask_kernels import fit_incremental
    from dask_kernels.learn.incremental import held_out_metric

    src, names = _source(args)  # names: a table's feature columns, kept by the model
    eta0 = args.eta0
    if eta0 is None:
        codes = getattr(src.feature_map, "method", None) == "gcws" and args.estimator in (None, "softmax")
        eta0 = _default_eta0(src, args.source) * (SOFTMAX_ETA_FACTOR[args.loss or LOSSES[0]] if codes else 1.0)
    est = _estimator(args, eta0, src)
    for old, new in (("validation", "validation_fraction"), ("patience", "n_iter_no_change")):
        if getattr(args, f"old_{old}") is not None:
            warnings.warn(f"--{old} is deprecated and will be removed in the next release: use "
                          f"--{new.replace('_', '-')}", FutureWarning, stacklevel=2)
            setattr(args, new, getattr(args, f"old_{old}"))
    try:
        held_out_metric(est, args.metric, option="--metric ")
    except ValueError as e:
        raise UsageError(str(e)) from None
    fraction, epochs = _schedule(args, src.n_rows)
    print(f"training {type(est).__name__} on {src.n_rows} rows in {src.n_blocks} "
          f"block{'' if src.n_blocks == 1 else 's'}"
          + (f" ({src.feature_map.method} features)" if src.feature_map is not None else " (raw rows)")
          + f", {epochs} epoch{'' if epochs == 1 else 's'}, "
          + (f"{fraction:g} held out" if fraction else "every row trains (no held-out set)"), flush=True)
    classes = _classes(est, src)
    model = fit_incremental(est, src, classes=classes, epochs=epochs,
                            validation_fraction=fraction or None,
                            seed=args.seed, n_iter_no_change=args.n_iter_no_change, min_epochs=args.min_epochs,
                            metric=args.metric, checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
                            checkpoint_seconds=args.checkpoint_interval, resume=not args.no_resume,
                            step_blocks=args.step_blocks, progress=not args.no_progress)
    from dask_kernels.learn.model import with_feature_names
    from dask_kernels.learn.report import header, row

    with_feature_names(model, names)

    if args.no_progress or not _same_destination(sys.stdout, sys.stderr):
        print(header(model.history[0]))  # the whole table, the result, on stdout
        for r in model.history:
            print(row(r))
    path = model.save(args.output, overwrite=args.overwrite)
    print(f"saved {model!r} to {path}")
    return 0
