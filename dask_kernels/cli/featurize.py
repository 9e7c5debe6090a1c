"""``dask-kernels featurize``: featurize .npy / Zarr / Parquet / CSV / svmlight rows into a Zarr feature store.

Runs on a running Dask cluster (``--scheduler tcp://host:8786``) or on a LocalCluster it starts.
Re-running the same command resumes an unfinished store; a store of another job is refused.
"""

import json
import warnings

from .._files import MAX_JSON_BYTES, file_problem
from ._args import UsageError, check_width, make_map, parse_params, positive_int
from ._cluster import add_cluster_arguments, client_for, start_worker_server, starts_local_cluster
from ._inputs import add_input_arguments, columns_by_name, labels_for, open_rows, table_columns
from ._paths import existing, output_store

help = "featurize .npy, Zarr, Parquet, CSV or svmlight rows into a resumable Zarr feature store"

#: the map without --method or --spec (its workers are warmed for it too: see _cluster)
DEFAULT_METHOD = "gcws"


def add_arguments(parser):
    parser.add_argument("input", help="input rows: a .npy file, a Zarr array, Parquet (a file or a folder of them), CSV, or an "
                        "svmlight/LIBSVM file (path or URL)")
    parser.add_argument("output", help="feature store to write (path, file:// or fsspec URL such as s3://...)")
    parser.add_argument("--labels", help=".npy file of one label per row, stored beside the features (for .npy "
                        "and Zarr input; svmlight files carry their labels; Parquet/CSV: --label-column)")
    parser.add_argument("--method", help=f"feature map (default {DEFAULT_METHOD}, with the map's own defaults: GCWS "
                        "k=256, bits=8, a compact store; train's --method gcws on raw rows uses k=2048, bits=4, "
                        "more accurate with 8x the codes to store: --param n_components=2048 --param bits=4; "
                        "with --append, the store's map)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="map parameter, e.g. --param n_components=256 (value parsed as JSON if it can be); "
                             "center=mean centres on the mean of all rows (one extra pass)")
    parser.add_argument("--spec", help="JSON file with a map spec (a full spec from FeatureMap.spec(), or "
                                       '{"method": ..., "params": {...}}); overrides --method/--param')
    add_input_arguments(parser)
    parser.add_argument("--block-rows", type=positive_int, help="rows per stored block (default: the input's partitions)")
    parser.add_argument("--chunks", type=positive_int, help="deprecated name of --block-rows (removed in the next release)")
    add_cluster_arguments(parser)
    parser.set_defaults(default_method=DEFAULT_METHOD)
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing store of another job (one of this job is resumed, as without it)")
    parser.add_argument("--append", action="store_true",
                        help="add the input's rows to the store as a new segment (a nightly job's new rows); "
                             "re-running the same append resumes it instead of adding the rows twice. The rows "
                             "are featurized with the store's map (center=mean: the first rows' mean); a "
                             "--method/--param/--spec that conflicts with it is refused")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress (default: a bar on a terminal, a plain line every few seconds otherwise)")


def _spec_file(args):
    existing(args.spec, "--spec")
    problem = file_problem(args.spec, MAX_JSON_BYTES)  # a FIFO would block the read, a device never end it
    if problem is not None:
        raise UsageError(f"--spec {args.spec} {problem}; give a map spec file (JSON)")
    try:
        with open(args.spec, "rb") as f:
            spec = json.loads(f.read())
    except (ValueError, RecursionError) as e:
        raise UsageError(f"--spec {args.spec}: not valid JSON ({e})") from None  # e says where
    if not isinstance(spec, dict) or "method" not in spec:
        raise UsageError(f"--spec {args.spec}: expected a JSON object with a 'method' key")
    return spec


def explicit_map(args):
    """``(method or None, {name: value})``: what the command line names of the map (an append
    compares them with the store's map)."""
    if args.spec:
        spec = _spec_file(args)
        params = spec.get("params", {})
        return spec["method"], params if isinstance(params, dict) else {}
    return args.method, parse_params(args.param)


def build_map(args):
    """The feature map the arguments describe (fitted when given a full spec)."""
    from ..maps import from_spec

    if args.spec:
        spec = _spec_file(args)
        if "n_features_in" in spec:
            try:
                from ..sidecar import beside

                return from_spec(spec, arrays=beside(args.spec))  # nystroem: x.json's arrays in x.npz
            except (ValueError, TypeError, KeyError) as e:
                raise UsageError(f"--spec {args.spec}: {e}") from None
        params = spec.get("params", {})
        if not isinstance(params, dict):
            raise UsageError(f"--spec {args.spec}: 'params' must be an object")
        return make_map(spec["method"], params, flag=f"--spec {args.spec}: params")
    return make_map(args.method or DEFAULT_METHOD, parse_params(args.param))


def block_rows(args):
    """``--block-rows``, or the deprecated ``--chunks`` with a FutureWarning."""
    if args.chunks is None:
        return args.block_rows
    if args.block_rows is not None:
        raise UsageError("--chunks is the deprecated name of --block-rows: give --block-rows only")
    warnings.warn("--chunks is deprecated and will be removed in the next release: use --block-rows",
                  FutureWarning, stacklevel=2)
    args.block_rows, args.chunks = args.chunks, None
    return args.block_rows


def read_input(args, stored_names=None):
    """``(rows, labels, names)``, lazily: a dask array or SparsePartitions, the labels to store
    beside them (``--labels``, or a Parquet/CSV ``--label-column``; svmlight rows carry their own,
    which :func:`~dask_kernels.featurize` reads from them: None here) and a Parquet/CSV input's
    feature column names (else None). ``stored_names``: the input columns of the store appended
    to, which a table's columns are read by (unless ``--columns``)."""
    columns = columns_by_name(args.input, args.format, table_columns(args), stored_names, "store")
    fmt, X, carried, names = open_rows(args.input, args.format, n_features=args.n_features,
                                       zero_based=args.zero_based, blocksize=args.blocksize,
                                       block_rows=block_rows(args), columns=columns, label_column=args.label_column,
                                       header=args.header, named=True)
    if fmt == "store":
        raise UsageError(f"input {args.input}: is a feature store; featurize raw rows (.npy, Zarr array, Parquet, "
                         "CSV, svmlight)")
    labels = labels_for(args, fmt, X, carried, source=f"input {args.input}", required=False)
    return X, None if fmt == "svmlight" else labels, names


def fit_here(fmap, X, block_rows):
    """``fmap`` fitted as :func:`~dask_kernels.pipeline.featurize` fits an unfitted map (a clone,
    on the first block of dense rows that has any), the block read in this process.

    Why: featurize computes that block on the default scheduler, the command's LocalCluster, so
    the first task of the run shipped a whole block (32 MiB by default) from a worker to this
    process while both workers waited for the store. The workers of a LocalCluster read the files
    this process reads, so reading the block here gives the same rows, the same fitted map and
    the same store. Maps fitted on all rows (``fits_partitioned``, Nystroem), fitted maps and
    inputs other than dask arrays (a sparse source's first block featurize already reads here)
    are returned as they are.
    """
    import dask
    import dask.array as da
    import dask.local

    from ..maps.base import ensure_fitted
    from ..pipeline.featurize import _as_source, _first_block

    if getattr(fmap, "fits_partitioned", False) or not isinstance(X, da.Array):
        return fmap
    kind, src = _as_source(X, block_rows)

    def first_rows():
        with dask.config.set(scheduler=dask.local.get_sync):  # by name, dask would import distributed
            return _first_block(kind, src)

    return ensure_fitted(fmap, first_rows)


def _prepare_client():
    """What this process loads after its LocalCluster is up, loaded while it starts (see
    :func:`~._cluster.client_for`): Zarr, for creating the store, and Numba with the input check,
    for fitting the map on the first block (about 0.3 s each, otherwise paid in turn)."""
    import numpy as np
    import zarr.codecs  # noqa: F401

    from ..blocks import validate_block

    validate_block(np.zeros((1, 1)))


def run(args):
    import time

    existing(args.input, "input")
    if args.labels:
        existing(args.labels, "--labels")
    output = output_store(args.output, args.overwrite)
    block_rows(args)  # before a cluster starts
    if args.labels and args.format == "svmlight":
        raise UsageError("--labels is for .npy and Zarr input: svmlight files carry their labels")
    start_worker_server(args)  # now: it imports on the other core while this process does

    from ..pipeline import featurize
    from ..pipeline.append import append_map
    from ._center import resolve_center

    fmap = build_map(args)
    if args.n_features is not None:  # svmlight's stated width: known now, so refused now
        check_width(fmap, args.n_features, "--n-features")
    stored_map = stored_names = None
    if args.append:  # the store's map, fixed by its first rows (None: these rows create the store)
        method, params = explicit_map(args)
        stored_map = append_map(output, params, method=method)
        if stored_map is not None:
            from ..pipeline import open_store

            stored_names = open_store(output, verify=False).feature_names  # attributes only
    with client_for(args, prepare=_prepare_client):
        X, labels, names = read_input(args, stored_names)
        if X.shape[0] == 0:  # before a map is fitted on nothing (its message names no file)
            raise UsageError(f"input {args.input}: has no rows (an empty file?): nothing to featurize")
        fmap = stored_map if stored_map is not None else resolve_center(fmap, X)
        t0 = time.perf_counter()
        if starts_local_cluster(args):
            fmap = fit_here(fmap, X, block_rows(args))
        store = featurize(X, fmap, labels=labels, store=output, block_rows=block_rows(args),
                          overwrite=args.overwrite, mode="append" if args.append else "write",
                          progress=not args.no_progress, feature_names=names)
        seconds = time.perf_counter() - t0
    stats = store.run_stats
    print(f"{store.path}: {store.n_rows} rows x {store.features.shape[1]} {store.features.dtype} "
          f"({store.spec['method']}), {store.n_blocks} block{'' if store.n_blocks == 1 else 's'}: {stats['computed']} computed, "
          f"{stats['skipped']} already done; {seconds:.1f} s")
    return 0
