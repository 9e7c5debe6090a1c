"""``dask-kernels featurize``: featurize a .npy / Zarr / svmlight file into a Zarr feature store.

Runs on a running Dask cluster (``--scheduler tcp://host:8786``) or on a LocalCluster it starts.
Re-running the same command resumes an unfinished store; a store of another job is refused.
"""

import json

from ._args import (UsageError, connect, existing_path, make_map, param_value, parse_params, positive_int,
                    scheduler_address)

help = "featurize a .npy, Zarr or svmlight file into a resumable Zarr feature store"


def add_arguments(parser):
    parser.add_argument("input", help="input rows: a .npy file, a Zarr array, or an svmlight/LIBSVM file")
    parser.add_argument("output", help="feature store to write (path or fsspec URL)")
    parser.add_argument("--format", choices=["auto", "npy", "zarr", "svmlight"], default="auto",
                        help="input format (default: from the file name; .npy, .zarr, anything else svmlight)")
    parser.add_argument("--method", default="gcws", help="feature map (default gcws)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="map parameter, e.g. --param n_components=256 (value parsed as JSON if it can be)")
    parser.add_argument("--spec", help="JSON file with a map spec (a full spec from FeatureMap.spec(), or "
                                       '{"method": ..., "params": {...}}); overrides --method/--param')
    parser.add_argument("--n-features", type=positive_int, help="svmlight: input dimension (default: found in a first pass)")
    parser.add_argument("--zero-based", action="store_true",
                        help="svmlight: indices start at 0 (default: 1, as in LIBSVM files)")
    parser.add_argument("--blocksize", type=positive_int, default=64 * 2**20, help="svmlight: bytes per partition")
    parser.add_argument("--chunks", type=positive_int, help="rows per stored block (default: the input's partitions)")
    parser.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_address,
                        help="address of a running `dask scheduler` (tcp://host:port or host:port)")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help="LocalCluster worker processes (default: cores)")
    parser.add_argument("--threads-per-worker", type=positive_int, default=1)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing store")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _value(text):
    return param_value(text)


def build_map(args):
    """The feature map the arguments describe (fitted when given a full spec)."""
    from ..maps import from_spec

    if args.spec:
        existing_path(args.spec, "--spec")
        try:
            with open(args.spec) as f:
                spec = json.load(f)
        except ValueError as e:
            raise UsageError(f"--spec {args.spec}: not valid JSON ({e})") from None
        if not isinstance(spec, dict) or "method" not in spec:
            raise UsageError(f"--spec {args.spec}: expected a JSON object with a 'method' key")
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
    return make_map(args.method, parse_params(args.param))


def read_input(args):
    from .. import io

    fmt = args.format
    if fmt == "auto":
        path = args.input.rstrip("/")
        fmt = "npy" if path.endswith(".npy") else "zarr" if path.endswith(".zarr") else "svmlight"
    if fmt == "npy":
        return io.read_npy(args.input, block_rows=args.chunks)
    if fmt == "zarr":
        return io.read_zarr(args.input, block_rows=args.chunks)
    return io.read_svmlight(args.input, n_features=args.n_features, blocksize=args.blocksize,
                            zero_based=args.zero_based)


def run(args):
    import time

    from distributed import Client, LocalCluster

    from ..pipeline import featurize

    fmap = build_map(args)
    existing_path(args.input, "input")
    if args.scheduler is not None:
        client = connect(args.scheduler)
        cluster = None
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=args.threads_per_worker,
                               processes=True, dashboard_address=":0")
        client = Client(cluster)
    try:
        X = read_input(args)
        t0 = time.perf_counter()
        store = featurize(X, fmap, store=args.output, chunks=args.chunks, overwrite=args.overwrite,
                          progress=not args.no_progress)
        seconds = time.perf_counter() - t0
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    stats = store.run_stats
    print(f"\n{store.path}: {store.n_rows} rows x {store.features.shape[1]} {store.features.dtype} "
          f"({store.spec['method']}), {store.n_blocks} blocks: {stats['computed']} computed, "
          f"{stats['skipped']} already done; {seconds:.1f} s")
    return 0
