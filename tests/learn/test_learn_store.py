"""fit_incremental and KernelModel on real Zarr feature stores (dask_kernels.featurize)."""

import dask.array as da
import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier

import dask_kernels
from dask_kernels import GCWS, fit_incremental, load_model



def data(n=3000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] * X[:, 1] > 0).astype(np.int64)


def sgd():
    return SGDClassifier(loss="log_loss", alpha=1e-5, learning_rate="constant", eta0=1 / 32, random_state=0)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    X, y = data()
    gcws = GCWS(n_components=32, bits=8, seed=0).fit(X)
    path = str(tmp_path_factory.mktemp("s") / "f.zarr")
    store = dask_kernels.featurize(da.from_array(X, chunks=(500, -1)), gcws, labels=y, store=path,
                                   progress=False)
    return X, y, gcws, path, store


def test_store_path_and_on_the_fly_agree(stored):
    X, y, gcws, path, store = stored
    a = fit_incremental(sgd(), store, epochs=3, progress=False)
    b = fit_incremental(sgd(), path, epochs=3, progress=False)
    c = fit_incremental(sgd(), X, y, feature_map=gcws, block_rows=500, epochs=3, progress=False)
    np.testing.assert_array_equal(a.estimator.coef_, b.estimator.coef_)
    np.testing.assert_array_equal(a.estimator.coef_, c.estimator.coef_)
    # chance 0.5, binomial sd 0.03 on ~300 held-out rows
    assert a.history[-1]["accuracy"] > 0.7
    np.testing.assert_array_equal(a.predict(dask_kernels.open_store(path)).compute(), a.predict(X))


def test_resume_on_a_store(stored, tmp_path):
    _, _, _, path, _ = stored
    ref = fit_incremental(sgd(), path, epochs=3, early_stopping=False, progress=False)

    def stop(info):
        if info["epoch"] == 1 and info["position"] == 4:
            raise KeyboardInterrupt

    ck = tmp_path / "c.ckpt"
    with pytest.raises(KeyboardInterrupt):
        fit_incremental(sgd(), path, epochs=3, early_stopping=False, checkpoint=ck, checkpoint_every=3,
                        callback=stop, progress=False)
    res = fit_incremental(sgd(), path, epochs=3, early_stopping=False, checkpoint=ck, checkpoint_every=3,
                          progress=False)
    np.testing.assert_array_equal(ref.estimator.coef_, res.estimator.coef_)


def test_incomplete_store_is_refused(stored, tmp_path):
    import shutil

    import zarr

    _, _, _, path, _ = stored
    copy = str(tmp_path / "incomplete.zarr")
    shutil.copytree(path, copy)
    zarr.open_group(copy, mode="r+").attrs["complete"] = False
    with pytest.raises(ValueError, match="incomplete"):
        fit_incremental(sgd(), copy, progress=False)


def test_cli_train_from_store(stored, tmp_path, capsys):
    from dask_kernels.cli import main

    X, y, _, path, _ = stored
    assert main(["train", path, "--epochs", "2", "-o", str(tmp_path / "m.dk")]) == 0
    assert "saved KernelModel(gcws" in capsys.readouterr().out
    assert load_model(tmp_path / "m.dk").score(X, y) > 0.7


def test_train_on_the_fly_from_svmlight_partitions(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    X, y = data(1200)
    path = str(tmp_path / "d.svm")
    dump_svmlight_file(X, y, path, zero_based=False)
    parts = dask_kernels.read_svmlight(path, blocksize=20_000)
    assert parts.n_partitions > 1
    gcws = GCWS(n_components=32, seed=0).fit(X)
    model = fit_incremental(sgd(), parts, feature_map=gcws, epochs=3, progress=False)
    assert model.history[-1]["accuracy"] > 0.7  # chance 0.5, sd 0.045 on ~120 held-out rows


def test_blocks_are_read_by_the_store_not_through_a_dask_graph(stored, monkeypatch):
    """A local run reads an opened store's blocks with ``read_block`` (checked as the dask
    arrays check them, without their graph and copy): the same rows, the same model as through
    dask; a store whose arrays were changed (mapped) or a scheduler that is not this process's
    goes through dask as before."""
    import dask

    from dask_kernels.learn import StoreSource
    from dask_kernels.pipeline.store import FeatureStore

    X, y, gcws, path, store = stored
    src = StoreSource(dask_kernels.open_store(path))
    assert src._direct()
    got = src.read_blocks([3, 0], [None, np.array([4, 1])])
    assert np.array_equal(got[0][0], store.features[1500:2000].compute())
    assert np.array_equal(got[1][0], store.features[:500].compute()[[4, 1]])
    assert np.array_equal(got[1][1], y[[4, 1]])
    assert np.array_equal(src.read(2)[1], y[1000:1500])

    calls = []
    real = FeatureStore.read_block
    monkeypatch.setattr(FeatureStore, "read_block", lambda self, i: calls.append(i) or real(self, i))
    direct = fit_incremental(sgd(), dask_kernels.open_store(path), epochs=2, progress=False)
    assert sorted(calls) == list(range(6))  # every block once (the rows are kept from epoch to epoch)
    monkeypatch.setattr(StoreSource, "_direct", lambda self: False)
    calls.clear()
    graph = fit_incremental(sgd(), dask_kernels.open_store(path), epochs=2, progress=False)
    assert calls == []
    assert direct.estimator.coef_.tobytes() == graph.estimator.coef_.tobytes()
    assert direct.estimator.intercept_.tobytes() == graph.estimator.intercept_.tobytes()
    monkeypatch.undo()

    mapped = dask_kernels.open_store(path)
    mapped.features = mapped.features.map_blocks(lambda b: b, dtype=mapped.features.dtype)
    assert not StoreSource(mapped)._direct()
    assert not StoreSource(dask_kernels.open_store(path), block_rows=250)._direct()  # not the stored blocks
    with dask.config.set(scheduler="processes"):
        assert not src._direct()
    assert src.synchronous()._direct()


def test_an_opened_store_read_on_the_workers_gives_the_local_model(stored, local_cluster):
    """On the workers (scheduler "synchronous" in their tasks) the store's blocks are read
    with ``read_block`` too: the same model as the local run."""
    from distributed import Client

    X, y, gcws, path, store = stored

    def run(client):
        return fit_incremental(sgd(), dask_kernels.open_store(path), epochs=1, validation_fraction=None,
                               client=client, progress=False).estimator

    local = run(False)
    with Client(local_cluster) as client:
        remote = run(client)
    assert local.coef_.tobytes() == remote.coef_.tobytes() and local.intercept_.tobytes() == remote.intercept_.tobytes()
