"""``dask-kernels demo``: the main job on an embedded default.

Featurizes scikit-learn's bundled handwritten digits (1797 real 8x8 images, no download) with
GCWS on a local Dask cluster, trains a linear SGD model on the one-hot codes, and compares it
with the same linear model on the raw pixels.
"""

import time

help = "GCWS + linear SGD on scikit-learn's bundled digits, on a local Dask cluster"


def add_arguments(parser):
    parser.add_argument("--n-components", type=int, default=512, help="GCWS hashes k (default 512)")
    parser.add_argument("--bits", type=int, default=8, help="bits per code (default 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="local Dask worker processes (default 2)")
    parser.add_argument("--partitions", type=int, default=8, help="row partitions (default 8)")


def _codes_of_block(block, spec_json):
    # Runs on a worker: the map is rebuilt from its spec, nothing else is shipped.
    from dask_kernels.maps import from_spec

    return from_spec(spec_json).transform_block(block)


def run(args):
    import dask.array as da
    import numpy as np
    from distributed import Client, LocalCluster
    from sklearn.datasets import load_digits
    from sklearn.linear_model import SGDClassifier
    from sklearn.model_selection import train_test_split

    from dask_kernels import GCWS

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    print(f"digits: {len(X_train)} training and {len(X_test)} test rows, {X.shape[1]} pixels")

    def sgd():
        return SGDClassifier(loss="hinge", alpha=1e-4, max_iter=50, tol=None, random_state=0)

    raw = sgd().fit(X_train / 16.0, y_train)
    raw_acc = raw.score(X_test / 16.0, y_test)

    gcws = GCWS(n_components=args.n_components, bits=args.bits, seed=args.seed).fit(X_train)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster):
        Xd = da.from_array(X, chunks=(-(-len(X) // args.partitions), X.shape[1]))
        codes = Xd.map_blocks(
            _codes_of_block,
            gcws.spec_json(),
            dtype=gcws.output_dtype_,
            chunks=(Xd.chunks[0], (gcws.n_output_features_,)),
        )
        codes.compute()  # compile once on every worker before timing
        t0 = time.perf_counter()
        all_codes = codes.compute()
        seconds = time.perf_counter() - t0
    # the cluster computed exactly what this process computes
    assert np.array_equal(all_codes, gcws.transform(X))
    C_train, C_test, _, _ = train_test_split(all_codes, y, test_size=0.25, random_state=0, stratify=y)
    model = sgd().fit(gcws.expand(C_train), y_train)
    gcws_acc = model.score(gcws.expand(C_test), y_test)

    print(f"GCWS k={args.n_components} b={args.bits}: {len(X) / seconds:,.0f} rows/s on {args.workers} local workers "
          f"({args.partitions} partitions)")
    print(f"{'model':<40} {'test accuracy':>13}")
    print(f"{'linear SGD on raw pixels':<40} {raw_acc:13.4f}")
    print(f"{'linear SGD on GCWS one-hot codes':<40} {gcws_acc:13.4f}")
    return 0
