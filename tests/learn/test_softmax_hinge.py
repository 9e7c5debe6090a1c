"""SoftmaxSGD(loss="hinge"): one-vs-rest linear SVMs trained in one pass per row."""

import json
import re

import numpy as np
import pytest
from sklearn.linear_model import SGDRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from dask_kernels import GCWS, KernelModel, SoftmaxSGD, expand_codes, load_model
from dask_kernels.cli import main


@parametrize_with_checks([SoftmaxSGD(loss="hinge", random_state=0)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _reference_sgd(X, y, n_classes, eta, alpha, epochs, loss="hinge"):
    """Plain NumPy SGD, rows in order, on sum_c max(0, 1 - s_c (W x + c)_c) + alpha/2 ||W||^2
    (s_c = +1 for the row's class, else -1) or on the softmax's log loss; also the summed loss of
    the last epoch, each row's before its step."""
    W, c = np.zeros((n_classes, X.shape[1])), np.zeros(n_classes)
    for _ in range(epochs):
        total = 0.0
        for x, yi in zip(X, y):
            z = W @ x + c
            if loss == "hinge":
                s = np.where(np.arange(n_classes) == yi, 1.0, -1.0)
                total += np.maximum(0.0, 1.0 - s * z).sum()
                g = np.where(1.0 - s * z > 0, -s, 0.0)  # d loss / d scores
            else:
                lse = np.log(np.exp(z - z.max()).sum()) + z.max()
                total += lse - z[yi]
                g = np.exp(z - lse) - (np.arange(n_classes) == yi)
            W = (1.0 - eta * alpha) * W - eta * np.outer(g, x)
            c = c - eta * g
    return W, c, total


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_steps_are_those_of_plain_sgd_on_the_hinge_loss(n_classes):
    rng = np.random.default_rng(n_classes)
    X = rng.standard_normal((60, 4))
    y = rng.integers(0, n_classes, 60)
    kw = dict(eta=0.05, alpha=0.01, epochs=3)
    clf = SoftmaxSGD(loss="hinge", alpha=kw["alpha"], eta0=kw["eta"], max_iter=kw["epochs"], shuffle=False).fit(X, y)
    W, c, _ = _reference_sgd(X, y, n_classes, **kw)
    np.testing.assert_allclose(clf.coef_, W, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(clf.intercept_, c, rtol=1e-10, atol=1e-12)
    # the log loss takes other steps from the same rows: the flag reaches the kernel
    other = SoftmaxSGD(alpha=kw["alpha"], eta0=kw["eta"], max_iter=kw["epochs"], shuffle=False).fit(X, y)
    assert not np.allclose(other.coef_, W)


@pytest.mark.parametrize("loss", ["hinge", "log_loss"])
def test_a_pass_returns_its_summed_loss_before_each_step(loss):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((50, 3))
    y = rng.integers(0, 3, 50)
    clf = SoftmaxSGD(loss=loss, alpha=0.01, eta0=0.05, shuffle=False).partial_fit(X[:1], y[:1], classes=[0, 1, 2])
    clf._init_weights(3)  # start again from zero: the pass below is the reference's first epoch
    clf.t_ = 1.0
    got = clf._run(1, np.ascontiguousarray(X), y.astype(np.int64), np.arange(50, dtype=np.int64))
    W, c, total = _reference_sgd(X, y, 3, eta=0.05, alpha=0.01, epochs=1, loss=loss)
    assert got == pytest.approx(total, rel=1e-12)
    np.testing.assert_allclose(clf.coef_, W, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("params", [{}, {"rank": 3}, {"average": True}])
def test_codes_train_bitwise_as_their_one_hot_csr_and_dense_rows(params):
    rng = np.random.default_rng(0)
    X = rng.random((200, 5))
    y = np.argmax(X[:, :3] * [1.0, 1.2, 0.9], axis=1)
    codes = GCWS(n_components=16, bits=3, seed=0).fit(X).transform_block(X)
    common = dict(loss="hinge", alpha=1e-3, eta0=0.05, max_iter=3, random_state=0, **params)
    on_codes = SoftmaxSGD(code_bits=3, **common).fit(codes, y)
    csr = expand_codes(codes, 3)
    for other in (SoftmaxSGD(**common).fit(csr, y), SoftmaxSGD(**common).fit(csr.toarray(), y)):
        for name in ("weights_", "output_weights_", "intercept_"):
            np.testing.assert_array_equal(getattr(on_codes, name), getattr(other, name))


def test_separable_rows_are_all_learned_and_scores_are_margins():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 4, 300)
    X = 4.0 * np.eye(6)[y] + 0.3 * rng.standard_normal((300, 6))  # each class apart from the others by a plane
    clf = SoftmaxSGD(loss="hinge", alpha=1e-5, eta0=0.1, max_iter=30, random_state=0).fit(X, y)
    assert clf.score(X, y) == 1.0
    z = clf.decision_function(X)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(z, axis=1)])


def test_no_probabilities_and_the_error_says_which_loss_gives_them():
    clf = SoftmaxSGD(loss="hinge").fit(np.eye(4), [0, 1, 2, 3])
    assert not hasattr(clf, "predict_proba") and not hasattr(clf, "predict_log_proba")
    with pytest.raises(AttributeError, match=r"SoftmaxSGD\(loss='hinge'\) has no probabilities: .*loss='log_loss'"):
        clf.predict_proba(np.eye(4))
    assert hasattr(SoftmaxSGD(), "predict_proba")  # log loss, the class's default
    with pytest.raises(ValueError, match="'loss' parameter .* must be a str among"):
        SoftmaxSGD(loss="squared").fit(np.eye(4), [0, 1, 2, 3])


def test_a_kernel_model_has_the_methods_its_estimator_has():
    from sklearn.linear_model import SGDClassifier
    from sklearn.naive_bayes import BernoulliNB

    rng = np.random.default_rng(5)
    X = rng.random((80, 3))
    y = (X[:, 0] > 0.5).astype(int)
    gcws = GCWS(n_components=8, bits=2, seed=0).fit(X)
    F = gcws.expand(gcws.transform(X))
    hinge = KernelModel(gcws, SoftmaxSGD(loss="hinge", code_bits=2).fit(gcws.transform_block(X), y))
    assert not hasattr(hinge, "predict_proba") and hinge.decision_function(X).shape == (80,)
    with pytest.raises(AttributeError, match="has no probabilities"):  # the estimator's own reason
        hinge.predict_proba(X)
    sgd = KernelModel(gcws, SGDClassifier(loss="hinge").fit(F, y))
    assert not hasattr(sgd, "predict_proba") and hasattr(sgd, "decision_function")
    nb = KernelModel(gcws, BernoulliNB().fit(F, y))
    assert hasattr(nb, "predict_proba") and not hasattr(nb, "decision_function")
    assert nb.predict_proba(X).shape == (80, 2)


def test_a_saved_model_keeps_its_loss_and_an_older_one_loads_with_log_loss(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.random((120, 4))
    y = (X[:, 0] > 0.5).astype(int)
    gcws = GCWS(n_components=8, bits=2, seed=0).fit(X)
    codes = gcws.transform_block(X)
    for loss in ("hinge", "log_loss"):
        model = KernelModel(gcws, SoftmaxSGD(loss=loss, code_bits=2, eta0=0.1, random_state=0).fit(codes, y))
        path = model.save(tmp_path / f"{loss}.dk")
        back = load_model(path)
        assert back.estimator.loss == loss
        np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))
    meta_path = tmp_path / "log_loss.dk" / "model.json"  # a model saved before the loss existed
    meta = json.loads(meta_path.read_text())
    del meta["estimator"]["params"]["loss"]
    meta_path.write_text(json.dumps(meta))
    old = load_model(tmp_path / "log_loss.dk")
    assert old.estimator.loss == "log_loss"
    np.testing.assert_array_equal(old.predict_proba(X), model.predict_proba(X))


def test_predict_proba_of_a_hinge_model_names_the_option_that_gives_probabilities(tmp_path, capsys):
    rng = np.random.default_rng(3)
    X = rng.random((200, 4))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", (X[:, 0] > 0.5).astype(np.int64))
    assert main(["train", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--n-components", "16",
                 "--loss", "hinge", "--epochs", "1", "--no-progress", "-o", str(tmp_path / "m.dk")]) == 0
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "m.dk"), str(tmp_path / "X.npy"), "-o", str(tmp_path / "p.npy"),
                 "--proba"]) == 1
    assert ("--proba: the model's SoftmaxSGD (loss='hinge') has no predict_proba (train with --loss log_loss)"
            in capsys.readouterr().err)
    assert not (tmp_path / "p.npy").exists()


@pytest.mark.parametrize("make, metric, choices", [
    (lambda: SoftmaxSGD(loss="hinge", eta0=0.01), "erp",
     "(a classifier, without predict_proba) are 'error', 'accuracy'"),
    (lambda: SoftmaxSGD(eta0=0.01), "r2", "(a classifier) are 'erp', 'log_loss', 'accuracy', 'error'"),
    (lambda: SGDRegressor(), "accuracy", "(a regressor) are 'mse', 'r2'"),
])
def test_a_metric_the_estimator_does_not_give_is_refused_before_training(make, metric, choices):
    # it was a KeyError after the first epoch had trained
    from dask_kernels import fit_incremental

    rng = np.random.default_rng(6)
    X = rng.random((600, 4))
    y = (X[:, 0] > 0.5).astype(int)
    est = make()
    with pytest.raises(ValueError, match=f"metric='{metric}': the held-out scores of {type(est).__name__} "
                                         + re.escape(choices) + ": choose one of them"):
        fit_incremental(est, X, y, feature_map=GCWS(n_components=8).fit(X), metric=metric,
                        validation_fraction=0.2, epochs=2, progress=False)
    assert not hasattr(est, "coef_") and not hasattr(est, "classes_")
