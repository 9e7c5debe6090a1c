"""One rule for an unfitted map: featurize and fit_incremental fit a clone (on the first block
that has rows) and leave the caller's object unfitted; the fitted clone is the one returned."""

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import SGDClassifier
from sklearn.utils.validation import check_is_fitted

from dask_kernels import GCWS, featurize, fit_incremental, open_store

RNG = np.random.default_rng(3)
X = RNG.random((120, 5))
Y = (X[:, 0] > 0.5).astype(int)


def _unfitted(fmap):
    with pytest.raises(NotFittedError):
        check_is_fitted(fmap)
    return True


def test_featurize_fits_a_clone_and_leaves_the_callers_map_unfitted(tmp_path):
    gcws = GCWS(n_components=8, seed=1)
    store = featurize(da.from_array(X, chunks=(40, 5)), gcws, store=str(tmp_path / "s.zarr"), progress=False)
    assert _unfitted(gcws)
    assert open_store(store.path).feature_map.spec() == GCWS(n_components=8, seed=1).fit(X[:40]).spec()


def test_fit_incremental_fits_a_clone_and_leaves_the_callers_map_unfitted():
    gcws = GCWS(n_components=8, seed=1)
    model = fit_incremental(SGDClassifier(random_state=0), X, Y, feature_map=gcws, block_rows=40, epochs=1,
                            progress=False)
    assert _unfitted(gcws)
    assert model.feature_map is not gcws
    assert model.feature_map.spec() == GCWS(n_components=8, seed=1).fit(X[:40]).spec()


def test_a_fitted_map_is_used_as_it_is():
    gcws = GCWS(n_components=8, seed=1).fit(X)
    model = fit_incremental(SGDClassifier(random_state=0), X, Y, feature_map=gcws, block_rows=40, epochs=1,
                            progress=False)
    assert model.feature_map is gcws
