"""The contract every registered feature map keeps, run over all of them.

A new map gets these tests by being registered and listed in ``CASES`` (the first test fails
while a registered map has no case): scikit-learn's estimator checks, spec round trip (JSON,
bitwise), chunk invariance (the lazy ``featurize`` graph at two block sizes equals one block),
dense = CSR, pickling, and save/load (``KernelModel`` directory and spec file + sidecar).
"""

import json
import pickle

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from _blas_rounding import assert_same_features
from sklearn.base import clone
from sklearn.linear_model import SGDClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from dask_kernels import (GCWS, NRFF, RFF, CoRE, Fastfood, KernelModel, Nystroem, featurize, from_spec,
                          load_model, registered_maps)
from dask_kernels.select import RandomFeatureSelector
from dask_kernels.maps import load_map, save_map
from dask_kernels.sidecar import map_arrays

# method -> instances that together reach each map's distinct code paths (kernels, dtypes, outputs)
CASES = {
    "gcws": [GCWS(n_components=8), GCWS(n_components=5, bits=12, output="onehot")],
    "rff": [RFF(n_components=8), RFF(n_components=8, kernel="laplacian", dtype="float64"),
            RFF(n_components=8, scale="auto")],
    "nrff": [NRFF(n_components=8), NRFF(n_components=8, scale="auto")],
    "fastfood": [Fastfood(n_components=8), Fastfood(n_components=8, radial="matern", dtype="float64"),
                 Fastfood(n_components=8, scale="maxabs")],
    "nystroem": [
        Nystroem(n_components=8),
        Nystroem(n_components=8, kernel="rbf", dtype="float64"),
        Nystroem(n_components=6, kernel="laplacian", landmarks="kmeans++"),
    ],
    "core": [CoRE(n_components=8), CoRE(n_components=8, type=2, bits=4)],
}
ALL = [est for ests in CASES.values() for est in ests]
IDS = [repr(e) for e in ALL]

_rng = np.random.default_rng(0)
# nonnegative (GCWS, CoRE, min-max kernels) and half zeros, so CSR differs from dense
X = np.abs(_rng.standard_normal((40, 10))) * (_rng.random((40, 10)) < 0.5)
Y = (X[:, 0] > np.median(X[:, 0])).astype(int)


def _dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def _fitted(est):
    return clone(est).fit(X)


def _block(fmap, rows):
    """What the pipeline stores for ``rows``: the block function on validated rows."""
    return fmap.transform_block(fmap.validate_block(rows))


def test_every_registered_map_has_cases_and_no_test_map_is_registered():
    maps = registered_maps()
    leaked = {m: c.__module__ for m, c in maps.items() if not c.__module__.startswith("dask_kernels.")}
    assert not leaked, f"test-only maps in the global registry: {leaked}"
    assert set(CASES) == set(maps), f"registered maps without a case in CASES: {sorted(set(maps) - set(CASES))}"
    for method, ests in CASES.items():
        assert ests and all(type(e) is maps[method] for e in ests), method


@parametrize_with_checks(ALL)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# Random feature selection is a transformer over a Fourier map (not a registered map: it has no
# spec of its own), by features (RFF) or whole blocks (Fastfood). RFF in float64: its float32
# projection is an SGEMM whose rounding may depend on the rows computed beside a row (about
# 1e-6 relative, see RFF's Notes), and the checks compare rows of different batches to 1e-7.
SELECTORS = [RandomFeatureSelector(RFF(seed=1, dtype="float64"), n_components=16, rounds=2),
             RandomFeatureSelector(Fastfood(seed=3), n_components=16, rounds=2)]


@parametrize_with_checks(SELECTORS)
def test_sklearn_estimator_checks_of_the_selector(estimator, check):
    check(estimator)


@pytest.mark.parametrize("est", ALL, ids=IDS)
def test_spec_round_trip_is_bitwise(est):
    fmap = _fitted(est)
    spec = fmap.spec()
    rebuilt = from_spec(json.loads(fmap.spec_json()), arrays=map_arrays(fmap))
    assert rebuilt.spec() == spec
    assert rebuilt.spec_json() == fmap.spec_json()
    np.testing.assert_array_equal(_dense(rebuilt.transform(X)), _dense(fmap.transform(X)))


@pytest.mark.parametrize("est", ALL, ids=IDS)
def test_blocks_do_not_change_the_features(est):
    fmap = _fitted(est)
    ref = _block(fmap, X)
    for rows in (7, 40):
        with dask.config.set(scheduler="sync"):
            got = featurize(da.from_array(X, chunks=(rows, 10)), fmap, progress=False).compute()
        # bitwise, but for the rounding of a BLAS's product over other rows (RFF, NRFF, Nystroem)
        assert_same_features(fmap, X, got, ref)
    # and rows in another order give the same rows' features
    perm = np.random.default_rng(1).permutation(X.shape[0])
    assert_same_features(fmap, X[perm], _block(fmap, X[perm]), ref[perm])


@pytest.mark.parametrize("est", ALL, ids=IDS)
def test_fit_on_a_dask_dataframe_is_fit_on_its_rows(est):
    # GCWS, Nystroem and CoRE raised AttributeError: 'DataFrame' object has no attribute 'chunks'
    import dask.dataframe as dd
    import pandas as pd

    frame = dd.from_pandas(pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])]), npartitions=3)
    with dask.config.set(scheduler="sync"):
        fitted = clone(est).fit(frame)
    assert fitted.spec() == clone(est).fit(X).spec()


@pytest.mark.parametrize("est", ALL, ids=IDS)
def test_input_features_must_be_the_inputs(est):
    # they were ignored: get_feature_names_out(["x", "y"]) of a 10-column map gave its names
    import pandas as pd

    fmap = _fitted(est)
    names = fmap.get_feature_names_out()
    assert list(fmap.get_feature_names_out([f"x{j}" for j in range(X.shape[1])])) == list(names)
    with pytest.raises(ValueError, match=rf"should have length equal to number of features \({X.shape[1]}\), got 2"):
        fmap.get_feature_names_out(["x", "y"])
    columns = [f"c{j}" for j in range(X.shape[1])]
    named = clone(est).fit(pd.DataFrame(X, columns=columns))
    assert list(named.get_feature_names_out(columns)) == list(named.get_feature_names_out())
    with pytest.raises(ValueError, match="input_features is not equal to feature_names_in_"):
        named.get_feature_names_out(columns[::-1])


@pytest.mark.parametrize("est", ALL, ids=IDS)
def test_dense_equals_csr(est):
    fmap = _fitted(est)
    assert fmap.accepts_sparse  # every map today; one that is not would skip the CSR half below
    dense, csr = _block(fmap, X), _block(fmap, sp.csr_matrix(X))
    if np.issubdtype(dense.dtype, np.integer):  # hashes and codes: identical
        np.testing.assert_array_equal(csr, dense)
    else:  # sums over the nonzeros in another order: a few ulp of each projection
        tol = 64 * np.finfo(dense.dtype).eps
        np.testing.assert_allclose(csr, dense, rtol=0, atol=tol)


@pytest.mark.parametrize("est", ALL, ids=IDS)
def test_pickling_keeps_the_map(est):
    fmap = _fitted(est)
    back = pickle.loads(pickle.dumps(fmap))
    assert back.spec() == fmap.spec()
    np.testing.assert_array_equal(_dense(back.transform(X)), _dense(fmap.transform(X)))


@pytest.mark.parametrize("est", ALL, ids=IDS)
def test_save_and_load(est, tmp_path):
    fmap = _fitted(est)
    model = KernelModel(fmap, SGDClassifier(random_state=0, max_iter=20, tol=None))
    model.estimator.fit(model.features(X), Y)
    model.save(tmp_path / "model")
    back = load_model(tmp_path / "model")
    assert back.feature_map.spec() == fmap.spec()
    np.testing.assert_array_equal(_dense(back.features(X)), _dense(model.features(X)))
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    # a spec file with its sidecar beside it (the arrays of maps that have them, e.g. Nystroem)
    path = save_map(fmap, tmp_path / "map.json")
    np.testing.assert_array_equal(_dense(load_map(path).transform(X)), _dense(fmap.transform(X)))


def test_test_maps_are_registered_only_while_the_test_runs(float_identity):
    assert registered_maps()["test-float-identity"] is float_identity
    fmap = float_identity().fit(X)
    assert type(from_spec(fmap.spec())) is float_identity  # reachable through the registry meanwhile


def test_shared_docstring_text_is_filled_in_everywhere():
    # a docstring naming a shared piece (%(name)s, dask_kernels/_docstrings.py) must go through
    # fill_doc, or the API reference and help() would show the marker
    import inspect

    import dask_kernels

    unfilled = []
    for name in dask_kernels.__all__:
        obj = getattr(dask_kernels, name)
        members = [obj] + ([m for _, m in inspect.getmembers(obj) if callable(m) or isinstance(m, property)]
                           if inspect.isclass(obj) else [])
        unfilled += [f"{name}: {getattr(m, '__qualname__', m)}" for m in members
                     if isinstance(getattr(m, "__doc__", None), str) and "%(" in m.__doc__]
    assert not unfilled, unfilled
