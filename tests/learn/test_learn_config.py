"""fit_incremental's options as a TrainConfig, and the progress lines of its loop."""

import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier

from dask_kernels import fit_incremental
from dask_kernels.learn import incremental
from dask_kernels.learn.config import TrainConfig


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


def _sgd():
    return SGDClassifier(loss="log_loss", learning_rate="constant", eta0=0.05, random_state=0)


def test_a_config_object_and_keywords_give_the_same_run():
    X, y = _data()
    cfg = TrainConfig(epochs=3, block_rows=200, validation_fraction=0.2, seed=4, progress=False)
    a = fit_incremental(_sgd(), X, y, config=cfg)
    b = fit_incremental(_sgd(), X, y, epochs=3, block_rows=200, validation_fraction=0.2, seed=4, progress=False)
    c = fit_incremental(_sgd(), X, y, config=cfg, seed=5)  # keywords replace the config's fields
    assert a.estimator.coef_.tobytes() == b.estimator.coef_.tobytes()
    assert a.estimator.coef_.tobytes() != c.estimator.coef_.tobytes()
    assert cfg.seed == 4  # (the config is not changed)


def test_unknown_options_and_bad_values_are_refused_before_any_work():
    X, y = _data()
    with pytest.raises(TypeError, match="unexpected keyword argument 'epoch'.*epochs"):
        fit_incremental(_sgd(), X, y, epoch=3)
    with pytest.raises(TypeError, match="config must be a TrainConfig"):
        fit_incremental(_sgd(), X, y, config={"epochs": 3})
    for bad, match in [({"step_blocks": 0}, "step_blocks"), ({"shuffle_window": "all"}, "shuffle_window"),
                       ({"metric": "f1"}, "unknown metric"), ({"epochs": 0}, "epochs"),
                       ({"replicas": 1.5}, "replicas"), ({"validation_fraction": 1.5}, r"\[0, 1\)")]:
        with pytest.raises(ValueError, match=match):
            TrainConfig(**bad)


def test_progress_lines_within_an_epoch_and_one_per_epoch(monkeypatch, capsys):
    X, y = _data()
    monkeypatch.setattr(incremental, "PROGRESS_SECONDS", 0.0)  # a line after every step
    fit_incremental(_sgd(), X, y, epochs=2, block_rows=200, validation_fraction=None)
    lines = capsys.readouterr().err.splitlines()
    steps = [line for line in lines if " step " in line]
    assert len(steps) == 12 and steps[0].startswith("epoch 1  step 1/6  200 rows")
    assert steps[-1].startswith("epoch 2  step 6/6  1200 rows")
    assert [line.split()[0] for line in lines if " step " not in line] == ["epoch", "1", "2"]  # header, rows
    monkeypatch.setattr(incremental, "PROGRESS_SECONDS", 3600.0)
    fit_incremental(_sgd(), X, y, epochs=2, block_rows=200, validation_fraction=None)
    assert len(capsys.readouterr().err.splitlines()) == 3  # the table's header and the epochs' rows only


def test_a_client_that_is_not_a_running_client_is_refused_before_any_work(local_cluster):
    from distributed import Client

    X, y = _data()
    for bad in (local_cluster, True):  # an address, a flag
        with pytest.raises(TypeError, match="client must be a distributed Client"):
            fit_incremental(_sgd(), X, y, client=bad, progress=False)
    client = Client(local_cluster)
    client.close()
    with pytest.raises(ValueError, match="client is closed: pass a running Client"):
        fit_incremental(_sgd(), X, y, client=client, progress=False)


def test_validation_data_as_a_dataframe_is_read_by_column_name_and_may_be_a_dask_one():
    import dask.dataframe as dd
    import pandas as pd

    X, y = _data()
    cols = [f"c{j}" for j in range(X.shape[1])]
    train, held = pd.DataFrame(X[:900], columns=cols), pd.DataFrame(X[900:], columns=cols)

    def history(validation_data):
        kw = dict(epochs=2, block_rows=300, progress=False)
        got = fit_incremental(_sgd(), train, y[:900], validation_data=validation_data, **kw).history
        return [(r["accuracy"], r["log_loss"], r["action"]) for r in got]

    want = history((held.to_numpy(), y[900:]))
    # columns in another order were read by position: another (wrong) held-out score, no error
    assert history((held[cols[::-1]], y[900:])) == want
    # a dask DataFrame failed: "int() argument must be ... not 'Scalar'"
    assert history((dd.from_pandas(held, npartitions=2), dd.from_pandas(pd.Series(y[900:]), npartitions=2))) == want
    with pytest.raises(ValueError, match="validation_data's rows have no column 'c0'"):
        history((held.drop(columns="c0"), y[900:]))


def test_classes_given_in_any_order_train_and_score_as_sorted():
    from dask_kernels import GCWS, SoftmaxSGD

    X, y = _data()
    gcws = GCWS(n_components=16, bits=4, seed=0).fit(X)
    kw = dict(feature_map=gcws, epochs=1, block_rows=300, progress=False)
    for make in (lambda: SoftmaxSGD(code_bits=4), _sgd):
        want = fit_incremental(make(), X, y, classes=[0, 1], **kw)
        # SoftmaxSGD: "held-out label 0 is not one of the training classes [1, 0]"; SGDClassifier: the
        # held-out log loss looked labels up in the unsorted list
        got = fit_incremental(make(), X, y, classes=[1, 0], **kw)
        assert list(got.estimator.classes_) == [0, 1]
        assert [r["log_loss"] for r in got.history] == [r["log_loss"] for r in want.history]
