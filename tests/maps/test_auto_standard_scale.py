"""``scale="auto_standard"``: "standard" for dense input with more than half of its entries
nonzero, "maxabs" for rows of mostly zeros and for sparse input (as ``"auto"`` chooses between
"minmax" and "maxabs"), decided on exact counts over all training rows, so the spec is the same
bits for any chunking."""

import numpy as np
import pytest
import scipy.sparse as sp

from _spec import assert_same_spec_for_any_chunking, scaled_maps, tampered

from dask_kernels import GCWS, RFF, Nystroem, from_spec
from dask_kernels.io import from_sparse

RNG = np.random.default_rng(5)
DENSE = RNG.standard_normal((200, 5)) * [1.0, 100.0, 0.1, 3.0, 1.0] + [0.0, 50.0, 1.0, -4.0, 2.0]
#: exactly half of the entries nonzero: the boundary, which "maxabs" takes (as "auto")
HALF = np.where(np.arange(200)[:, None] % 2 == np.arange(5) % 2, 0.0, DENSE)
HALF[0, :] = [0.0, 1.0, 0.0, 1.0, 0.0]
MAKERS = scaled_maps("auto_standard", 8)


def _rule_of(method, rows):
    return MAKERS[method]().fit(rows).scale_


@pytest.mark.parametrize("method", MAKERS)
def test_dense_rows_are_standardized_and_mostly_zero_rows_divided_by_their_largest_value(method):
    dense = _rule_of(method, DENSE)
    assert dense == GCWS(n_components=4, scale="standard").fit(DENSE).scale_  # the same statistics
    assert np.count_nonzero(HALF) == HALF.size // 2
    mostly_zero = _rule_of(method, HALF)
    assert mostly_zero == {"rule": "maxabs", "max_abs": np.abs(HALF).max(0).tolist()}
    one_more = HALF.copy()
    one_more[1, 1] = 7.0  # one entry past half: dense
    assert _rule_of(method, one_more)["rule"] == "standard"


@pytest.mark.parametrize("method", MAKERS)
def test_the_choice_and_the_spec_are_the_same_bits_for_any_chunking(method):
    for rows in (DENSE, HALF):
        assert_same_spec_for_any_chunking(MAKERS[method], rows, (1, 3, 64, 199))


def test_sparse_input_gets_maxabs_as_under_auto():
    S = sp.csr_matrix(np.where(RNG.random(DENSE.shape) < 0.8, DENSE, 0.0))
    for make in (GCWS, RFF, Nystroem):
        for fit_input in (S, from_sparse(S, block_rows=30)):
            fmap = make(n_components=4, scale="auto_standard").fit(fit_input)
            assert fmap.scale_ == make(n_components=4, scale="auto").fit(S).scale_
            assert fmap.scale_["rule"] == "maxabs"


def test_a_state_of_another_rule_is_refused_naming_both():
    # "auto_standard" keeps "standard" or "maxabs"; "auto" keeps "minmax" or "maxabs"
    minmax = RFF(n_components=4, scale="minmax").fit(DENSE).scale_
    standard = RFF(n_components=4, scale="standard").fit(DENSE).scale_
    spec = RFF(n_components=4, scale="auto_standard").fit(DENSE).spec()
    with pytest.raises(ValueError, match="rule 'minmax' but spec\\['params'\\]\\['scale'\\] is 'auto_standard'"):
        from_spec(tampered(spec, ("state", "scale"), minmax))
    auto = RFF(n_components=4, scale="auto").fit(DENSE).spec()
    with pytest.raises(ValueError, match="rule 'standard' but spec\\['params'\\]\\['scale'\\] is 'auto'"):
        from_spec(tampered(auto, ("state", "scale"), standard))
    maxabs = RFF(n_components=4, scale="auto_standard").fit(HALF).scale_
    assert from_spec(tampered(spec, ("state", "scale"), maxabs)).scale_ == maxabs


def test_parameters_that_cannot_take_it_say_so():
    with pytest.raises(ValueError, match="kernel='minmax' needs nonnegative rows and scale='auto_standard'"):
        Nystroem(kernel="minmax", scale="auto_standard").fit(np.abs(DENSE))
    with pytest.raises(ValueError, match="'auto_standard'"):  # the allowed values name it
        GCWS(scale="zscore").fit(DENSE)
    centred = GCWS(n_components=4, center="mean", scale="auto_standard").fit(DENSE)  # as "auto": scales nothing
    assert centred.scale_ is None and centred.center_ is not None
