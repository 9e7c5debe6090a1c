"""SoftmaxSGD out of core: GCWS stores fed as codes, checkpoints, saved models, the CLI."""

import dask.array as da
import numpy as np
import pytest

import dask_kernels
from dask_kernels import GCWS, RFF, SoftmaxSGD, expand_codes, fit_incremental, load_model
from dask_kernels.cli import main


def data(n=2000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] > 0).astype(np.int64) + 2 * (X[:, 1] * X[:, 2] > 0)  # 4 classes
    return X, y


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    X, y = data()
    gcws = GCWS(n_components=32, bits=6, seed=0).fit(X)
    path = str(tmp_path_factory.mktemp("s") / "f.zarr")
    store = dask_kernels.featurize(da.from_array(X, chunks=(250, -1)), gcws, labels=y, store=path,
                                   progress=False)
    return X, y, gcws, path, store


def softmax(**kw):
    return SoftmaxSGD(code_bits=6, alpha=1e-5, eta0=1 / 32, random_state=0, **kw)


def test_store_is_fed_as_codes_and_equals_the_one_hot_run(stored, monkeypatch):
    X, y, gcws, path, store = stored
    model = fit_incremental(softmax(), path, epochs=3, progress=False)
    est = model.estimator
    assert est.n_features_in_ == 32 and est.weights_.shape == (32 * 64, 4)  # codes, never expanded
    # the same run on the expanded one-hot features gives the same model (to rounding)
    onehot = fit_incremental(SoftmaxSGD(alpha=1e-5, eta0=1 / 32, random_state=0), path, epochs=3,
                             progress=False)
    assert onehot.estimator.n_features_in_ == 32 * 64
    np.testing.assert_allclose(est.coef_, onehot.estimator.coef_, rtol=1e-9, atol=1e-12)
    assert [r["action"] for r in model.history] == [r["action"] for r in onehot.history]
    # KernelModel predicts from raw rows and from the store through the codes
    codes = gcws.transform_block(X)
    np.testing.assert_array_equal(model.predict(X), est.predict(codes))
    np.testing.assert_array_equal(model.predict(dask_kernels.open_store(path)).compute(), est.predict(codes))
    np.testing.assert_allclose(model.predict_proba(X[:50]), onehot.predict_proba(X[:50]), rtol=1e-9, atol=1e-12)
    assert model.history[-1]["accuracy"] > 0.6  # 4 classes, chance 0.25; ~200 held-out rows
    # raw rows featurized on the fly: the same codes
    fly = fit_incremental(softmax(), X, y, feature_map=gcws, block_rows=250, epochs=3, progress=False)
    np.testing.assert_array_equal(fly.estimator.weights_, est.weights_)


def test_code_bits_mismatch_is_refused_naming_the_store(stored):
    _, _, _, path, _ = stored
    with pytest.raises(ValueError, match=r"f\.zarr: the GCWS map has bits=6 but SoftmaxSGD has code_bits=8"):
        fit_incremental(SoftmaxSGD(code_bits=8), path, progress=False)
    X, y = data(300)
    with pytest.raises(ValueError, match="takes GCWS codes, but the features come from a RFF map"):
        fit_incremental(SoftmaxSGD(code_bits=6), X, y, feature_map=RFF(n_components=16).fit(X), progress=False)


@pytest.mark.parametrize("params", [{}, {"rank": 3, "average": True}, {"loss": "hinge"}],
                         ids=["full", "rank3-averaged", "hinge"])
def test_resume_from_a_checkpoint_is_bitwise_identical(stored, tmp_path, params):
    _, _, _, path, _ = stored
    kw = dict(epochs=3, early_stopping=False, seed=2, progress=False)
    ref = fit_incremental(softmax(**params), path, **kw)

    def stop(info):
        if info["epoch"] == 1 and info["position"] == 4:
            raise KeyboardInterrupt

    ck = tmp_path / "c.ckpt"
    with pytest.raises(KeyboardInterrupt):
        fit_incremental(softmax(**params), path, checkpoint=ck, checkpoint_every=3, callback=stop, **kw)
    calls = []
    res = fit_incremental(softmax(**params), path, checkpoint=ck, checkpoint_every=3, callback=calls.append, **kw)
    assert len(calls) == 3 * 8 - (8 + 3)  # it resumed after the last checkpoint
    for name in ("weights_", "output_weights_", "intercept_", "_weights_sum", "_output_sum", "_intercept_sum"):
        if hasattr(ref.estimator, name):
            assert np.array_equal(getattr(ref.estimator, name), getattr(res.estimator, name)), name
    assert ref.estimator.t_ == res.estimator.t_
    assert [r["eta0"] for r in ref.history] == [r["eta0"] for r in res.history]


def test_a_checkpoint_from_before_the_loss_existed_resumes_as_log_loss(stored, tmp_path):
    from dask_kernels._npz import load_npz, save_npz

    _, _, _, path, _ = stored
    kw = dict(epochs=2, early_stopping=False, seed=2, progress=False)
    ref = fit_incremental(softmax(), path, **kw)

    def stop(info):
        if info["epoch"] == 1 and info["position"] == 4:
            raise KeyboardInterrupt

    ck = tmp_path / "c.ckpt"
    with pytest.raises(KeyboardInterrupt):
        fit_incremental(softmax(), path, checkpoint=ck, checkpoint_every=3, callback=stop, **kw)
    arrays, meta = load_npz(str(ck))
    del meta["params"]["loss"]  # as a checkpoint written before SoftmaxSGD had the parameter
    save_npz(str(ck), arrays, meta)
    with pytest.raises(ValueError, match="was written by an estimator with loss='log_loss', this one has 'hinge'"):
        fit_incremental(softmax(loss="hinge"), path, checkpoint=ck, checkpoint_every=3, **kw)
    res = fit_incremental(softmax(), path, checkpoint=ck, checkpoint_every=3, **kw)
    assert np.array_equal(ref.estimator.weights_, res.estimator.weights_)
    meta["params"]["lost"] = 1.0  # a parameter the estimator does not have is still refused
    save_npz(str(ck), arrays, meta)
    with pytest.raises(ValueError, match="params name other parameters than SoftmaxSGD's"):
        fit_incremental(softmax(), path, checkpoint=ck, checkpoint_every=3, **kw)


@pytest.mark.parametrize("params", [{}, {"rank": 2, "average": 100}], ids=["full", "rank2-averaged"])
def test_save_and_load_without_pickle(stored, tmp_path, params):
    X, _, _, path, _ = stored
    model = fit_incremental(softmax(**params), path, epochs=2, progress=False)
    out = model.save(tmp_path / "m.dk")
    loaded = load_model(out)
    assert type(loaded.estimator) is SoftmaxSGD and loaded.estimator.get_params() == model.estimator.get_params()
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_load_refuses_a_tampered_state(stored, tmp_path):
    import json

    X, _, _, path, _ = stored
    out = fit_incremental(softmax(), path, epochs=1, progress=False).save(tmp_path / "m.dk")
    meta = json.loads((out_json := tmp_path / "m.dk" / "model.json").read_text())
    meta["estimator"]["params"]["rank"] = 2  # the arrays are of a full model
    out_json.write_text(json.dumps(meta))
    with pytest.raises(ValueError,
                       match=r"m\.dk \(estimator state\): weights_ must be a float64 array of shape \(2048, 2\)"):
        load_model(out)
    meta["estimator"]["params"]["rank"] = None
    meta["estimator"]["params"]["code_bits"] = 8  # the map has 6 bits
    out_json.write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"weights_ must be a float64 array of shape \(8192, 4\)"):
        load_model(out)


def test_cli_train_softmax_with_rank(stored, tmp_path, capsys):
    X, y, gcws, path, _ = stored
    out = tmp_path / "cli.dk"
    rc = main(["train", path, "--estimator", "softmax", "--rank", "3", "--epochs", "2", "-o", str(out)])
    assert rc == 0
    assert "training SoftmaxSGD" in capsys.readouterr().out
    est = load_model(out).estimator
    assert est.code_bits == 6 and est.rank == 3 and est.weights_.shape == (32 * 64, 3)
    rc = main(["train", path, "--estimator", "sgd", "--rank", "3", "-o", str(tmp_path / "x.dk")])
    assert rc != 0
    assert "--rank is a parameter of --estimator softmax" in capsys.readouterr().err


def test_cli_default_learner_is_softmax_on_codes_and_sgd_on_floats(stored, tmp_path, capsys):
    X, y, _, path, _ = stored
    rc = main(["train", path, "--epochs", "1", "--rank", "2", "-o", str(tmp_path / "g.dk")])
    assert rc == 0 and "training SoftmaxSGD" in capsys.readouterr().out
    est = load_model(tmp_path / "g.dk").estimator
    assert isinstance(est, SoftmaxSGD) and est.code_bits == 6 and est.rank == 2
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    rc = main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--method", "rff",
               "--n-components", "16", "--epochs", "1", "-o", str(tmp_path / "f.dk")])
    assert rc == 0 and "training SGDClassifier" in capsys.readouterr().out
    rc = main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--method", "raw",
               "--rank", "2", "-o", str(tmp_path / "r.dk")])
    assert rc != 0 and "--rank is a parameter of --estimator softmax, not of sgd" in capsys.readouterr().err


def test_expanded_codes_and_codes_give_the_same_kernel_model_scores(stored):
    X, y, gcws, _, _ = stored
    codes = gcws.transform_block(X)
    est = softmax().fit(codes, y)
    model = dask_kernels.KernelModel(gcws, est)
    other = SoftmaxSGD(alpha=1e-5, eta0=1 / 32, random_state=0).fit(expand_codes(codes, 6), y)
    np.testing.assert_allclose(model.decision_function(X), other.decision_function(expand_codes(codes, 6)),
                               rtol=1e-9, atol=1e-12)
