"""Dense readers: .npy memory-mapped, Zarr arrays, in-memory NumPy, in-memory SciPy sparse."""

import pickle

import numpy as np
import scipy.sparse as sp
import zarr

from dask_kernels.io import from_array, from_sparse, read_npy, read_zarr


def test_read_npy_is_lazy_and_small_in_the_graph(tmp_path):
    X = np.random.default_rng(0).random((1000, 50))
    p = str(tmp_path / "x.npy")
    np.save(p, X)
    d = read_npy(p, block_rows=300)
    assert d.chunks == ((300, 300, 300, 100), (50,))
    assert np.array_equal(d.compute(), X)
    # the graph holds a file handle, not the 400 kB of data
    assert len(pickle.dumps(dict(d.__dask_graph__()))) < 20_000
    assert read_npy(p, block_rows=300).name == d.name  # same file, same name


def test_read_npy_name_changes_when_file_changes(tmp_path):
    p = str(tmp_path / "x.npy")
    np.save(p, np.zeros((4, 2)))
    a = read_npy(p).name
    np.save(p, np.ones((5, 2)))
    assert read_npy(p).name != a


def test_read_zarr(tmp_path):
    X = np.arange(60.0).reshape(20, 3)
    p = str(tmp_path / "x.zarr")
    z = zarr.create_array(p, shape=X.shape, chunks=(6, 3), dtype="f8")
    z[:] = X
    d = read_zarr(p)
    assert d.chunks[0] == (6, 6, 6, 2)
    assert np.array_equal(d.compute(), X)
    z[19, 0] = -1.0  # last chunk changed: different input
    assert read_zarr(p).name != d.name


def test_from_array_and_from_sparse():
    X = np.random.default_rng(1).random((10, 4))
    assert from_array(X, block_rows=3).chunks[0] == (3, 3, 3, 1)
    assert from_array(X).name == from_array(X.copy()).name
    A = sp.random(10, 4, density=0.5, format="csr", random_state=0)
    src = from_sparse(A, y=np.arange(10), block_rows=4)
    Xc, y, q = src.compute()
    assert np.array_equal(Xc.toarray(), A.toarray()) and y.tolist() == list(range(10)) and q is None
