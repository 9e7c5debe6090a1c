"""The learner's calls (learn/learner.py, learn/_gather.py): one-vs-rest on threads gives bitwise
the coefficients of one thread, the finite scan is skipped only for features a map computed,
and a step's rows are gathered exactly."""

import threading

import joblib
import numpy as np
import pytest
import sklearn
from sklearn.linear_model import SGDClassifier

from dask_kernels import NRFF, fit_incremental
from dask_kernels.learn import learner
from dask_kernels.learn._gather import gather_rows


class _Recording(SGDClassifier):
    """SGDClassifier that records the joblib threads and the finite setting of each call."""

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        backend, n_jobs = joblib.parallel.get_active_backend()
        calls.append((type(backend).__name__, n_jobs, sklearn.get_config()["assume_finite"]))
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)


calls: list = []


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] * X[:, 2] > 0)  # 4 classes
    return X, y


def _fit(est, n_jobs, **kw):
    X, y = _data()
    kw = dict(feature_map=NRFF(n_components=32, gamma=0.5, seed=0).fit(X), epochs=2, block_rows=500,
              validation_fraction=0.1, progress=False) | kw
    return fit_incremental(est, X, y, n_jobs=n_jobs, **kw)


def _sgd(cls=SGDClassifier):
    return cls(loss="log_loss", learning_rate="constant", eta0=0.1, random_state=0)


@pytest.fixture
def small_steps_threaded(monkeypatch):
    """Threads for the small steps of these tests too (the data stay small and fast)."""
    monkeypatch.setattr(learner, "MIN_THREADED_WORK", 0)


def test_one_vs_rest_threads_give_bitwise_the_coefficients_of_one_thread(small_steps_threaded):
    one = _fit(_sgd(), 1).estimator
    two = _fit(_sgd(), 2).estimator
    default = _fit(_sgd(), None).estimator  # the main thread: every usable CPU
    assert one.coef_.shape == (4, 32)
    for other in (two, default):
        assert np.array_equal(one.coef_, other.coef_) and np.array_equal(one.intercept_, other.intercept_)
        assert one.t_ == other.t_
    assert two.get_params()["n_jobs"] is None  # the estimator is not changed


def test_threads_and_finite_setting_reach_each_call_and_only_it(small_steps_threaded):
    calls.clear()
    _fit(_sgd(_Recording), 2)
    assert calls and all(c == ("PoolBackend", 2, True) for c in calls), calls[:3]
    # outside the call nothing is left set
    assert joblib.parallel.get_active_backend()[1] != 2 and not sklearn.get_config()["assume_finite"]


def test_small_steps_stay_on_one_thread():
    # 500 rows x 32 features x 4 classes: far less work than starting a pool of threads costs
    calls.clear()
    _fit(_sgd(_Recording), 2)
    assert calls and all(n_jobs != 2 for _, n_jobs, _ in calls)


def test_a_binary_problem_is_one_job_and_stays_on_one_thread(small_steps_threaded):
    X, y = _data()
    calls.clear()
    fit_incremental(_sgd(_Recording), X, y % 2, n_jobs=2, epochs=1, block_rows=500, validation_fraction=None,
                    progress=False)
    assert calls and all(n_jobs != 2 for _, n_jobs, _ in calls)


def test_never_nested_inside_another_thread_and_the_estimators_own_n_jobs_wins(small_steps_threaded):
    calls.clear()
    worker = threading.Thread(target=_fit, args=(_sgd(_Recording), None))
    worker.start()
    worker.join()
    assert calls and all(n_jobs in (None, 1) for _, n_jobs, _ in calls)  # one thread: no pool
    calls.clear()
    est = _sgd(_Recording).set_params(n_jobs=1)
    _fit(est, 2)  # Parallel(n_jobs=1) of the estimator itself decides: one thread
    assert est.get_params()["n_jobs"] == 1


def test_raw_rows_without_a_map_keep_the_finite_check():
    X, y = _data()
    calls.clear()
    fit_incremental(_sgd(_Recording), X, y, epochs=1, block_rows=500, validation_fraction=None, progress=False)
    assert calls and not any(finite for *_, finite in calls)
    X[1234, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit_incremental(_sgd(), X, y, epochs=1, block_rows=500, validation_fraction=None, progress=False)


@pytest.mark.parametrize("bad", [0, 1.5, "2", True])
def test_bad_n_jobs_is_refused(bad):
    with pytest.raises(ValueError, match="n_jobs must be None or a non-zero integer"):
        _fit(_sgd(), bad)


def test_gather_rows_is_concatenate_then_index_then_astype():
    rng = np.random.default_rng(1)
    parts = [rng.normal(size=(n, 7)).astype(np.float32) for n in (5, 1, 9)]
    starts = np.array([0, 5, 6, 15])
    rows = rng.permutation(15)[:11]
    want = np.concatenate(parts)[rows]
    got = gather_rows(parts, starts, rows, np.float64)
    assert got.dtype == np.float64 and got.flags.c_contiguous
    assert np.array_equal(got, want.astype(np.float64))
    assert np.array_equal(gather_rows(parts, starts, rows), want)


class _BlasThreads(SGDClassifier):
    """SGDClassifier that records the BLAS threads its held-out predictions run on."""

    def predict(self, X):
        from threadpoolctl import threadpool_info

        blas.append(max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
        return super().predict(X)


blas: list = []


def test_the_held_out_set_is_scored_with_blas_on_one_thread():
    from threadpoolctl import threadpool_limits

    blas.clear()
    with threadpool_limits(limits=2, user_api="blas"):  # as on a machine of 2 cores or more
        _fit(_BlasThreads(loss="log_loss", learning_rate="constant", eta0=0.1, random_state=0), 1)
        assert blas and set(blas) == {1}  # every held-out part, every epoch
        X, y = _data()
        _BlasThreads(random_state=0).fit(X, y).predict(X)
        assert blas[-1] == 2  # outside scoring, BLAS keeps its threads


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_a_step_of_codes_is_gathered_as_stored(dtype):
    from dask_kernels.learn.shuffle import _Window

    rng = np.random.default_rng(2)
    parts = [rng.integers(0, np.iinfo(dtype).max, size=(n, 5), dtype=dtype) for n in (4, 7, 3)]
    rows = rng.permutation(14)[:9]
    got = _Window(parts).take(rows)
    assert got.dtype == dtype and got.flags.c_contiguous
    assert np.array_equal(got, np.concatenate(parts)[rows])


def _fail(i):
    if i == 2:
        raise ValueError(f"task {i} failed")
    return i


def test_pool_backend_reuses_its_threads_and_raises_a_tasks_error():
    # joblib's threading backend starts new threads for every Parallel call (and polls them
    # every 10 ms); the learner's backend hands the tasks to one kept pool
    idents = set()
    with joblib.parallel_config(backend=learner.PoolBackend(2)):
        for _ in range(5):
            idents.update(joblib.Parallel()(joblib.delayed(threading.get_ident)() for _ in range(8)))
        with pytest.raises(ValueError, match="task 2 failed"):
            joblib.Parallel()(joblib.delayed(_fail)(i) for i in range(4))
        assert joblib.Parallel(n_jobs=1)(joblib.delayed(threading.get_ident)() for _ in range(3)) == \
            [threading.get_ident()] * 3  # n_jobs=1 stays in the caller
    assert threading.get_ident() not in idents and 1 <= len(idents) <= 2
