"""Steps of several blocks (``fit_incremental(step_blocks=k)``): the same rows in the same order,
cut into fewer, longer ``partial_fit`` calls; resume, threads and the cluster stay bitwise."""

import numpy as np
import pytest
from distributed import Client
from sklearn.linear_model import SGDClassifier

from dask_kernels import NRFF, fit_incremental
from dask_kernels.learn import ArraySource, learner
from dask_kernels.learn.shuffle import EpochPlan


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] * X[:, 2] > 0)  # 4 classes


def _sgd(**kw):
    return SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.05, random_state=0, **kw)


def _kw(X, **kw):
    return dict(feature_map=NRFF(n_components=32, gamma=0.5, seed=0).fit(X), epochs=2, block_rows=250,
                validation_fraction=0.1, early_stopping=False, progress=False) | kw


def test_larger_steps_serve_the_same_rows_in_the_same_order():
    src = ArraySource(np.zeros((1000, 1)), np.arange(1000), block_rows=100)
    for window in (1, 4, 10):
        one = EpochPlan(src, seed=3, epoch=1, window=window, fraction=0.1)
        for k in (2, 3, 10):
            plan = EpochPlan(src, seed=3, epoch=1, window=window, fraction=0.1, step_blocks=k)
            steps = [y[rows] for _, y, rows in plan.steps(0)]
            # windows of 4, 3, 3 blocks: ceil(size / k) steps each, never across two windows
            assert len(steps) == plan.n_steps == sum(-(-w.size // k) for w in one.windows)
            assert np.array_equal(np.concatenate(steps), np.concatenate([y[r] for _, y, r in one.steps(0)]))
            for start in range(plan.n_steps):  # resuming at any step serves exactly the rest
                rest = [y[rows] for _, y, rows in plan.steps(start)]
                assert len(rest) == len(steps) - start and all(map(np.array_equal, rest, steps[start:]))


def test_without_the_estimators_shuffle_larger_steps_only_move_call_boundaries():
    # the rows reach SGD in the same order, so the models differ by rounding only
    X, y = _data()
    one = fit_incremental(_sgd(shuffle=False), X, y, **_kw(X)).estimator
    five = fit_incremental(_sgd(shuffle=False), X, y, step_blocks=5, **_kw(X)).estimator
    assert not np.array_equal(one.coef_, five.coef_)  # not the same calls ...
    np.testing.assert_allclose(five.coef_, one.coef_, rtol=1e-9, atol=1e-12)  # ... but the same updates
    assert five.t_ == one.t_


def test_resume_inside_an_epoch_of_larger_steps_is_bitwise_identical(tmp_path):
    X, y = _data()
    kw = _kw(X, step_blocks=3, shuffle_window=6)
    ref = fit_incremental(_sgd(), X, y, **kw).estimator
    ck = tmp_path / "run.ckpt"

    class Stop(Exception):
        pass

    def cb(info):
        if info["epoch"] == 1 and info["position"] == 2:  # 12 blocks: windows of 6, 2 steps each
            raise Stop

    with pytest.raises(Stop):
        fit_incremental(_sgd(), X, y, checkpoint=ck, checkpoint_every=1, callback=cb, **kw)
    res = fit_incremental(_sgd(), X, y, checkpoint=ck, **kw).estimator
    assert np.array_equal(ref.coef_, res.coef_) and np.array_equal(ref.intercept_, res.intercept_)
    with pytest.raises(ValueError, match="different step_blocks"):  # steps of another size
        fit_incremental(_sgd(), X, y, checkpoint=ck, **(kw | {"step_blocks": 2}))


def test_threads_give_bitwise_the_one_thread_model(monkeypatch):
    monkeypatch.setattr(learner, "MIN_THREADED_WORK", 0)
    X, y = _data()
    one = fit_incremental(_sgd(), X, y, n_jobs=1, step_blocks=4, **_kw(X)).estimator
    two = fit_incremental(_sgd(), X, y, n_jobs=2, step_blocks=4, **_kw(X)).estimator
    assert np.array_equal(one.coef_, two.coef_) and np.array_equal(one.intercept_, two.intercept_)


def test_steps_prepared_on_the_workers_and_replicas_take_step_blocks(local_cluster):
    X, y = _data()
    kw = _kw(X, step_blocks=3, shuffle_window=6)
    local = fit_incremental(_sgd(), X, y, client=False, **kw).estimator
    replicas = fit_incremental(_sgd(), X, y, client=False, replicas=2, **kw).estimator
    with Client(local_cluster) as client:
        remote = fit_incremental(_sgd(), X, y, client=client, **kw).estimator
        remote_replicas = fit_incremental(_sgd(), X, y, client=client, replicas=2, **kw).estimator
    assert np.array_equal(local.coef_, remote.coef_) and np.array_equal(replicas.coef_, remote_replicas.coef_)


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True])
def test_bad_step_blocks_is_refused(bad):
    X, y = _data(200)
    with pytest.raises(ValueError, match="step_blocks must be an integer >= 1"):
        fit_incremental(_sgd(), X, y, step_blocks=bad, progress=False)
