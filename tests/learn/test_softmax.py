"""SoftmaxSGD as an estimator: gradients, input forms, bottleneck, bad input."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.estimator_checks import parametrize_with_checks

from dask_kernels import GCWS, SoftmaxSGD, expand_codes


@parametrize_with_checks([SoftmaxSGD(random_state=0), SoftmaxSGD(average=True, random_state=0)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _objective(clf, X, y, Y_onehot):
    """Mean log loss + alpha/2 ||params||^2 (the bias unregularized) at clf's current weights."""
    z = clf._scores(X)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    reg = np.sum(clf.weights_ ** 2) + np.sum(clf.output_weights_ ** 2)
    return -np.sum(Y_onehot * logp) / X.shape[0] + clf.alpha / 2 * reg


def _one_step_gradient(clf, X, y):
    """(gradient implied by one SGD step on the single row X, y) for every parameter array."""
    before = [a.copy() for a in (clf.weights_, clf.output_weights_, clf.intercept_)]
    clf.partial_fit(X, y)
    return [(b - a) / clf.eta0 for b, a in zip(before, (clf.weights_, clf.output_weights_, clf.intercept_))], before


@pytest.mark.parametrize("rank", [None, 2])
@pytest.mark.parametrize("form", ["dense", "codes"])
def test_sgd_step_is_the_gradient_finite_differences(rank, form):
    # one SGD step with constant eta on one row moves every parameter by -eta * gradient of
    # log loss + alpha/2 ||.||^2: compare with central finite differences of that objective
    rng = np.random.default_rng(1)
    if form == "codes":
        X = rng.integers(0, 4, size=(1, 3)).astype(np.uint8)
        clf = SoftmaxSGD(code_bits=2, rank=rank, alpha=0.1, eta0=1e-3, shuffle=False, random_state=0)
    else:
        X = rng.normal(size=(1, 5))
        clf = SoftmaxSGD(rank=rank, alpha=0.1, eta0=1e-3, shuffle=False, random_state=0)
    classes = np.arange(3)
    clf.partial_fit(X, [0], classes=classes)  # initialize, then randomize the parameters
    for a in (clf.weights_, clf.output_weights_, clf.intercept_):
        a[...] = rng.normal(size=a.shape)
    y = np.array([2])
    Y = np.eye(3)[y]
    grads, before = _one_step_gradient(clf, X, y)
    for p, a in zip((clf.weights_, clf.output_weights_, clf.intercept_), before):
        p[...] = a  # back to the point where the step was taken
    eps = 1e-6
    for arr, grad in zip((clf.weights_, clf.output_weights_, clf.intercept_), grads):
        fd = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            up = _objective(clf, X, y, Y)
            arr[idx] = old - eps
            down = _objective(clf, X, y, Y)
            arr[idx] = old
            fd[idx] = (up - down) / (2 * eps)
        if arr is clf.intercept_:
            fd -= 0.0  # the bias is not regularized: the objective's reg term has no bias
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


def _gcws_codes(n=400, k=32, bits=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 5))
    y = np.argmax(X[:, :3] * [1.0, 1.2, 0.9], axis=1)
    return GCWS(n_components=k, bits=bits, seed=seed).fit(X).transform_block(X), y


@pytest.mark.parametrize("params", [{}, {"rank": 3}, {"average": True},
                                    {"average": 100, "learning_rate": "invscaling"}])
def test_codes_equal_one_hot_csr_and_dense(params):
    codes, y = _gcws_codes()
    common = dict(alpha=1e-3, eta0=0.05, max_iter=3, random_state=0, **params)
    on_codes = SoftmaxSGD(code_bits=4, **common).fit(codes, y)
    csr = expand_codes(codes, 4)
    on_csr = SoftmaxSGD(**common).fit(csr, y)
    on_dense = SoftmaxSGD(**common).fit(csr.toarray(), y)
    for other in (on_csr, on_dense):
        np.testing.assert_allclose(on_codes.coef_, other.coef_, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(on_codes.intercept_, other.intercept_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(on_codes.predict_proba(codes), on_csr.predict_proba(csr), rtol=1e-10, atol=1e-12)
    assert on_codes.n_features_in_ == 32 and on_csr.n_features_in_ == 32 * 16


@pytest.mark.parametrize("n_classes", [2, 3, 4, 7])
@pytest.mark.parametrize("params", [{}, {"rank": 3}, {"average": True}])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_rows_train_bitwise_as_csr_holding_every_entry(n_classes, params, dtype):
    # dense rows take their own loop (read in place, every column active); it must do the very
    # sums of the CSR loop in the same order, so a model is the same bits in either form
    rng = np.random.default_rng(n_classes)
    X = rng.standard_normal((300, 9)).astype(dtype)
    y = rng.integers(0, n_classes, 300)
    n, d = X.shape
    csr = sp.csr_matrix((X.ravel(), np.tile(np.arange(d), n), np.arange(0, n * d + 1, d)), shape=X.shape)
    assert csr.nnz == X.size  # every entry stored: the CSR loop visits every column too
    common = dict(alpha=1e-3, eta0=0.05, max_iter=3, random_state=0, **params)
    on_dense, on_csr = SoftmaxSGD(**common).fit(X, y), SoftmaxSGD(**common).fit(csr, y)
    for name in ("weights_", "output_weights_", "intercept_"):
        np.testing.assert_array_equal(getattr(on_dense, name), getattr(on_csr, name))


@pytest.mark.parametrize("n_classes", [2, 3, 4, 7])
@pytest.mark.parametrize("params", [{}, {"rank": 3}, {"average": True}])
def test_codes_train_bitwise_as_their_one_hot_csr(n_classes, params):
    # codes are read in place by the loop dense rows take: the same sums as over their one-hot CSR
    codes, _ = _gcws_codes()
    y = np.random.default_rng(n_classes).integers(0, n_classes, codes.shape[0])
    common = dict(alpha=1e-3, eta0=0.05, max_iter=3, random_state=0, **params)
    on_codes = SoftmaxSGD(code_bits=4, **common).fit(codes, y)
    on_csr = SoftmaxSGD(**common).fit(expand_codes(codes, 4), y)
    for name in ("weights_", "output_weights_", "intercept_"):
        np.testing.assert_array_equal(getattr(on_codes, name), getattr(on_csr, name))


def test_codes_equal_one_hot_csr_through_rescales():
    # eta0 * alpha = 0.5 halves the L2 scale at every step, so the stored weights are rescaled
    # every 30 rows: the code path, which gathers the next row while updating this one, must
    # gather it again from the rescaled weights, as the CSR path (gather after update) does
    codes, y = _gcws_codes()
    kw = dict(alpha=5.0, eta0=0.1, max_iter=2, random_state=0)
    on_codes = SoftmaxSGD(code_bits=4, **kw).fit(codes, y)
    on_csr = SoftmaxSGD(**kw).fit(expand_codes(codes, 4), y)
    np.testing.assert_allclose(on_codes.coef_, on_csr.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(on_codes.intercept_, on_csr.intercept_, rtol=1e-10, atol=1e-12)


def test_separable_toy_learned_to_100_percent():
    rng = np.random.default_rng(0)
    centers = np.array([[4.0, 0.0], [-4.0, 0.0], [0.0, 4.0], [0.0, -4.0]])
    y = rng.integers(0, 4, 400)
    X = centers[y] + rng.uniform(-1, 1, (400, 2))
    for rank in (None, 2):
        clf = SoftmaxSGD(rank=rank, alpha=0.0, eta0=0.05, max_iter=20, random_state=0).fit(X, y)
        assert clf.score(X, y) == 1.0
    codes, yc = _gcws_codes(n=300, k=64)
    # codes of distinct rows: a memorizable (separable) problem for the one-hot features
    clf = SoftmaxSGD(code_bits=4, alpha=0.0, eta0=0.05, max_iter=30, random_state=0).fit(codes, yc)
    assert clf.score(codes, yc) == 1.0


def _loss(clf, X, y):
    return -np.mean(clf.predict_log_proba(X)[np.arange(len(y)), np.searchsorted(clf.classes_, y)])


def test_full_rank_bottleneck_matches_the_full_model():
    # r >= min(C, features): W = U V can represent every W; SGD on the (non-convex) factored
    # objective reaches the convex full model's training loss (both run to convergence)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(300, 3)), axis=1)
    kw = dict(alpha=1e-3, eta0=0.02, max_iter=200, learning_rate="invscaling", power_t=0.25, random_state=0)
    full = _loss(SoftmaxSGD(**kw).fit(X, y), X, y)
    low = _loss(SoftmaxSGD(rank=3, **kw).fit(X, y), X, y)
    assert abs(low - full) < 0.01 * full
    # and a rank below the classes' cannot: it is a real constraint
    rank1 = _loss(SoftmaxSGD(rank=1, **kw).fit(X, y), X, y)
    assert rank1 > full * 1.05


def test_bottleneck_parameters_and_coef():
    codes, y = _gcws_codes(k=16)
    clf = SoftmaxSGD(code_bits=4, rank=2, random_state=0).fit(codes, y)
    assert clf.weights_.shape == (16 * 16, 2) and clf.output_weights_.shape == (3, 2)
    assert clf.n_parameters_ == 16 * 16 * 2 + 3 * 2 + 3
    np.testing.assert_allclose(clf.coef_, clf.output_weights_ @ clf.weights_.T)
    np.testing.assert_allclose(clf.decision_function(codes), expand_codes(codes, 4) @ clf.coef_.T + clf.intercept_)


def test_partial_fit_deterministic_and_equal_to_fit_for_one_epoch():
    codes, y = _gcws_codes()
    a = SoftmaxSGD(code_bits=4, random_state=3, max_iter=1).fit(codes, y)
    b = SoftmaxSGD(code_bits=4, random_state=3).partial_fit(codes, y, classes=[0, 1, 2])
    np.testing.assert_array_equal(a.weights_, b.weights_)
    c = SoftmaxSGD(code_bits=4, random_state=4).partial_fit(codes, y, classes=[0, 1, 2])
    assert not np.array_equal(a.weights_, c.weights_)  # the permutation depends on the seed


def test_bad_codes_are_refused_naming_where():
    codes, y = _gcws_codes()
    clf = SoftmaxSGD(code_bits=4)
    bad = codes.copy()
    bad[7, 5] = 16
    with pytest.raises(ValueError, match=r"code_bits=4\): X\[7, 5\] = 16 is not a 4-bit code"):
        clf.fit(bad, y)
    clf.fit(codes, y)
    with pytest.raises(ValueError, match=r"X has 31 hashes \(columns\), but SoftmaxSGD is expecting 32"):
        clf.predict(codes[:, :31])
    with pytest.raises(ValueError, match="got a sparse matrix"):
        clf.predict(expand_codes(codes, 4))
    with pytest.raises(ValueError, match="must be unsigned integers, got dtype float64"):
        clf.predict(codes.astype(float))
    with pytest.raises(ValueError, match=r"labels not in classes_ \[0, 1, 2\]: \[7\]"):
        clf.partial_fit(codes[:2], [0, 7])
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        SoftmaxSGD(code_bits=4).partial_fit(codes, y)
    with pytest.raises(ValueError, match="eta0 \\* alpha = 2 must be < 1"):
        SoftmaxSGD(alpha=2.0, eta0=1.0).fit(np.eye(3), [0, 1, 1])


def test_sparse_and_dense_float32_inputs():
    rng = np.random.default_rng(0)
    X = rng.random((200, 10)).astype(np.float32)
    y = (X[:, 0] > X[:, 1]).astype(int)
    d = SoftmaxSGD(random_state=0, eta0=0.1, max_iter=10).fit(X, y)
    s = SoftmaxSGD(random_state=0, eta0=0.1, max_iter=10).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(d.coef_, s.coef_, rtol=1e-10)
    assert d.decision_function(X).shape == (200,) and d.score(X, y) > 0.9


def test_a_regression_target_is_refused_on_the_first_partial_fit():
    # fit refused it; partial_fit (and fit_incremental) trained one class per distinct value
    from dask_kernels import GCWS, fit_incremental

    X = np.random.default_rng(0).random((200, 5))
    y = X[:, 0] * 3.7
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        SoftmaxSGD().partial_fit(X, y, classes=np.unique(y))
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        fit_incremental(SoftmaxSGD(code_bits=8), X, y, feature_map=GCWS(n_components=32), epochs=1, progress=False)
    est = SoftmaxSGD().partial_fit(X, (y > 1.8).astype(float), classes=[0.0, 1.0])  # integral floats are classes
    assert est.classes_.tolist() == [0.0, 1.0]
