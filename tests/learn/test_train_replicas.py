"""fit_incremental(replicas=n): iterative parameter mixing; the renamed parameters; dask DataFrames."""

import warnings

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.cluster import MiniBatchKMeans
from sklearn.linear_model import SGDClassifier
from sklearn.naive_bayes import MultinomialNB

from dask_kernels import GCWS, fit_incremental
from dask_kernels.learn.replicas import mix

N, BLOCK = 2400, 200


def _data(n=N, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, (X[:, 0] * X[:, 1] > 0).astype(int)


X, Y = _data()
XTE, YTE = _data(1000, seed=1)
GC = GCWS(n_components=32, bits=4, seed=0).fit(X)


def _sgd(**kw):
    return SGDClassifier(loss="log_loss", alpha=1e-4, learning_rate="constant", eta0=0.02, random_state=0, **kw)


def _fit(est=None, **kw):
    kw = {"feature_map": GC, "block_rows": BLOCK, "epochs": 3, "seed": 3, "progress": False, **kw}
    return fit_incremental(_sgd() if est is None else est, X, Y, **kw)


def test_replicas_are_bitwise_reproducible_and_as_accurate_as_one_learner():
    a, b = _fit(replicas=2), _fit(replicas=2)
    assert np.array_equal(a.estimator.coef_, b.estimator.coef_)
    assert np.array_equal(a.estimator.intercept_, b.estimator.intercept_)
    seq = _fit()
    assert not np.array_equal(a.estimator.coef_, seq.estimator.coef_)  # really another training
    # every training row once per epoch, split between the replicas
    assert [r["rows"] for r in a.history] == [r["rows"] for r in seq.history]
    # SGD's sample counter (it sets the "optimal" rate) as if one learner had seen every row
    # (a reverted epoch is undone, its rows with it)
    assert a.estimator.t_ == 1 + sum(r["rows"] for r in a.history if r.get("action") != "revert")
    # 1000 test rows: a binomial standard error of ~1.2 points; 3 of them
    assert abs(a.score(XTE, YTE) - seq.score(XTE, YTE)) < 0.035
    assert a.score(XTE, YTE) > 0.8


def test_mix_is_the_mean_of_the_replicas_and_counts_every_row():
    F = GC.expand(GC.transform(X))
    start = _sgd().partial_fit(F[:100], Y[:100], classes=[0, 1])
    import copy

    r1, r2 = copy.deepcopy(start), copy.deepcopy(start)
    r1.partial_fit(F[100:400], Y[100:400])
    r2.partial_fit(F[400:1000], Y[400:1000])
    mix(start, [r1, r2])
    assert np.allclose(start.coef_, (r1.coef_ + r2.coef_) / 2, rtol=0, atol=1e-12)
    assert np.allclose(start.intercept_, (r1.intercept_ + r2.intercept_) / 2, rtol=0, atol=1e-12)
    assert start.t_ == 1 + 1000  # t_ starts at 1: 100 + 300 + 600 rows seen in all


@pytest.mark.parametrize("est", [MultinomialNB(), MiniBatchKMeans(n_clusters=2, random_state=0)],
                         ids=["naive-bayes", "kmeans"])
def test_estimators_that_cannot_be_averaged_are_refused(est):
    with pytest.raises(TypeError, match="replicas=2: averaging the coefficients of"):
        _fit(est, replicas=2)


@pytest.mark.parametrize("kw, match", [
    ({"replicas": 0}, "replicas must be an integer >= 1"),
    ({"replicas": 2.0}, "replicas must be an integer >= 1"),
    ({"replicas": 13}, "replicas=13 but the training input has only 12 blocks"),
    ({"replicas": 2, "checkpoint_every": 2, "checkpoint": "x.ckpt"}, "checkpoint_every cannot be used"),
])
def test_bad_replicas_arguments_are_refused(kw, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=match):
        _fit(**kw)


def test_replicas_resume_from_a_checkpoint_to_identical_coefficients(tmp_path):
    path = tmp_path / "run.ckpt"
    full = _fit(replicas=3, epochs=4, validation_fraction=0.1)

    def stop(info):
        if info["epoch"] == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _fit(replicas=3, epochs=4, validation_fraction=0.1, checkpoint=path, callback=stop)
    resumed = _fit(replicas=3, epochs=4, validation_fraction=0.1, checkpoint=path)
    assert np.array_equal(full.estimator.coef_, resumed.estimator.coef_)
    assert [r["action"] for r in full.history] == [r["action"] for r in resumed.history]
    # a checkpoint of another number of replicas is refused
    with pytest.raises(ValueError, match="different replicas"):
        _fit(replicas=2, epochs=4, validation_fraction=0.1, checkpoint=path)


def test_early_stopping_acts_on_the_average():
    # a large step makes the averaged model's held-out loss go up after a few epochs: the model
    # reverts and, with n_iter_no_change=1, training stops there
    def est():
        return SGDClassifier(loss="log_loss", alpha=1e-4, learning_rate="constant", eta0=5.0, random_state=0)

    model = _fit(est(), replicas=2, epochs=8, validation_fraction=0.2, n_iter_no_change=1, min_epochs=1)
    actions = [r["action"] for r in model.history]
    assert len(actions) < 8 and actions[-1] == "revert" and "revert" not in actions[:-1], actions
    assert model.history[-1]["erp"] > model.history[-2]["erp"]
    k = len(actions) - 1
    before = _fit(est(), replicas=2, epochs=k, validation_fraction=0.2)
    assert np.array_equal(model.estimator.coef_, before.estimator.coef_)  # reverted to epoch k's average


def test_the_schedule_acts_on_the_average():
    model = _fit(replicas=2, epochs=4, validation_fraction=0.2, min_improvement=0.5)
    actions = [r["action"] for r in model.history]
    assert actions[0] == "first" and all(a in ("halve", "revert") for a in actions[1:])  # never a 50% gain
    assert [r["eta0"] for r in model.history] == [0.02, 0.02, 0.01, 0.005]  # the rate each epoch trained with
    assert model.estimator.eta0 == 0.0025


def test_old_parameter_names_warn_and_mean_the_same():
    new = _fit(validation_fraction=0.2, n_iter_no_change=2)
    with pytest.warns(FutureWarning, match="validation_fraction") as rec:
        old = _fit(validation=0.2, patience=2)
    assert any("n_iter_no_change" in str(w.message) for w in rec)
    assert np.array_equal(new.estimator.coef_, old.estimator.coef_)
    with pytest.warns(FutureWarning, match="validation_data"):
        ext = _fit(validation=(XTE, YTE))
    assert np.array_equal(ext.estimator.coef_, _fit(validation_data=(XTE, YTE)).estimator.coef_)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fit(validation_fraction=None)  # the new names warn about nothing
    with pytest.raises(ValueError, match="validation_data"):
        _fit(validation_fraction=(XTE, YTE))


def test_old_cli_flags_warn_and_mean_the_same(tmp_path):
    from dask_kernels import load_model
    from dask_kernels.cli import main

    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", Y)
    common = [str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--method", "gcws",
              "--n-components", "16", "--epochs", "2", "--block-rows", "400"]
    assert main(["train", *common, "--validation-fraction", "0.2", "--n-iter-no-change", "1",
                 "-o", str(tmp_path / "new.dk")]) == 0
    with pytest.warns(FutureWarning, match="--validation is deprecated"):
        assert main(["train", *common, "--validation", "0.2", "--patience", "1", "-o", str(tmp_path / "old.dk")]) == 0
    new, old = load_model(tmp_path / "new.dk"), load_model(tmp_path / "old.dk")
    assert np.array_equal(new.estimator.coef_, old.estimator.coef_)


def test_dask_dataframes_train_and_predict_lazily_like_numpy():
    cols = [f"x{i}" for i in range(X.shape[1])]
    ddf = dd.from_pandas(pd.DataFrame(X, columns=cols), npartitions=6)
    ys = dd.from_pandas(pd.Series(Y), npartitions=6)
    arr = fit_incremental(_sgd(), da.from_array(X, chunks=(N // 6, -1)), da.from_array(Y, chunks=N // 6),
                          feature_map=GC, epochs=2, progress=False)
    frame = fit_incremental(_sgd(), ddf, ys, feature_map=GC, epochs=2, progress=False)
    assert np.array_equal(arr.estimator.coef_, frame.estimator.coef_)
    te = dd.from_pandas(pd.DataFrame(XTE, columns=cols), npartitions=4)
    lazy = frame.predict(te)
    assert hasattr(lazy, "compute")
    assert np.array_equal(lazy.compute(), frame.predict(XTE))


def test_methods_on_a_dask_dataframe_read_nothing_until_computed():
    from dask_kernels.blocks import InputValueError

    cols = [f"x{i}" for i in range(X.shape[1])]
    model = fit_incremental(_sgd(), X, Y, feature_map=GC, epochs=1, progress=False)
    reads = []

    def frame(rows):
        parts = np.array_split(rows, 4)

        def part(i):
            reads.append(i)
            return pd.DataFrame(parts[i], columns=cols)

        return dd.from_map(part, range(4), meta=pd.DataFrame({c: pd.Series(dtype=float) for c in cols}),
                           enforce_metadata=False)

    lazy = {m: getattr(model, m)(frame(XTE)) for m in ("predict", "predict_proba", "decision_function")}
    assert reads == []  # the rows' lengths were computed at the call: a pass over the rows
    assert np.array_equal(lazy["predict"].compute(), model.predict(XTE))
    assert np.array_equal(lazy["predict_proba"].compute(), model.predict_proba(XTE))
    assert sorted(reads) == [0, 0, 1, 1, 2, 2, 3, 3]  # one read of each partition per compute
    bad = XTE.copy()
    bad[260, 2] = np.nan  # row 10 of the second of 4 partitions of 1000 rows
    with pytest.raises(InputValueError, match="row 10 of partition 1, column 2"):
        model.predict(frame(bad)).compute()


def test_each_replica_keeps_its_shard_and_shards_are_disjoint():
    from dask_kernels.learn import ArraySource
    from dask_kernels.learn.shuffle import shard

    class Counting(ArraySource):
        reads: list = []

        def read_blocks(self, blocks, rows):
            Counting.reads += list(blocks)
            return super().read_blocks(blocks, rows)

    src = Counting(X, Y, GC, block_rows=BLOCK)
    parts = [set(shard(src.n_blocks, 3, (r, 3)).tolist()) for r in range(3)]
    assert set.union(*parts) == set(range(src.n_blocks)) and sum(map(len, parts)) == src.n_blocks
    fit_incremental(_sgd(), src, epochs=3, replicas=3, validation_fraction=None, seed=3, progress=False)
    assert sorted(Counting.reads) == list(range(src.n_blocks))  # read once per run, not per epoch
