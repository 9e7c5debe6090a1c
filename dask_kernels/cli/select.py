"""``dask-kernels select``: random feature selection (May 2017, Algorithm 1) into a map file.

Writes the selected map as a spec file (and, for more than 256 kept ids, the ids in an .npz
beside it), which ``dask-kernels featurize --spec`` and :func:`dask_kernels.maps.load_map`
read back.
"""

from __future__ import annotations

import os

from ._args import UsageError, make_map, parse_params, positive_int
from ._inputs import add_input_arguments, labels_for, open_rows, table_columns

help = "select random features by their SGD weights (RFF, NRFF, Fastfood) into a map spec file"


def add_arguments(parser):
    parser.add_argument("input", help="training rows: a .npy file, a Zarr array (path or URL), Parquet or CSV "
                        "(labels: --label-column) or an svmlight file (which carries its labels)")
    parser.add_argument("output", help="map spec file to write (.json); the ids go to the .npz beside it if many")
    parser.add_argument("--labels", help=".npy file of one label per row (required for .npy and Zarr input)")
    parser.add_argument("--method", default="rff", choices=["rff", "nrff", "fastfood"],
                        help="feature map (default rff)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="map parameter, e.g. --param gamma=0.5 (value parsed as JSON if it can be)")
    parser.add_argument("--n-components", type=positive_int, default=1000, help="features kept, D (default 1000)")
    parser.add_argument("--rounds", type=positive_int, default=10, help="selection rounds, T (default 10)")
    parser.add_argument("--subset-rows", type=positive_int,
                        help="rows of each round's SGD pass, R (default max(2 D, 1000))")
    parser.add_argument("--seed", type=int, default=0, help="seed of the row subsets (default 0)")
    parser.add_argument("--block-rows", type=positive_int, help="rows per input block (default: the input's)")
    parser.add_argument("--chunks", type=positive_int, help="deprecated name of --block-rows (removed in the next release)")
    add_input_arguments(parser)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output file")


def run(args):
    import time

    from ..select import RandomFeatureSelector
    from ..maps import save_map
    from .featurize import block_rows

    block_rows(args)  # the one name of featurize and train; --chunks warns
    if not args.output.endswith(".json"):
        raise UsageError(f"output {args.output}: expected a .json file name (the spec)")
    if os.path.exists(args.output) and not args.overwrite:
        raise UsageError(f"output {args.output}: exists; pass --overwrite to replace it")
    params = parse_params(args.param)
    for name in ("n_components", "feature_ids"):
        if name in params:
            raise UsageError(f"--param {name}: set by the selection (use --n-components)")
    fmap = make_map(args.method, params)
    fmt, X, carried = open_rows(args.input, args.format, n_features=args.n_features, zero_based=args.zero_based,
                                blocksize=args.blocksize, block_rows=args.block_rows, columns=table_columns(args),
                                label_column=args.label_column, header=args.header)
    if fmt == "store":
        raise UsageError(f"input {args.input}: selection reads raw rows (.npy, Zarr, Parquet, CSV or svmlight), "
                         "not a feature store")
    y = labels_for(args, fmt, X, carried, source=f"input {args.input}", required=True)
    t0 = time.perf_counter()
    sel = RandomFeatureSelector(fmap, n_components=args.n_components, subset_rows=args.subset_rows,
                                rounds=args.rounds, seed=args.seed).fit(X, y)
    path = save_map(sel.feature_map_, args.output)
    print(f"{path}: {sel.feature_map_.method} with {sel.feature_ids_.size} selected features of "
          f"{sel.n_generated_} generated; {time.perf_counter() - t0:.1f} s")
    return 0
