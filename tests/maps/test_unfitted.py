"""One rule for an unfitted map: featurize and fit_incremental fit a clone (on the first block
that has rows, or on all rows for a map that learns from all of them, e.g. GCWS's scale) and
leave the caller's object unfitted; the fitted clone is the one returned."""

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


#: (map parameters, the rows its fitted clone is fitted on)
FITS = [pytest.param({}, X, id="scale-all-rows"), pytest.param({"scale": None}, X[:40], id="first-block")]


@pytest.mark.parametrize(("kw", "rows"), FITS)
def test_featurize_fits_a_clone_and_leaves_the_callers_map_unfitted(tmp_path, kw, rows):
    gcws = GCWS(n_components=8, seed=1, **kw)
    store = featurize(da.from_array(X, chunks=(40, 5)), gcws, store=str(tmp_path / "s.zarr"), progress=False)
    assert _unfitted(gcws)
    assert open_store(store.path).feature_map.spec() == GCWS(n_components=8, seed=1, **kw).fit(rows).spec()


@pytest.mark.parametrize(("kw", "rows"), FITS)
def test_fit_incremental_fits_a_clone_and_leaves_the_callers_map_unfitted(kw, rows):
    gcws = GCWS(n_components=8, seed=1, **kw)
    model = fit_incremental(SGDClassifier(random_state=0), X, Y, feature_map=gcws, block_rows=40, epochs=1,
                            progress=False)
    assert _unfitted(gcws)
    assert model.feature_map is not gcws
    assert model.feature_map.spec() == GCWS(n_components=8, seed=1, **kw).fit(rows).spec()


def test_a_fitted_map_is_used_as_it_is():
    gcws = GCWS(n_components=8, seed=1).fit(X)
    model = fit_incremental(SGDClassifier(random_state=0), X, Y, feature_map=gcws, block_rows=40, epochs=1,
                            progress=False)
    assert model.feature_map is gcws
