"""``scale=`` of RFF, NRFF, Fastfood and Nystroem: per-feature scaling learned in fit (GCWS's
rules), exact and partition-invariant, kept in the spec, applied before the features (and the
landmarks) and before gamma="scale"."""

import json

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier

from _spec import tampered

from dask_kernels import NRFF, RFF, Fastfood, Nystroem, featurize, fit_incremental, from_spec, open_store
from dask_kernels.io import from_sparse
from dask_kernels.maps._scaling import apply_scale, scale_dense, scaled_block

RNG = np.random.default_rng(7)
#: columns in units four orders of magnitude apart, with offsets: unscaled, the last column decides the kernel
X = RNG.standard_normal((300, 5)) * [1.0, 10.0, 100.0, 1000.0, 0.01] + [0.0, 5.0, -300.0, 1e4, 2.0]
MAKERS = {"rff": RFF, "nrff": NRFF, "fastfood": Fastfood,
          "nystroem-rbf": lambda **kw: Nystroem(kernel="rbf", dtype="float64", **kw),
          "nystroem-gmm": lambda **kw: Nystroem(kernel="gmm", dtype="float64", **kw)}


def _make(method, **kw):
    if method == "nystroem-gmm":  # no bandwidth
        kw.pop("gamma", None)
    return MAKERS[method](n_components=32, seed=2, **kw)


def _minmax(A, ref):
    lo, hi = ref.min(axis=0), ref.max(axis=0)
    return (A - (0.5 * lo + 0.5 * hi)) * (1.0 / (0.5 * hi - 0.5 * lo))


@pytest.mark.parametrize("method", MAKERS)
@pytest.mark.parametrize("gamma", [0.5, "scale"])
def test_features_are_the_unscaled_maps_of_the_scaled_rows(method, gamma):
    fmap = _make(method, scale="minmax", gamma=gamma).fit(X)
    state = fmap.spec()["state"]["scale"]
    assert state == {"rule": "minmax", "min": X.min(axis=0).tolist(), "max": X.max(axis=0).tolist()}
    S = _minmax(X, X)
    assert np.abs(S).max() <= 1.0 + 1e-12
    plain = _make(method, gamma=gamma).fit(S)
    if gamma == "scale" and method != "nystroem-gmm":  # learned from the scaled rows, not the raw ones
        assert fmap.gamma_ == plain.gamma_ != _make(method, gamma="scale").fit(X).gamma_
    Xt = X[:50] * 1.5  # rows outside the training range go through the same scaling
    np.testing.assert_allclose(fmap.transform(Xt), plain.transform(_minmax(Xt, X)), rtol=0, atol=1e-5)


@pytest.mark.parametrize("method", MAKERS)
def test_scaling_makes_the_map_invariant_to_each_columns_units(method):
    units = np.array([1e-3, 1.0, 1e4, 7.0, 1e2])
    a = _make(method, scale="auto", gamma="scale").fit_transform(X)
    b = _make(method, scale="auto", gamma="scale").fit_transform(X * units + 3.0)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-4)  # the same scaled rows, up to their rounding
    c = _make(method, gamma="scale").fit_transform(X * units + 3.0)
    assert np.abs(a - c).max() > 0.1  # unscaled, the units change the features


@pytest.mark.parametrize("method", MAKERS)
@pytest.mark.parametrize("gamma", [1.0, "scale"])
def test_spec_is_the_same_bits_for_any_chunking_and_rebuilds_the_map(method, gamma):
    whole = _make(method, scale="auto", gamma=gamma).fit(X)
    for rows in (1, 7, 100, 299):
        assert _make(method, scale="auto", gamma=gamma).fit(da.from_array(X, chunks=(rows, -1))).spec_json() == \
            whole.spec_json()
    again = from_spec(json.loads(whole.spec_json()), arrays=whole.sidecar_arrays())
    assert again.transform(X).tobytes() == whole.transform(X).tobytes()


def test_no_scale_leaves_the_spec_as_it_was():
    for method in MAKERS:
        spec = _make(method, gamma=0.5).fit(X).spec()
        assert spec["params"] == {k: v for k, v in spec["params"].items() if k != "scale"}
        assert "scale" not in spec["params"] and "scale" not in spec["state"]
        scaled = _make(method, gamma=0.5, scale="auto").fit(X).spec()
        assert scaled["params"]["scale"] == "auto" and scaled["state"]["scale"]["rule"] == "minmax"


def test_sparse_input_is_scaled_without_centering_and_stays_sparse():
    S = sp.random(400, 30, density=0.1, random_state=3, format="csr") * np.array([10.0**(i % 5) for i in range(30)])
    S = sp.csr_matrix(S)
    rff = RFF(n_components=16, scale="auto", gamma="scale").fit(S)
    state = rff.spec()["state"]["scale"]
    assert state["rule"] == "maxabs"
    np.testing.assert_array_equal(state["max_abs"], abs(S).max(axis=0).toarray().ravel())
    block = rff.validate_block(S[:20])
    assert sp.issparse(block) and block.nnz == S[:20].nnz  # zeros stay zeros
    np.testing.assert_allclose(rff.transform(S), rff.transform(S.toarray()), rtol=0, atol=1e-5)
    for rows in (16, 100):
        parts = from_sparse(S, block_rows=rows)
        assert RFF(n_components=16, scale="auto", gamma="scale").fit(parts).spec_json() == rff.spec_json()


def test_mostly_zero_dense_rows_are_scaled_without_centering():
    D = np.where(RNG.random((200, 8)) < 0.8, 0.0, RNG.random((200, 8)) * 255.0)
    state = RFF(n_components=8, scale="auto").fit(D).spec()["state"]["scale"]
    assert state["rule"] == "maxabs"


def test_a_refit_learns_its_own_scaling():
    rff = RFF(n_components=8, scale="minmax", gamma="scale")
    rff.fit(X)
    rff.fit(X * 1000.0)
    assert rff.spec_json() == RFF(n_components=8, scale="minmax", gamma="scale").fit(X * 1000.0).spec_json()


def test_rows_far_outside_the_training_range_give_finite_features_huge_raw_values_are_refused():
    rff = RFF(n_components=8, scale="minmax", gamma=1.0).fit(X)
    far = X[:3].copy()
    far[0, 1] = 1e300  # scaled: about 1e299, past what the projection handles in float32
    Z = rff.transform(far)
    assert np.all(np.isfinite(Z)) and np.abs(Z).max() <= np.sqrt(2.0 / 8) + 1e-6
    np.testing.assert_array_equal(Z[1:], rff.transform(X[1:3]))
    far[2, 4] = 2.0**1023
    with pytest.raises(ValueError, match="row 2, column 4"):
        rff.transform(far)


def test_featurize_and_fit_incremental_learn_the_scale_from_all_rows(tmp_path):
    Y = X.copy()
    Y[:60] = 0.0  # the first block alone would give other ranges
    make = lambda: NRFF(n_components=8, gamma="scale", scale="auto", seed=2)  # noqa: E731
    expected = make().fit(Y).spec_json()
    store = featurize(da.from_array(Y, chunks=(60, -1)), make(), store=str(tmp_path / "f.zarr"), progress=False)
    assert open_store(store.path).feature_map.spec_json() == expected
    model = fit_incremental(SGDClassifier(random_state=0), Y, (Y[:, 0] > 0).astype(int), feature_map=make(),
                            block_rows=60, epochs=1, progress=False)
    assert model.feature_map.spec_json() == expected


def test_spec_scale_state_is_checked():
    spec = RFF(n_components=8, scale="auto").fit(X).spec()
    cases = [(("state", "scale"), KeyError, "missing 'scale'"),
             (("state", "scale", "min"), [0.0] * 4, r"has shape \(4,\)"),
             (("state", "scale", "max", 2), float("nan"), "entry 2"),
             (("state", "scale", "rule"), "zscore", "expected an object with 'rule'")]
    for path, value, message in cases:
        with pytest.raises(ValueError, match=message):
            from_spec(tampered(spec, path, value))
    minmax = RFF(n_components=8, scale="minmax").fit(X).spec()
    maxabs = RFF(n_components=8, scale="maxabs").fit(X).spec()
    with pytest.raises(ValueError, match="rule 'maxabs' but spec"):
        from_spec(tampered(minmax, ("state", "scale"), maxabs["state"]["scale"]))
    with pytest.raises(ValueError, match="only the key 'cosine' is known"):  # no scale parameter, a scale state
        from_spec(tampered(RFF(n_components=8).fit(X).spec(), ("state", "scale"), maxabs["state"]["scale"]))


def test_wide_input_with_an_explicit_rule_is_refused_before_anything_is_allocated():
    wide = sp.csr_matrix((1, 2**20 + 1))
    with pytest.raises(ValueError, match=r"n_features_in=1,048,577 with scale='maxabs'"):
        RFF(n_components=1, scale="maxabs", density=0.001).fit(wide)


def test_minmax_on_sparse_input_is_refused_as_scikit_learn_refuses_it():
    S = sp.random(50, 6, density=0.2, random_state=0, format="csr")
    for fit_input in (S, from_sparse(S, block_rows=20)):
        for make in (RFF, Nystroem):
            with pytest.raises(ValueError, match="scale='minmax' shifts every column.*use scale='maxabs'"):
                make(n_components=4, scale="minmax").fit(fit_input)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dense_rows_are_scaled_in_one_pass_to_the_values_of_apply_scale(dtype):
    shift, factor = RNG.standard_normal(5), RNG.random(5) + 0.5
    for A in (X, X.astype(np.float32)):
        for s in (shift, None):
            expected = np.clip(apply_scale(A, s, factor), -1e3, 1e3).astype(dtype)
            assert scale_dense(A, s, factor, 1e3, np.dtype(dtype)).tobytes() == expected.tobytes()
    rff = RFF(n_components=8, scale="minmax", dtype=dtype).fit(X)
    assert rff.validate_block(X).dtype == np.dtype(dtype)  # the precision the features compute in
    # on threads over row blocks (X has 300 rows: three blocks of 128 or fewer): the same bytes
    threaded = scaled_block(X, (shift, factor), 1e3, np.dtype(dtype), n_jobs=2)
    assert threaded.tobytes() == scale_dense(X, shift, factor, 1e3, np.dtype(dtype)).tobytes()


def test_nystroem_landmarks_are_scaled_rows_and_the_minmax_kernel_keeps_its_signs():
    ny = Nystroem(n_components=16, kernel="gmm", scale="minmax", dtype="float64").fit(X)
    rows = ny.landmark_rows_
    np.testing.assert_array_equal(ny.landmarks_, apply_scale(X[rows], *_shift_factor(X)))
    P = np.abs(X)
    auto = Nystroem(n_components=16, kernel="minmax", scale="auto").fit(P)
    assert auto.scale_["rule"] == "maxabs"  # "minmax" would make negative entries, which the kernel refuses
    S = P * (1.0 / np.abs(P).max(axis=0))  # apply_scale's arithmetic
    np.testing.assert_array_equal(auto.transform(P), Nystroem(n_components=16, kernel="minmax").fit(S).transform(S))
    with pytest.raises(ValueError, match="kernel='minmax' needs nonnegative rows and scale='minmax'"):
        Nystroem(kernel="minmax", scale="minmax").fit(P)


def test_nystroem_spec_scale_state_is_checked():
    ny = Nystroem(n_components=8, scale="auto").fit(X)
    spec, arrays = ny.spec(), ny.sidecar_arrays()
    with pytest.raises(ValueError, match="missing 'scale'"):
        from_spec(tampered(spec, ("state", "scale"), KeyError), arrays=arrays)
    with pytest.raises(ValueError, match=r"has shape \(4,\)"):
        from_spec(tampered(spec, ("state", "scale", "min"), [0.0] * 4), arrays=arrays)
    plain = Nystroem(n_components=8).fit(X)
    with pytest.raises(ValueError, match="present but spec\\['params'\\] has no scale"):
        from_spec(tampered(plain.spec(), ("state", "scale"), spec["state"]["scale"]), arrays=plain.sidecar_arrays())


def _shift_factor(A):
    lo, hi = A.min(axis=0), A.max(axis=0)
    return 0.5 * lo + 0.5 * hi, 1.0 / (0.5 * hi - 0.5 * lo)
