"""gamma="scale" for RFF, NRFF, Fastfood and Nystroem: scikit-learn's rule, exact and
partition-invariant, recorded in the spec; numeric gammas keep their old specs and bytes."""

import hashlib
import json

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier

from _spec import tampered

from dask_kernels import NRFF, RFF, Fastfood, Nystroem, featurize, fit_incremental, from_spec, open_store
from dask_kernels.io import from_sparse

RNG = np.random.default_rng(3)
#: a large offset and magnitudes far apart: a float variance summed per block depends on the blocks
X = RNG.standard_normal((240, 6)) * [1.0, 1e6, 1e-3, 5.0, 1.0, 30.0] + [1e7, 0.0, 2.0, -1e5, 0.5, 0.0]


def _maps():
    return [RFF(n_components=16, gamma="scale", seed=1), NRFF(n_components=16, gamma="scale", seed=1),
            Fastfood(n_components=16, gamma="scale", seed=1),
            Nystroem(n_components=8, kernel="rbf", gamma="scale", dtype="float64"),
            Nystroem(n_components=8, kernel="cosine_rbf", gamma="scale", dtype="float64")]


def _unit(A):
    return A / np.linalg.norm(A, axis=1, keepdims=True)


@pytest.mark.parametrize("i", range(5))
def test_gamma_is_scikit_learns_rule(i):
    fmap = _maps()[i].fit(X)
    unit = isinstance(fmap, NRFF) or getattr(fmap, "kernel", None) == "cosine_rbf"
    A = _unit(X) if unit else X
    expected = (2.0 if unit else 1.0) / (X.shape[1] * A.var())
    assert fmap.gamma_ == pytest.approx(expected, rel=1e-9)
    assert fmap.spec()["params"]["gamma"] == "scale" and fmap.spec()["state"]["gamma"] == fmap.gamma_


@pytest.mark.parametrize("i", range(5))
def test_spec_is_the_same_bits_for_any_chunking(i):
    whole = _maps()[i].fit(X).spec_json()
    for rows in (1, 7, 100, 239):
        assert _maps()[i].fit(da.from_array(X, chunks=(rows, -1))).spec_json() == whole
    # the float variance of the same blocks is not: the exact sums are what makes this hold
    floats = {float(sum(((b - b.mean()) ** 2).sum() + b.size * (b.mean() - X.mean()) ** 2
                        for b in np.array_split(X, c))) for c in (3, 7, 100)}
    assert len(floats) > 1


def test_sparse_input_counts_its_zeros_and_partitions_do_not_matter():
    S = sp.random(300, 40, density=0.05, random_state=2, format="csr") * 7.0
    fmap = RFF(n_components=8, gamma="scale").fit(S)
    assert fmap.gamma_ == pytest.approx(1.0 / (40 * S.toarray().var()), rel=1e-12)
    assert fmap.spec_json() == RFF(n_components=8, gamma="scale").fit(S.toarray()).spec_json()
    for rows in (16, 100):
        assert RFF(n_components=8, gamma="scale").fit(from_sparse(S, block_rows=rows)).spec_json() == fmap.spec_json()
        ny = Nystroem(n_components=4, kernel="rbf", gamma="scale").fit(from_sparse(S, block_rows=rows))
        assert ny.gamma_ == fmap.gamma_


def test_spec_rebuilds_the_fitted_map():
    for fmap in _maps()[:3]:
        fmap.fit(X)
        again = from_spec(json.loads(fmap.spec_json()))
        assert again.gamma_ == fmap.gamma_
        assert again.transform(X).tobytes() == fmap.transform(X).tobytes()


def test_featurize_and_fit_incremental_fit_gamma_on_all_rows(tmp_path):
    Y = X.copy()
    Y[:60] = 0.0  # the first block alone would give another variance
    expected = RFF(n_components=8, gamma="scale", seed=2).fit(Y).spec_json()
    store = featurize(da.from_array(Y, chunks=(60, -1)), RFF(n_components=8, gamma="scale", seed=2),
                      store=str(tmp_path / "f.zarr"), progress=False)
    assert open_store(store.path).feature_map.spec_json() == expected
    model = fit_incremental(SGDClassifier(random_state=0), Y, (Y[:, 0] > 1e7).astype(int),
                            feature_map=RFF(n_components=8, gamma="scale", seed=2), block_rows=60, epochs=1,
                            progress=False)
    assert model.feature_map.spec_json() == expected


@pytest.mark.parametrize("make", [lambda: RFF(gamma="scale"), lambda: NRFF(gamma="scale"),
                                  lambda: Fastfood(gamma="scale"), lambda: Nystroem(kernel="rbf", gamma="scale")])
def test_zero_variance_is_a_clear_error(make):
    with pytest.raises(ValueError, match=r"gamma='scale': every entry of the (unit-length training rows|training "
                                         r"input) \(50 x 3\) equals .*variance 0"):
        make().fit(np.full((50, 3), 2.5) if not isinstance(make(), NRFF) else np.tile([1.0, 1.0, 1.0], (50, 1)))
    with pytest.raises(ValueError, match="variance 0"):
        make().fit(da.from_array(np.full((50, 3), 2.5) if not isinstance(make(), NRFF) else np.ones((50, 3)),
                                 chunks=(7, -1)))


def test_scale_needs_a_gaussian_kernel():
    with pytest.raises(ValueError, match="kernel='laplacian' needs a numeric gamma"):
        RFF(kernel="laplacian", gamma="scale").fit(X)
    with pytest.raises(ValueError, match="kernel='laplacian' needs a numeric gamma"):
        Nystroem(kernel="laplacian", gamma="scale").fit(X)
    with pytest.raises(ValueError, match="kernel='gmm' has no parameter"):
        Nystroem(kernel="gmm", gamma="scale").fit(X)


def test_spec_state_gamma_is_checked():
    spec = RFF(n_components=8, gamma="scale").fit(X).spec()
    for bad in (None, -1.0, float("inf"), "1", True, KeyError):
        with pytest.raises(ValueError, match=r"spec\['state'\]\['gamma'\]"):
            from_spec(tampered(spec, ("state", "gamma"), bad))
    numeric = RFF(n_components=8, gamma=0.5).fit(X).spec()
    with pytest.raises(ValueError, match="only the key 'cosine' is known"):  # a numeric gamma has no fitted one
        from_spec(tampered(numeric, ("state", "gamma"), 0.5))


#: specs and output hashes numeric gammas gave before gamma="scale" existed: they must not change
OLD_X = (np.arange(60, dtype=np.float64).reshape(12, 5) % 7 - 3) * np.array([1.0, -0.5, 30.0, 0.25, -2.0])
OLD = [
    ('{"method":"rff","n_features_in":5,"n_output_features":16,"output_dtype":"<f4","params":{"dtype":"float32",'
     '"gamma":0.01,"kernel":"rbf","n_components":16,"seed":3},"rng_scheme":"dk-rng-1","spec_version":1,'
     '"state":{"cosine":"cos32v2"}}', "fa0ffe09b34d701097ee18b2e05f90eff2d5f1b6147f1f48cb2b0661d4d3810f",
     lambda: RFF(n_components=16, gamma=0.01, seed=3)),
    ('{"method":"nrff","n_features_in":5,"n_output_features":16,"output_dtype":"<f4","params":{"dtype":"float32",'
     '"gamma":2.0,"n_components":16,"seed":3},"rng_scheme":"dk-rng-1","spec_version":1,'
     '"state":{"cosine":"cos32v2"}}', "f917169706c763b012c1cd44311cc9e5a5710d172943ef95246178eb890a022d",
     lambda: NRFF(n_components=16, gamma=2.0, seed=3)),
    ('{"method":"fastfood","n_features_in":5,"n_output_features":16,"output_dtype":"<f4","params":{"dtype":"float32",'
     '"gamma":0.01,"matern_t":3,"n_components":16,"radial":"gaussian","seed":3,"sigma":null},"rng_scheme":'
     '"dk-rng-1","spec_version":1,"state":{"cosine":"cos32v2"}}',
     "d18993dc364be68cbf9e8a61c78c0f8b99351528412cfb939d7cf79ea7f8c7ec",
     lambda: Fastfood(n_components=16, gamma=0.01, seed=3)),
]


@pytest.mark.parametrize("spec, sha, make", OLD)
def test_old_spec_gives_its_old_bytes(spec, sha, make):
    fmap = from_spec(spec)
    assert hashlib.sha256(fmap.transform(OLD_X).tobytes()).hexdigest() == sha
    assert fmap.spec_json() == spec
    assert make().fit(OLD_X).spec_json() == spec


def test_old_nystroem_spec_state_and_bytes():
    # The landmarks are drawn by the package's own random numbers: the same bits on every
    # machine. The normalization comes from LAPACK's eigendecomposition and the features from a
    # BLAS product, whose last bits depend on the machine's kernels: they are checked against the
    # Nystroem identity Z Z^T = K(X, L) K(L, L)^-1 K(L, X) instead of pinned bytes.
    ny = Nystroem(n_components=4, kernel="rbf", gamma=0.01, dtype="float64").fit(OLD_X)
    assert ny.spec()["params"]["gamma"] == 0.01 and ny.spec()["state"]["gamma"] == 0.01
    L = ny.landmarks_
    assert ny.landmark_rows_.tolist() == [5, 11, 9, 10]
    assert hashlib.sha256(ny.landmark_rows_.tobytes() + L.tobytes()).hexdigest() == (
        "21fb53ebb30d4fffb6a0193516525b0e1950ecae1a16405eddbf6e881a1e401f")
    Z = ny.transform(OLD_X)
    k_xl = np.exp(-0.01 * ((OLD_X[:, None, :] - L[None]) ** 2).sum(-1))
    k_ll = np.exp(-0.01 * ((L[:, None, :] - L[None]) ** 2).sum(-1))
    assert np.linalg.cond(k_ll) < 1.01  # well conditioned: the identity holds to rounding
    np.testing.assert_allclose(Z @ Z.T, k_xl @ np.linalg.solve(k_ll, k_xl.T), rtol=0, atol=1e-13)


@pytest.mark.parametrize("make, w_max", [
    (lambda g: RFF(gamma=g, n_components=8), "1.22e\\+41"),
    (lambda g: RFF(gamma=g, n_components=8, kernel="laplacian"), "5.73e\\+95"),
    (lambda g: NRFF(gamma=g, n_components=8), "8.66e\\+40"),
])
def test_a_gamma_whose_frequencies_do_not_fit_the_dtype_is_refused(make, w_max):
    # cast to float32 the frequencies were inf and every feature NaN (with scale="auto" and a
    # RuntimeWarning); without a scale every row was refused as too large ("magnitude bound 0")
    X = np.random.default_rng(0).random((50, 4))
    with pytest.raises(ValueError, match=f"gamma=1e\\+80: so large that its frequencies \\(up to {w_max}\\) do not "
                                         "fit float32: give a smaller gamma or dtype='float64'"):
        make(1e80).fit(X)
    assert np.isfinite(make(1e10).fit(X).transform(X)).all()
    f64 = make(1e80).set_params(dtype="float64").fit(X)
    assert f64.max_abs_frequency < np.finfo(np.float64).max


def test_a_learned_gamma_whose_frequencies_do_not_fit_the_dtype_is_refused():
    X = np.random.default_rng(0).random((50, 4)) * 1e-45  # variance ~1e-91: gamma="scale" ~1e90
    with pytest.raises(ValueError, match=r"RFF gamma=\d.*e\+\d+: so large that its frequencies"):
        RFF(gamma="scale", n_components=8).fit(X)
    assert np.isfinite(RFF(gamma="scale", n_components=8, dtype="float64").fit(X).transform(X)).all()


@pytest.mark.parametrize("scale", [None, "minmax"])
@pytest.mark.parametrize("params, says", [
    ({"sigma": 1e-40}, "sigma=1e-40: so narrow a bandwidth that its frequencies do not fit float32: give a larger "
                       "sigma or dtype='float64'"),
    ({"gamma": 1e80}, "gamma=1e+80: so narrow a bandwidth that its frequencies do not fit float32: give a smaller "
                      "gamma or dtype='float64'"),
])
def test_fastfood_refuses_a_bandwidth_whose_frequencies_do_not_fit_the_dtype(scale, params, says):
    # its scale diagonal cast to float32 was inf: every feature NaN with a scale, every row refused
    # as beyond "magnitude bound 0" without
    rows = np.random.default_rng(0).random((50, 4))
    for fit_rows in (rows, da.from_array(rows, chunks=20)):
        with pytest.raises(ValueError, match=f"^Fastfood {says}$".replace("+", r"\+").replace("(", r"\(")):
            Fastfood(n_components=8, scale=scale, **params).fit(fit_rows)
    spec = Fastfood(n_components=8, scale=scale).fit(rows).spec()
    bad = tampered(spec, ("params", *params), params[next(iter(params))])
    with pytest.raises(ValueError, match=r"^feature-map spec: Fastfood " + says.replace("+", r"\+")):
        from_spec(bad)
    f64 = Fastfood(n_components=8, scale=scale, dtype="float64", **params).fit(rows)
    assert np.isfinite(f64.transform(rows)).all()


@pytest.mark.parametrize("cls", [RFF, NRFF, Fastfood])
def test_a_spec_whose_learned_gamma_does_not_fit_the_dtype_is_refused(cls):
    # rebuilt from the spec, RFF's and NRFF's features were all NaN (a RuntimeWarning aside)
    rows = np.random.default_rng(0).random((50, 4))
    spec = cls(n_components=8, gamma="scale", scale="minmax").fit(rows).spec()
    with pytest.raises(ValueError, match=r"^feature-map spec.*: \w+ gamma=1e\+300: so (large|narrow)"):
        from_spec(tampered(spec, ("state", "gamma"), 1e300))
    assert np.isfinite(from_spec(tampered(spec, ("state", "gamma"), 1e10)).transform(rows)).all()


@pytest.mark.parametrize("cls", [RFF, Fastfood])
def test_a_refused_learned_gamma_does_not_refuse_the_next_fit(cls):
    # the gamma learned by the refused fit stayed, and the next fit checked it with the parameters
    m = cls(n_components=8, gamma="scale")
    rows = np.random.default_rng(0).random((50, 4))
    with pytest.raises(ValueError, match="do not fit float32"):
        m.fit(rows * 1e-45)
    assert np.isfinite(m.fit(rows).transform(rows)).all()
