"""``dask-kernels demo``: the main job on an embedded default.

Scikit-learn's bundled handwritten digits (1797 real 8x8 images, no download) go through the
whole pipeline on a local Dask cluster: GCWS codes are computed partition by partition into a
Zarr feature store, a linear SGD model is trained out of core from the store, and the resulting
``KernelModel`` is scored on raw test rows next to the same linear model on the raw pixels.
"""

import os
import tempfile
import time

help = "featurize bundled digits with GCWS into a Zarr store on a local Dask cluster, train, compare"


def add_arguments(parser):
    parser.add_argument("--n-components", type=int, default=512, help="GCWS hashes k (default 512)")
    parser.add_argument("--bits", type=int, default=8, help="bits per code (default 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=10, help="training epochs (default 10)")
    parser.add_argument("--workers", type=int, default=2, help="local Dask worker processes (default 2)")
    parser.add_argument("--partitions", type=int, default=4, help="row partitions of the training set (default 4)")
    parser.add_argument("--store", default=None, help="where to write the feature store (default: a temporary directory)")


def _compile(spec_json, rows):
    from dask_kernels.maps import from_spec

    from_spec(spec_json).transform_block(rows)


def run(args):
    import dask.array as da
    from distributed import Client, LocalCluster
    from sklearn.datasets import load_digits
    from sklearn.linear_model import SGDClassifier
    from sklearn.model_selection import train_test_split

    from dask_kernels import GCWS, featurize, fit_incremental

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    print(f"digits: {len(X_train)} training and {len(X_test)} test rows, {X.shape[1]} pixels")

    def sgd(eta0):  # measured the best learner here: SoftmaxSGD on the same store scored 0.976-0.978
        return SGDClassifier(loss="hinge", alpha=1e-4, learning_rate="constant", eta0=eta0, random_state=0)

    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        store_path = args.store or os.path.join(tmp, "digits_gcws.zarr")
        gcws = GCWS(n_components=args.n_components, bits=args.bits, seed=args.seed).fit(X_train)
        client.run(_compile, gcws.spec_json(), X_train[:2])  # so the timing below is the job, not Numba
        Xd = da.from_array(X_train, chunks=(-(-len(X_train) // args.partitions), X.shape[1]))
        t0 = time.perf_counter()
        store = featurize(Xd, gcws, labels=y_train, store=store_path, progress=False, overwrite=True)
        seconds = time.perf_counter() - t0
        print(f"GCWS k={args.n_components} b={args.bits} -> {store_path}: {len(X_train) / seconds:,.0f} rows/s "
              f"end to end on {args.workers} local workers ({store.n_blocks} blocks)")
        # eta0 = 1 / ||z||^2: a one-hot GCWS row has exactly k ones
        model = fit_incremental(sgd(1.0 / args.n_components), store, epochs=args.epochs, validation_fraction=0.1,
                                seed=args.seed, progress=False)
        gcws_acc = model.score(X_test, y_test)
    # the same linear learner on the raw pixels (scaled to [0, 1]), trained in memory
    raw = sgd(1.0 / 64).fit(X_train / 16.0, y_train)
    raw_acc = raw.score(X_test / 16.0, y_test)

    print(f"{'model':<40} {'test accuracy':>13}")
    print(f"{'linear SGD on raw pixels':<40} {raw_acc:13.4f}")
    print(f"{'linear SGD on GCWS codes (from store)':<40} {gcws_acc:13.4f}")
    return 0
