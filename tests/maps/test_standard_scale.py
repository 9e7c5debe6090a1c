"""``scale="standard"``: each column centred on its training mean and divided by its standard
deviation (scikit-learn's ``StandardScaler``), from exact column sums, so the spec is the same
bits for any chunking; dense input only for the maps that refuse to densify (GCWS densifies)."""

from fractions import Fraction

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import StandardScaler

from _spec import assert_same_spec_for_any_chunking, scaled_maps, sidecar, tampered

from dask_kernels import GCWS, RFF, Nystroem, from_spec
from dask_kernels.io import from_sparse
from dask_kernels.maps._exactsum import block_sums, exact_values, merge_sums
from dask_kernels.maps._scaling import apply_scale, input_scaling

RNG = np.random.default_rng(11)
#: units and offsets four orders of magnitude apart, one outlier, and a constant column
X = RNG.standard_normal((300, 6)) * [1.0, 10.0, 1e3, 0.01, 5.0, 1.0] + [0.0, 5.0, -300.0, 1e4, 2.0, 0.0]
X[17, 1] = 400.0
X[:, 5] = 3.25
MAKERS = scaled_maps("standard", 16)


def _exact(column):
    """The correctly rounded mean and the square root of the correctly rounded population
    variance of a column, from Fractions."""
    n = len(column)
    mean = sum(Fraction(float(v)) for v in column) / n
    var = sum(Fraction(float(v)) ** 2 for v in column) / n - mean * mean
    return float(mean), float(np.sqrt(float(var)))


@pytest.mark.parametrize("method", MAKERS)
def test_the_statistics_are_exact_and_scale_as_standard_scaler(method):
    fmap = MAKERS[method]().fit(X)
    state = fmap.scale_
    assert state["rule"] == "standard" and set(state) == {"rule", "mean", "std"}
    for j in range(X.shape[1]):
        assert (state["mean"][j], state["std"][j]) == _exact(X[:, j])
    ref = StandardScaler().fit(X)
    np.testing.assert_allclose(state["mean"], ref.mean_, rtol=1e-15, atol=0)
    np.testing.assert_allclose(state["std"][:5], ref.scale_[:5], rtol=1e-14)
    assert state["std"][5] == 0.0  # the constant column: factor 1, so it maps to 0 (scikit-learn's too)
    scaled = apply_scale(X, *input_scaling(fmap))
    np.testing.assert_allclose(scaled, ref.transform(X), rtol=0, atol=1e-12)
    assert np.all(scaled[:, 5] == 0.0)


@pytest.mark.parametrize("method", MAKERS)
def test_the_spec_is_the_same_bits_for_any_chunking_and_rebuilds_the_map(method):
    assert_same_spec_for_any_chunking(MAKERS[method], X, (1, 7, 100, 299))


def test_the_scale_changes_the_features_and_the_units_do_not():
    units = np.array([1e-3, 1.0, 1e4, 7.0, 1e2, 1.0])
    a = GCWS(n_components=64, scale="standard").fit_transform(X)
    b = GCWS(n_components=64, scale="standard").fit_transform(X * units - 3.0)
    assert np.mean(a == b) > 0.95  # the same standardized rows up to their rounding
    minmax = GCWS(n_components=64, scale="minmax").fit_transform(X)
    assert np.mean(a == minmax) < 0.9  # another rule, other codes (the outlier squeezes column 1's range)


def test_sparse_input_is_refused_where_minmax_is_and_densified_by_gcws():
    S = sp.csr_matrix(np.where(RNG.random(X.shape) < 0.3, X, 0.0))
    for fit_input in (S, from_sparse(S, block_rows=40)):
        for make in (RFF, Nystroem):
            with pytest.raises(ValueError, match="scale='standard' shifts every column.*use scale='maxabs'"):
                make(n_components=4, scale="standard").fit(fit_input)
        gcws = GCWS(n_components=16, scale="standard").fit(fit_input)
        assert gcws.spec_json() == GCWS(n_components=16, scale="standard").fit(S.toarray()).spec_json()


def test_nystroem_minmax_kernel_refuses_a_centring_rule():
    for rule in ("minmax", "standard"):
        with pytest.raises(ValueError, match=f"kernel='minmax' needs nonnegative rows and scale='{rule}'"):
            Nystroem(kernel="minmax", scale=rule).fit(np.abs(X))


@pytest.mark.parametrize("value, match", [
    ({"rule": "standard", "mean": [0.0] * 6}, r": rule 'standard' has the keys \['mean', 'rule', 'std'\]"),
    ({"rule": "standard", "mean": [0.0] * 6, "std": [-1.0] + [1.0] * 5}, r"\['std'\]: entry 0 is negative"),
    ({"rule": "standard", "mean": [float("nan")] * 6, "std": [1.0] * 6}, r"\['mean'\]: entry 0 is nan"),
    ({"rule": "standard", "mean": [0.0] * 5, "std": [1.0] * 5}, r"\['mean'\]: has shape \(5,\)"),
    # np.asarray(..., float64) reads the string "1" and true as 1.0
    ({"rule": "standard", "mean": [0.0] * 6, "std": ["1"] + [1.0] * 5}, r"\['std'\]: expected a list of numbers"),
    ({"rule": "standard", "mean": [True] + [0.0] * 5, "std": [1.0] * 6}, r"\['mean'\]: expected a list of numbers"),
])
@pytest.mark.parametrize("method", ["gcws", "rff", "nystroem"])
def test_a_tampered_standard_state_is_refused_naming_the_key(method, value, match):
    fmap = MAKERS[method]().fit(X)
    with pytest.raises(ValueError, match=r"spec\['state'\]\['scale'\]" + match):
        from_spec(tampered(fmap.spec(), ("state", "scale"), value), arrays=sidecar(fmap))
    other = RFF(n_components=4, scale="minmax").fit(X).spec()
    with pytest.raises(ValueError, match="rule 'standard' but spec"):
        from_spec(tampered(other, ("state", "scale"), fmap.scale_))


def test_exact_sums_of_columns_and_their_squares_merge_in_any_order():
    cols = [sum(Fraction(float(v)) for v in X[:, j]) for j in range(6)]
    squares = [sum(Fraction(float(v)) ** 2 for v in X[:, j]) for j in range(6)]
    whole = block_sums(X, by_column=True, squares=True)
    assert exact_values(whole) == cols + squares
    parts = [block_sums(np.ascontiguousarray(X[a:a + 37]), by_column=True, squares=True) for a in range(0, 300, 37)]
    assert exact_values(merge_sums(*parts[::-1])) == cols + squares
    S = sp.csr_matrix(X)
    assert exact_values(block_sums(S, by_column=True, squares=True)) == cols + squares
    # the other modes are as they were: the columns' sums alone, and all entries with their squares
    assert exact_values(block_sums(X, by_column=True)) == cols
    assert exact_values(block_sums(X, squares=True)) == [sum(cols), sum(squares)]


def test_values_whose_squares_cannot_be_summed_exactly_are_refused_with_advice():
    # the other rules accept |x| up to 2**1022; a square above 2**1000 is not summed exactly
    big = X.copy()
    big[3, 2] = 1e200
    for fit_input in (big, da.from_array(big, chunks=(50, -1))):
        with pytest.raises(ValueError, match=r"above 2\*\*500.*rescale the input"):
            GCWS(n_components=8, scale="standard").fit(fit_input)
    assert GCWS(n_components=8, scale="minmax").fit(big).scale_["rule"] == "minmax"
