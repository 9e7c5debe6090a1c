"""Train out of core from a GCWS feature store on a distributed Client (notebook-style script).

Run: ``python examples/train_from_store.py``. It

1. starts a local Dask cluster (two worker processes) and a Client;
2. featurizes a synthetic nonlinear dataset (40k rows) with GCWS into a Zarr feature store:
   every partition rebuilds the map from its spec, nothing is broadcast;
3. trains an SGD classifier from the store, block by block, with ``fit_incremental`` (held-out
   ERP and accuracy each epoch, the thesis' learning-rate schedule, a checkpoint per epoch);
4. saves the model, loads it back, predicts lazily on a dask array of new rows;
5. plots the training history to ``examples/train_from_store.png``;
6. removes its temporary folder (the store, the checkpoint, the model), even on errors.
"""

# %% setup
import os
import tempfile

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster
from sklearn.linear_model import SGDClassifier

import dask_kernels
from dask_kernels import GCWS, fit_incremental, load_model

HERE = os.path.dirname(os.path.abspath(__file__))


def make_data(n, d=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 2 * (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) > 0) + (X[:, 3] ** 2 + X[:, 4] ** 2 > 1.4)
    return X, y.astype(np.int64)


def main(n_rows=40_000, epochs=8, plot_dir=HERE):
    X, y = make_data(n_rows)
    X_new, y_new = make_data(max(1, n_rows // 8), seed=1)
    chunk = max(1, n_rows // 8)

    with tempfile.TemporaryDirectory(prefix="dk_example_") as work, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        print(client)
        # %% featurize into a store (resumable: re-running skips finished blocks)
        gcws = GCWS(n_components=256, bits=8, seed=0).fit(X[:1])
        store = dask_kernels.featurize(da.from_array(X, chunks=(chunk, -1)), gcws, labels=y,
                                       store=os.path.join(work, "features.zarr"), progress=False)
        print(store)

        # %% train from the store; eta0 = 1 / ||x||^2 = 1 / k for one-hot GCWS rows
        est = SGDClassifier(loss="log_loss", alpha=1e-5, learning_rate="constant", eta0=1 / 256, random_state=0)
        model = fit_incremental(est, store, epochs=epochs, validation_fraction=0.1, seed=0,
                                checkpoint=os.path.join(work, "train.ckpt"))

        # %% save, load, predict lazily on new rows (computed on the cluster)
        path = model.save(os.path.join(work, "model.dk"))
        loaded = load_model(path)
        lazy = loaded.predict(da.from_array(X_new, chunks=(max(1, chunk // 5), -1)))
        accuracy = float(np.mean(lazy.compute() == y_new))
        print(f"accuracy on {len(X_new)} new rows: {accuracy:.4f}")

    # %% plot the history
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h = model.history
    epochs = [r["epoch"] for r in h]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    ax[0].plot(epochs, [r["accuracy"] for r in h], marker="o")
    ax[0].set(xlabel="epoch", ylabel="held-out accuracy")
    ax[1].plot(epochs, [r["erp"] for r in h], marker="o", label="ERP")
    ax[1].plot(epochs, [r["log_loss"] for r in h], marker="s", label="log loss")
    for r in h:
        if r["action"] in ("halve", "revert"):
            ax[1].annotate(r["action"], (r["epoch"], r["erp"]), fontsize=8)
    ax[1].set(xlabel="epoch", ylabel="held-out loss")
    ax[1].legend()
    fig.suptitle("GCWS (k=256, b=8) + SGD from a Zarr feature store")
    fig.tight_layout()
    out = os.path.join(plot_dir, "train_from_store.png")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"plot: {out}")
    return accuracy


if __name__ == "__main__":
    main()
