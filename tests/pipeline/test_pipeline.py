"""Lazy featurize: dtype/chunks/meta, chunk invariance, dense = sparse, graph size vs k, errors."""

import pickle

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

from dask_kernels import GCWS, featurize
from dask_kernels.io import from_sparse, read_svmlight

RNG = np.random.default_rng(0)
X = RNG.standard_normal((700, 30)) * (RNG.random((700, 30)) < 0.3)


def _gcws(k=64):
    return GCWS(n_components=k, seed=3).fit(X[:2])


def test_lazy_dense_dtype_chunks_meta_and_values():
    g = _gcws()
    out = featurize(da.from_array(X, chunks=(100, 10)), g)
    assert out.dtype == np.uint8 and out.chunks == ((100,) * 7, (64,))
    assert isinstance(out._meta, np.ndarray) and out._meta.dtype == np.uint8
    assert np.array_equal(out.compute(), g.transform(X))


def test_chunk_invariance_and_sparse_equals_dense():
    g = _gcws()
    one = featurize(da.from_array(X, chunks=(700, 30)), g).compute()
    seven = featurize(da.from_array(X, chunks=(100, 30)), g).compute(scheduler="threads")
    odd = featurize(from_sparse(sp.csr_matrix(X), block_rows=37), g).compute()
    assert np.array_equal(one, seven) and np.array_equal(one, odd)


def test_svmlight_input_equals_in_memory(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    p = str(tmp_path / "x.svm")
    dump_svmlight_file(X, np.arange(700) % 2, p, zero_based=False)
    src = read_svmlight(p, n_features=30, blocksize=2000)
    g = _gcws()
    assert np.array_equal(featurize(src, g).compute(), g.transform(X))


def _graph_bytes(arr):
    return len(pickle.dumps(dict(arr.__dask_graph__())))


def test_graph_size_does_not_grow_with_k():
    Xd = da.from_array(X, chunks=(100, 30))
    small, big = (_graph_bytes(featurize(Xd, _gcws(k))) for k in (8, 4096))
    # only the digits of n_components differ in the spec text of each of the 7 tasks
    assert abs(big - small) <= 7 * 2 * 3 + 16, (small, big)


def test_unfitted_map_is_fitted_on_the_first_block():
    out = featurize(da.from_array(X, chunks=(100, 30)), GCWS(n_components=16, seed=3))
    assert np.array_equal(out.compute(), GCWS(n_components=16, seed=3).fit(X).transform(X))


def test_wrong_width_and_nan_name_the_problem():
    with pytest.raises(ValueError, match="input has 29 features, the map was fitted on 30"):
        featurize(da.from_array(X[:, :29]), _gcws())
    Xn = X.copy()
    Xn[433, 5] = np.nan
    with pytest.raises(ValueError, match="row 433, column 5"):
        featurize(da.from_array(Xn, chunks=(100, 30)), _gcws()).compute()
    with pytest.raises(ValueError, match="row 433"):
        featurize(from_sparse(sp.csr_matrix(Xn), block_rows=64), _gcws()).compute()


def test_synchronous_scheduler():
    with dask.config.set(scheduler="synchronous"):
        out = featurize(da.from_array(X, chunks=(350, 30)), _gcws()).compute()
    assert np.array_equal(out, _gcws().transform(X))


@pytest.mark.parametrize("method", ["gcws", "rff", "nrff", "fastfood"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_map_names_the_global_row_of_a_nonfinite_value(method, dtype):
    from dask_kernels.maps import registered_maps

    fmap = registered_maps()[method](n_components=16).fit(X[:2])
    Xn = X.astype(dtype)
    Xn[433, 7] = -np.inf
    with pytest.raises(ValueError, match="row 433, column 7"):
        featurize(da.from_array(Xn, chunks=(100, 30)), fmap).compute()
    with pytest.raises(ValueError, match="row 433, column 7"):
        featurize(from_sparse(sp.csr_matrix(Xn), block_rows=64), fmap).compute()
