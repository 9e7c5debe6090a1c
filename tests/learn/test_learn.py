"""Out-of-core learning: fit_incremental on stores, arrays and partitions, KernelModel, checkpoints."""

import dask.array as da
import numpy as np


class FakeStore:
    """What dask_kernels.open_store returns, as far as the learner is concerned."""

    def __init__(self, features, labels, feature_map, chunks, complete=True, path="fake.zarr"):
        self.features = da.from_array(features, chunks=chunks)
        self.labels = None if labels is None else da.from_array(labels, chunks=(chunks[0],))
        self.feature_map = feature_map
        self.spec = feature_map.spec()
        self.complete = complete
        self.path = path
        self.n_rows = features.shape[0]


def store_of(X, y, fmap, row_chunk, col_chunk=None, **kw):
    codes = fmap.transform(X)
    return FakeStore(codes, y, fmap, (row_chunk, col_chunk or codes.shape[1]), **kw)


# ----------------------------------------------------------------------------------------------
import json
import os
import subprocess
import sys

import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.cluster import MiniBatchKMeans
from sklearn.linear_model import (LogisticRegression, PassiveAggressiveClassifier, Perceptron,
                                  SGDClassifier, SGDRegressor)
from sklearn.naive_bayes import BernoulliNB, MultinomialNB
from sklearn.neighbors import KNeighborsClassifier

from dask_kernels import GCWS, KernelModel, fit_incremental, load_model
from dask_kernels.learn import ArraySource, StoreSource
from dask_kernels.learn.metrics import erp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def xor_data(n=3000, d=6, seed=0):
    """A nonlinear target (sign of x0 * x1) that a linear model on raw rows cannot learn."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] * X[:, 1] > 0).astype(np.int64)


def sgd(**kw):
    kw = {"loss": "log_loss", "learning_rate": "constant", "eta0": 0.01, "alpha": 1e-5,
          "random_state": 0, **kw}
    return SGDClassifier(**kw)


# -- every column is used -----------------------------------------------------------------------
def test_every_column_chunk_is_used(float_identity):
    # 12 float columns in 3 column chunks of 4; the label depends only on the LAST chunk. A
    # learner that saw only the first chunk (dask-ml Incremental) would be at chance (0.5,
    # binomial sd 0.02 on ~600 held-out rows); one that sees every column learns it.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 12))
    y = (X[:, 9] + X[:, 10] - X[:, 11] > 0).astype(np.int64)
    fmap = float_identity().fit(X)
    store = store_of(X, y, fmap, row_chunk=500, col_chunk=4)
    assert len(store.features.chunks[1]) == 3
    model = fit_incremental(sgd(), store, epochs=5, validation_fraction=0.15, progress=False)
    assert model.history[-1]["accuracy"] > 0.9
    coef = model.estimator.coef_.ravel()
    assert coef.shape == (12,)
    # the weights on the informative columns dominate the others
    assert np.abs(coef[9:12]).min() > 3 * np.abs(coef[:9]).max()


def test_store_block_assembles_all_column_chunks():
    X, y = xor_data(300)
    gcws = GCWS(n_components=24, bits=4, seed=3).fit(X)
    store = store_of(X, y, gcws, row_chunk=100, col_chunk=5)
    src = StoreSource(store)
    block, labels = src.read(1)
    codes = gcws.transform(X)
    np.testing.assert_array_equal(block, codes[100:200])
    np.testing.assert_array_equal(labels, y[100:200])
    assert src.expand(block).shape == (100, 24 * 16)


# -- learning from GCWS codes, stores and raw rows agree ----------------------------------------
def test_store_and_on_the_fly_train_identically():
    X, y = xor_data(2000)
    gcws = GCWS(n_components=32, bits=8, seed=0).fit(X)
    store = store_of(X, y, gcws, row_chunk=250, col_chunk=7)
    m_store = fit_incremental(sgd(), store, epochs=3, progress=False)
    m_fly = fit_incremental(sgd(), X, y, feature_map=gcws, block_rows=250, epochs=3, progress=False)
    np.testing.assert_array_equal(m_store.estimator.coef_, m_fly.estimator.coef_)
    # nonlinear target: GCWS features learn it, raw features cannot. Chance is 0.5 with a
    # binomial sd of 0.035 on ~200 held-out rows: 0.7 is > 5 sd above, 0.62 is 3.4 sd.
    assert m_store.history[-1]["accuracy"] > 0.7
    raw = fit_incremental(sgd(), X, y, block_rows=250, epochs=3, progress=False)
    assert raw.history[-1]["accuracy"] < 0.62


def test_prefetch_does_not_change_the_result():
    X, y = xor_data(1500)
    gcws = GCWS(n_components=16, seed=0).fit(X)
    a = fit_incremental(sgd(), X, y, feature_map=gcws, block_rows=200, epochs=2, prefetch=True, progress=False)
    b = fit_incremental(sgd(), X, y, feature_map=gcws, block_rows=200, epochs=2, prefetch=False, progress=False)
    np.testing.assert_array_equal(a.estimator.coef_, b.estimator.coef_)
    c = fit_incremental(sgd(), X, y, feature_map=gcws, block_rows=200, epochs=2, seed=1, progress=False)
    assert not np.array_equal(a.estimator.coef_, c.estimator.coef_)


@pytest.mark.filterwarnings("ignore:Class PassiveAggressiveClassifier is deprecated")
@pytest.mark.parametrize("est", [
    Perceptron(random_state=0),
    PassiveAggressiveClassifier(random_state=0),
    MultinomialNB(),
    BernoulliNB(),
], ids=lambda e: type(e).__name__)
def test_other_incremental_classifiers_learn_from_codes(est):
    X, y = xor_data(3000)
    gcws = GCWS(n_components=64, seed=0).fit(X)
    store = store_of(X, y, gcws, row_chunk=500)
    model = fit_incremental(est, store, epochs=3, progress=False)
    # chance is 0.5 (sd 0.02 on ~300 held-out rows)
    assert model.history[-1]["accuracy"] > 0.75
    assert "erp" in model.history[-1] or not hasattr(est, "predict_proba")


def test_regressor_and_clusterer(float_identity):
    X, _ = xor_data(2000)
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    fmap = float_identity().fit(X)
    reg = fit_incremental(SGDRegressor(learning_rate="constant", eta0=0.01, random_state=0),
                          X, y, feature_map=fmap, block_rows=300, epochs=3, progress=False)
    last = reg.history[-1]
    assert {"mse", "r2"} <= set(last) and last["r2"] > 0.5  # sin(x) ~ linear part explains > 0.6
    km = fit_incremental(MiniBatchKMeans(n_clusters=3, random_state=0, n_init=1), X,
                         block_rows=300, epochs=2, progress=False)
    assert km.estimator.cluster_centers_.shape == (3, 6) and "inertia" in km.history[-1]


# -- held-out metrics ---------------------------------------------------------------------------
def test_erp_formula():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=50)
    y = rng.integers(0, 4, size=50)
    classes = np.arange(4)
    ce = -np.mean(np.log(p[np.arange(50), y]))
    ent = -np.mean(np.sum(p * np.log(p), axis=1))
    assert erp(y, p, classes) == pytest.approx(ce + ent, rel=1e-12)
    assert erp([0, 2], np.full((2, 4), 0.25), classes) == pytest.approx(2 * np.log(4))
    assert erp([1], np.array([[0.0, 1.0]]), [0, 1]) == 0.0  # certain and right: 0 log 0 = 0
    with pytest.raises(ValueError, match="not one of the training classes"):
        erp([7], np.full((1, 4), 0.25), classes)


def test_history_erp_matches_predict_proba_on_external_validation():
    X, y = xor_data(2000)
    gcws = GCWS(n_components=32, seed=0).fit(X)
    Xv, yv = xor_data(500, seed=9)
    model = fit_incremental(sgd(), X, y, feature_map=gcws, validation_data=(Xv, yv), epochs=2,
                            schedule=None, progress=False)
    p = model.predict_proba(Xv)
    assert model.history[-1]["erp"] == pytest.approx(erp(yv, p, model.estimator.classes_), rel=1e-9)
    assert model.history[-1]["accuracy"] == pytest.approx(model.score(Xv, yv))


# -- the thesis' learning-rate schedule ---------------------------------------------------------
SCRIPT = []  # held-out MSE each evaluation returns


class Scripted(RegressorMixin, BaseEstimator):
    """A regressor whose held-out MSE follows SCRIPT; its state counts partial_fit calls."""

    def __init__(self, eta0=0.1, learning_rate="constant"):
        self.eta0 = eta0
        self.learning_rate = learning_rate

    def partial_fit(self, X, y):
        self.calls_ = getattr(self, "calls_", 0) + 1
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0] + np.sqrt(SCRIPT.pop(0))  # column 0 is the label


def test_schedule_halves_and_reverts():
    rng = np.random.default_rng(0)
    y = rng.normal(size=400)
    X = np.column_stack([y, rng.normal(size=400)])
    Xv = X[:100]
    SCRIPT[:] = [1.0, 0.5, 0.499, 0.6, 0.3, 0.299]
    est = Scripted(eta0=0.1)
    model = fit_incremental(est, X, y, validation_data=(Xv, Xv[:, 0]), block_rows=100, epochs=6,
                            early_stopping=False, progress=False)
    h = model.history
    assert [r["action"] for r in h] == ["first", "keep", "halve", "revert", "keep", "halve"]
    assert [r["eta0"] for r in h] == [0.1, 0.1, 0.1, 0.05, 0.025, 0.025]
    assert [r["mse"] for r in h] == pytest.approx([1.0, 0.5, 0.499, 0.6, 0.3, 0.299])
    assert est.eta0 == 0.0125
    # 4 blocks per epoch; epoch 4 was undone, so 5 epochs' worth of calls remain
    assert est.calls_ == 5 * 4


def test_early_stopping_patience():
    rng = np.random.default_rng(0)
    y = rng.normal(size=200)
    X = np.column_stack([y, y])
    SCRIPT[:] = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5]
    model = fit_incremental(Scripted(), X, y, validation_data=(X[:50], y[:50]), block_rows=100,
                            epochs=6, n_iter_no_change=2, min_epochs=1, progress=False)
    assert len(model.history) == 3
    assert [r["action"] for r in model.history] == ["first", "revert", "revert"]
    assert [r["stop"] for r in model.history] == [False, False, True]


def test_schedule_on_real_sgd_never_ends_worse_than_best():
    X, y = xor_data(2000)
    gcws = GCWS(n_components=32, seed=0).fit(X)
    model = fit_incremental(sgd(eta0=0.5), X, y, feature_map=gcws, epochs=6, early_stopping=False,
                            progress=False)
    assert any(r["action"] == "revert" for r in model.history)  # eta0=0.5 is too large at first
    # the model kept after the last epoch is the best non-reverted one
    final = [r for r in model.history if r["action"] != "revert"][-1]["erp"]
    assert final == min(r["erp"] for r in model.history)


# -- checkpoints --------------------------------------------------------------------------------
class Interrupt(Exception):
    pass


def _interrupt_at(epoch, position):
    def cb(info):
        if info["epoch"] == epoch and info["position"] == position:
            raise Interrupt
    return cb


@pytest.mark.parametrize("make", [
    lambda: sgd(eta0=0.3, average=True),          # multiclass, averaged: aliased coef_ arrays
    lambda: SGDClassifier(random_state=0),         # default 'optimal' rate, hinge
    lambda: SGDRegressor(learning_rate="constant", eta0=0.01, random_state=0),
    lambda: MiniBatchKMeans(n_clusters=4, random_state=0, n_init=1),
    lambda: MultinomialNB(),
], ids=["sgd-avg-multiclass", "sgd-hinge", "sgd-regressor", "minibatch-kmeans", "multinomial-nb"])
@pytest.mark.parametrize("stop", [(1, 3), (2, 0)], ids=["mid-epoch", "epoch-boundary"])
def test_interrupted_run_resumes_to_identical_coefficients(tmp_path, make, stop):
    X, y = xor_data(1600)
    y3 = (y + (X[:, 2] > 0.5)).astype(np.int64)  # 3 classes
    est0 = make()
    kind_y = X[:, 0] * X[:, 1] if isinstance(est0, SGDRegressor) else y3
    gcws = GCWS(n_components=16, seed=0).fit(X)
    store = store_of(X, kind_y, gcws, row_chunk=200)
    kw = dict(epochs=4, seed=5, early_stopping=False, progress=False)
    ref = fit_incremental(make(), store, **kw)

    ck = tmp_path / "run.ckpt"
    est = make()
    epoch, pos = stop
    cb = _interrupt_at(epoch, pos) if pos else _interrupt_at(epoch, 1)
    with pytest.raises(Interrupt):
        fit_incremental(est, store, checkpoint=ck, checkpoint_every=2, callback=cb, **kw)
    assert ck.exists()
    calls = []
    resumed = fit_incremental(make(), store, checkpoint=ck, checkpoint_every=2,
                              callback=calls.append, **kw)
    # it really resumed: 4 epochs x 8 blocks, minus what the last checkpoint had done
    done = 8 + 2 if pos else 16
    assert len(calls) == 32 - done
    for name in ("coef_", "intercept_", "cluster_centers_", "feature_count_", "_average_coef"):
        if hasattr(ref.estimator, name):
            assert np.array_equal(getattr(ref.estimator, name), getattr(resumed.estimator, name)), name
    assert [r.get("action") for r in ref.history] == [r.get("action") for r in resumed.history]
    assert [r.get("eta0") for r in ref.history] == [r.get("eta0") for r in resumed.history]
    if hasattr(ref.estimator, "t_"):
        assert ref.estimator.t_ == resumed.estimator.t_
    # resuming a finished run does no more work and returns the same model
    again = fit_incremental(make(), store, checkpoint=ck, **kw)
    assert len(again.history) == len(ref.history)


def test_checkpoint_refuses_a_different_run(tmp_path):
    X, y = xor_data(600)
    gcws = GCWS(n_components=8, seed=0).fit(X)
    ck = tmp_path / "c.ckpt"
    fit_incremental(sgd(), X, y, feature_map=gcws, block_rows=200, epochs=1, checkpoint=ck, progress=False)
    with pytest.raises(ValueError, match="different seed"):
        fit_incremental(sgd(), X, y, feature_map=gcws, block_rows=200, epochs=1, seed=3,
                        checkpoint=ck, progress=False)
    with pytest.raises(ValueError, match="alpha"):
        fit_incremental(sgd(alpha=0.1), X, y, feature_map=gcws, block_rows=200, epochs=1,
                        checkpoint=ck, progress=False)
    # the checkpoint is plain npz + JSON: it loads without pickle
    with np.load(ck, allow_pickle=False) as z:
        meta = json.loads(str(z["__meta__"]))
    assert meta["loop"]["epoch"] == 1


# -- bad input ----------------------------------------------------------------------------------
def test_bad_input_errors():
    X, y = xor_data(400)
    gcws = GCWS(n_components=8, seed=0).fit(X)
    with pytest.raises(TypeError, match="no partial_fit"):
        fit_incremental(KNeighborsClassifier(), X, y, feature_map=gcws, progress=False)
    with pytest.raises(ValueError, match="needs labels"):
        fit_incremental(sgd(), store_of(X, None, gcws, 100), progress=False)
    with pytest.raises(ValueError, match="misaligned"):
        fit_incremental(sgd(), store_of(X, y[:-1], gcws, 100), progress=False)
    with pytest.raises(ValueError, match="misaligned"):
        fit_incremental(sgd(), X, y[:-1], feature_map=gcws, progress=False)
    with pytest.raises(ValueError, match="incomplete"):
        fit_incremental(sgd(), store_of(X, y, gcws, 100, complete=False), progress=False)
    Xbad = X.copy()
    Xbad[123, 2] = np.nan
    with pytest.raises(ValueError, match="row 123"):
        fit_incremental(sgd(), Xbad, y, feature_map=gcws, block_rows=100, progress=False)
    with pytest.raises(ValueError, match="at least two classes"):
        fit_incremental(sgd(), X, np.zeros(400, int), feature_map=gcws, progress=False)


# -- KernelModel --------------------------------------------------------------------------------
def _trained(n=1500):
    X, y = xor_data(n)
    gcws = GCWS(n_components=32, seed=0).fit(X)
    return X, y, gcws, fit_incremental(sgd(), X, y, feature_map=gcws, block_rows=300, epochs=2,
                                       progress=False)


def test_model_predicts_on_numpy_csr_dask_and_store():
    X, y, gcws, model = _trained()
    ref = model.estimator.predict(gcws.expand(gcws.transform(X)))
    np.testing.assert_array_equal(model.predict(X), ref)
    np.testing.assert_array_equal(model.predict(sp.csr_matrix(X)), ref)
    Xd = da.from_array(X, chunks=(400, 3))
    lazy = model.predict_proba(Xd)
    assert isinstance(lazy, da.Array) and lazy.shape == (len(X), 2)
    np.testing.assert_allclose(lazy.compute(), model.predict_proba(X), rtol=1e-6)
    np.testing.assert_array_equal(model.predict(store_of(X, y, gcws, 500, 9)).compute(), ref)
    assert model.score(Xd, da.from_array(y)) == pytest.approx(np.mean(ref == y))
    other = store_of(X, y, GCWS(n_components=32, seed=1).fit(X), 500)
    with pytest.raises(ValueError, match="different feature map"):
        model.predict(other)


def test_save_load_in_a_new_process(tmp_path):
    X, y, gcws, model = _trained()
    path = model.save(tmp_path / "model.dk")
    np.save(tmp_path / "X.npy", X[:50])
    code = (
        "import numpy as np, sys; from dask_kernels import load_model;"
        f"m = load_model({str(path)!r}); X = np.load({str(tmp_path / 'X.npy')!r});"
        f"np.save({str(tmp_path / 'p.npy')!r}, m.predict_proba(X)); print(len(m.history))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ROOT}, check=True)
    assert out.stdout.strip() == "2"
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), model.predict_proba(X[:50]))
    assert sorted(os.listdir(path)) == ["arrays.npz", "model.json"]
    # saving again replaces the model in place, when asked to
    with pytest.raises(FileExistsError, match="overwrite=True"):
        model.save(path)
    model.save(path, overwrite=True)
    np.testing.assert_array_equal(load_model(path).predict(X), model.predict(X))


def test_save_refuses_models_that_need_pickle(tmp_path):
    X, y = xor_data(100)
    m = KernelModel(None, KNeighborsClassifier(n_neighbors=1).fit(X, y))
    with pytest.raises(TypeError, match="cannot save a KNeighborsClassifier"):
        m.save(tmp_path / "knn")
    p = tmp_path / "fake"
    m2 = KernelModel(None, SGDClassifier().fit(X, y))
    m2.save(p)
    meta = json.loads((p / "model.json").read_text())
    meta["estimator"]["class"] = "os.system"
    (p / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="not a loadable model class"):
        load_model(p)


def test_dask_and_csr_raw_input_train_like_numpy():
    X, y = xor_data(1200)
    X[X < -1.0] = 0.0  # some zeros so CSR differs from dense in storage
    gcws = GCWS(n_components=16, seed=0).fit(X)
    ref = fit_incremental(sgd(), X, y, feature_map=gcws, block_rows=300, epochs=2, progress=False)
    Xd = da.from_array(X, chunks=(300, 3))  # column chunks too: merged per row block
    dsk = fit_incremental(sgd(), Xd, da.from_array(y, chunks=300), feature_map=gcws, epochs=2,
                          progress=False)
    csr = fit_incremental(sgd(), sp.csr_matrix(X), y, feature_map=gcws, block_rows=300, epochs=2,
                          progress=False)
    np.testing.assert_array_equal(ref.estimator.coef_, dsk.estimator.coef_)
    np.testing.assert_array_equal(ref.estimator.coef_, csr.estimator.coef_)


@pytest.mark.parametrize("make", [
    lambda X, y: LogisticRegression(max_iter=200).fit(X, y),
    lambda X, y: MultinomialNB().fit(X, y),
    lambda X, y: SGDRegressor(random_state=0).fit(X, y.astype(float)),
    lambda X, y: Perceptron(random_state=0).fit(X, y),
], ids=["logistic", "multinomial-nb", "sgd-regressor", "perceptron"])
def test_save_load_round_trip_estimators(tmp_path, make):
    X, y = xor_data(400)
    gcws = GCWS(n_components=16, seed=0).fit(X)
    model = KernelModel(gcws, make(gcws.expand(gcws.transform(X)), y))
    loaded = load_model(model.save(tmp_path / "m"))
    assert type(loaded.estimator) is type(model.estimator)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    if hasattr(model.estimator, "decision_function"):
        np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))


class FakePartitions:
    """The SparsePartitions interface (dask_kernels.read_svmlight) over in-memory CSR pieces."""

    def __init__(self, X, y, counts):
        edges = np.concatenate([[0], np.cumsum(counts)])
        self.pieces = [(sp.csr_matrix(X[a:b]), y[a:b].astype(np.float64), None)
                       for a, b in zip(edges[:-1], edges[1:])]
        self.row_counts, self.n_features, self.has_labels = tuple(counts), X.shape[1], True

    def loader(self, i):
        return self.pieces[i]


def test_partitioned_sparse_input_trains_like_numpy():
    X, y = xor_data(1000)
    gcws = GCWS(n_components=16, seed=0).fit(X)
    counts = [250, 250, 250, 250]
    a = fit_incremental(sgd(), FakePartitions(X, y, counts), feature_map=gcws, epochs=2, progress=False)
    b = fit_incremental(sgd(), ArraySource(X, y.astype(np.float64), gcws, block_rows=250), epochs=2,
                        progress=False)
    # same blocks, and GCWS codes of CSR and dense rows are identical: identical training
    np.testing.assert_array_equal(a.estimator.coef_, b.estimator.coef_)
    counts = [300, 200, 250, 250]
    Xbad = X.copy()
    Xbad[777, 1] = np.inf
    with pytest.raises(ValueError, match="row 777"):
        fit_incremental(sgd(), FakePartitions(Xbad, y, counts), feature_map=gcws, progress=False)


KILLED_RUN = """
import os, signal, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_learn import xor_data, sgd
from dask_kernels import GCWS, fit_incremental
X, y = xor_data(1600)
gcws = GCWS(n_components=16, seed=0).fit(X)

def die(info):
    if info["epoch"] == 1 and info["position"] == 5:
        os.kill(os.getpid(), signal.SIGKILL)   # no cleanup, no exception handlers

fit_incremental(sgd(eta0=0.3), X, y, feature_map=gcws, block_rows=200, epochs=3, seed=2,
                early_stopping=False, checkpoint={ckpt!r}, checkpoint_every=1, callback=die,
                progress=False)
"""


def test_killed_process_resumes_to_identical_coefficients(tmp_path):
    X, y = xor_data(1600)
    gcws = GCWS(n_components=16, seed=0).fit(X)
    kw = dict(feature_map=gcws, block_rows=200, epochs=3, seed=2, early_stopping=False, progress=False)
    ref = fit_incremental(sgd(eta0=0.3), X, y, **kw)
    ck = str(tmp_path / "k.ckpt")
    code = KILLED_RUN.format(tests=os.path.dirname(os.path.abspath(__file__)), ckpt=ck)
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": ROOT},
                          capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    calls = []
    res = fit_incremental(sgd(eta0=0.3), X, y, checkpoint=ck, checkpoint_every=1, callback=calls.append, **kw)
    assert len(calls) == 3 * 8 - (8 + 5)  # the checkpoint of block 5 of epoch 1 survived the kill
    np.testing.assert_array_equal(ref.estimator.coef_, res.estimator.coef_)
    np.testing.assert_array_equal(ref.estimator.intercept_, res.estimator.intercept_)


def test_lazy_prediction_reads_nothing_until_computed():
    import dask

    _, _, _, model = _trained(600)

    def unreadable():
        raise RuntimeError("read")

    Xd = da.from_delayed(dask.delayed(unreadable)(), shape=(10, 6), dtype=np.float64)
    lazy = model.predict_proba(Xd)  # building the graph touches no data
    assert lazy.shape == (10, 2) and lazy.dtype == np.float64
    with pytest.raises(RuntimeError, match="read"):
        lazy.compute()


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_a_label_that_is_not_a_finite_number_is_refused_naming_its_row(bad):
    # SGDRegressor trained on an infinite label without a word (the features are finite by
    # construction, so scikit-learn's check was off, and it skipped the labels too)
    import dask.array as da
    from sklearn.linear_model import SGDRegressor

    X = np.random.default_rng(0).random((200, 5))
    y = X[:, 0].copy()
    y[123] = bad
    for labels in (y, da.from_array(y, chunks=50)):
        with pytest.raises(ValueError, match="labels: row 123 is (inf, not a finite number|missing \\(NaN\\))"):
            fit_incremental(SGDRegressor(), X, labels, feature_map=GCWS(n_components=16), epochs=1,
                            validation_fraction=None, block_rows=50, progress=False)
