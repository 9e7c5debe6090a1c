"""Dense readers: .npy memory-mapped, Zarr arrays, in-memory NumPy, in-memory SciPy sparse."""

import os
import pickle
import re

import numpy as np
import pytest
import scipy.sparse as sp
import zarr

from dask_kernels.io import InputChangedError, from_array, from_sparse, read_npy, read_zarr


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


def test_from_array_reads_a_mapped_file_by_path_and_refuses_it_changed(tmp_path):
    """A file NumPy maps travels as its path (the graph holds no rows) and each block re-checks
    the file: one modified since (here only its modification time) is refused, naming it,
    rather than read as a mix of old and new rows (before: its rows were in the graph)."""
    X = np.random.default_rng(1).random((1000, 50))
    p = str(tmp_path / "x.npy")
    np.save(p, X)
    d = from_array(np.load(p, mmap_mode="r"), block_rows=300)
    assert d.chunks == ((300, 300, 300, 100), (50,))
    np.testing.assert_array_equal(d.compute(), X)
    assert len(pickle.dumps(dict(d.__dask_graph__()))) < 20_000  # 400 kB of rows
    st = os.stat(p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(InputChangedError, match="x.npy: the input file changed"):
        d.compute()
    v = str(tmp_path / "v.npy")
    np.save(v, X[:, 0])
    with pytest.raises(ValueError, match=r"2-d array of rows, found shape \(1000,\)"):
        from_array(np.load(v, mmap_mode="r"))


def test_a_mapping_of_a_replaced_file_keeps_its_own_rows(tmp_path, caplog):
    """A file replaced at its path after NumPy mapped it: the mapping still shows the old rows,
    the path the new ones, so the rows go in the graph (as in-memory rows), with a warning naming
    the file (read by path, the job would featurize the new file's rows)."""
    X = np.random.default_rng(2).random((100, 5))
    p, new = str(tmp_path / "x.npy"), str(tmp_path / "new.npy")
    np.save(p, X)
    mm = np.load(p, mmap_mode="r")
    np.save(new, X + 1)
    os.replace(new, p)
    d = from_array(mm, block_rows=30)
    assert d.name.startswith("ndarray-")
    np.testing.assert_array_equal(d.compute(), X)
    assert "x.npy: the file no longer holds the rows this array maps" in caplog.text


def _npy_header_only(path, shape):
    """A .npy file of float64 ``shape`` holding no data (its rows have no columns)."""
    import struct

    h = ("{'descr': '<f8', 'fortran_order': False, 'shape': %r, }" % (shape,)).encode()
    h += b" " * (64 - (10 + len(h) + 1) % 64) + b"\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h)
    return str(path)


def test_rows_of_no_columns_are_refused_up_front_naming_the_input(tmp_path, capsys):
    """A .npy of shape (100, 0) was featurized into 100 rows of codes made of nothing, and one of
    shape (10**15, 0) took 60 s and 5 GB before a MemoryError in dask's tokenize (default blocks
    of 32 Mi rows of no columns: 3e7 of them)."""
    import dask.array as da

    from _cli import one_line_error
    from dask_kernels import GCWS, featurize

    small = str(tmp_path / "z.npy")
    np.save(small, np.zeros((100, 0)))
    huge = _npy_header_only(tmp_path / "huge.npy", (10**15, 0))
    for p in (small, huge):
        with pytest.raises(ValueError, match=r"huge\.npy|z\.npy"):
            read_npy(p)
        message = one_line_error(capsys, ["featurize", p, str(tmp_path / "s.zarr"), "--no-progress"])
        assert p in message and "no columns" in message
    assert not os.path.exists(tmp_path / "s.zarr")
    for X in (np.zeros((100, 0)), np.zeros((10**15, 0)), da.zeros((100, 0), chunks=(10, 0)), sp.csr_matrix((100, 0))):
        with pytest.raises(ValueError, match=r"the rows have no columns \(shape \(\d+, 0\)\)"):
            featurize(X, GCWS(n_components=8))
    with pytest.raises(ValueError, match="no columns"):
        featurize(np.zeros((100, 0)), GCWS(n_components=8), store=str(tmp_path / "t.zarr"), progress=False)


@pytest.mark.parametrize("dtype", ["c16", [("a", "f8"), ("b", "i4")], "V8", "M8[s]", "U3"])
def test_rows_that_are_not_real_numbers_are_refused_naming_the_file(tmp_path, capsys, dtype):
    """A structured .npy ended in a TypeError traceback from scikit-learn, a void one in "setting an
    array element with a sequence." and a complex one in a message printing the whole array,
    none naming the file."""
    from _cli import one_line_error

    p = str(tmp_path / "rows.npy")
    np.save(p, np.zeros((20, 3), dtype=dtype))
    with pytest.raises(ValueError, match=r"rows\.npy: the rows have dtype .*, not real numbers"):
        read_npy(p)
    message = one_line_error(capsys, ["featurize", p, str(tmp_path / "s.zarr"), "--no-progress"])
    assert message.startswith(f"dask-kernels featurize: error: input {p}: the rows have dtype ")
    assert not os.path.exists(tmp_path / "s.zarr")


def test_an_npy_that_is_a_fifo_is_refused_unread(tmp_path, capsys):
    """featurize, train and predict blocked forever opening a FIFO named as rows or --labels."""
    from _cli import one_line_error
    from _special_files import deadline

    fifo = str(tmp_path / "rows.npy")
    os.mkfifo(fifo)
    rows = str(tmp_path / "X.npy")
    np.save(rows, np.ones((5, 3)))
    says = f"{fifo}: not a .npy file: it is a FIFO (named pipe), not a regular file"
    with deadline(fifo=fifo):
        with pytest.raises(ValueError, match=re.escape(says)):
            read_npy(fifo)
        line = one_line_error(capsys, ["featurize", rows, str(tmp_path / "s.zarr"), "--labels", fifo, "--no-progress"])
        assert line.startswith(f"dask-kernels featurize: error: --labels {fifo} is a FIFO (named pipe)"), line
    assert not os.path.exists(tmp_path / "s.zarr")
