"""More inputs: compressed svmlight, the same file by relative and absolute path,
in-memory sparse rows checked before they are sliced."""

import bz2
import gzip
import lzma
import os

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from dask_kernels import GCWS, featurize
from dask_kernels.io import from_sparse, read_svmlight

RNG = np.random.default_rng(4)
X = np.abs(RNG.standard_normal((120, 10))) * (RNG.random((120, 10)) < 0.5)
Y = RNG.integers(0, 3, 120)
TEXT = "".join(f"{Y[i]} " + " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(row) if v) + "\n"
               for i, row in enumerate(X)).encode()


@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)])
def test_compressed_svmlight_reads_like_scikit_learn(tmp_path, suffix, opener):
    p = str(tmp_path / ("d.svm" + suffix))
    with opener(p, "wb") as f:
        f.write(TEXT)
    src = read_svmlight(p, blocksize=100)  # ignored: a compressed stream is one partition
    assert src.n_partitions == 1 and src.shape == (120, 10)
    Xs, ys, _ = src.compute()
    plain = str(tmp_path / "d.svm")  # scikit-learn reads .gz and .bz2, not .xz
    open(plain, "wb").write(TEXT)
    Xr, yr = load_svmlight_file(plain if suffix == ".xz" else p, n_features=10)
    assert np.array_equal(Xs.toarray(), Xr.toarray()) and np.array_equal(ys, yr)
    assert np.array_equal(Xs.toarray(), X)


def test_compressed_svmlight_error_names_line(tmp_path):
    p = str(tmp_path / "bad.svm.gz")
    with gzip.open(p, "wb") as f:
        f.write(TEXT + b"1 3:x\n")
    with pytest.raises(ValueError, match=r"bad\.svm\.gz: line 121 \(row 120\)"):
        read_svmlight(p)


def test_relative_and_absolute_path_are_the_same_job(tmp_path, monkeypatch):
    (tmp_path / "d.svm").write_bytes(TEXT)
    monkeypatch.chdir(tmp_path)
    g = GCWS(n_components=16, seed=1).fit(X[:1])
    store = str(tmp_path / "s.zarr")
    a = featurize(read_svmlight("d.svm", n_features=10), g, store=store, block_rows=50, progress=False)
    assert a.run_stats == {"computed": 3, "skipped": 0}
    b = featurize(read_svmlight(str(tmp_path / "d.svm"), n_features=10), g, store=store, block_rows=50,
                  progress=False)
    assert b.run_stats == {"computed": 0, "skipped": 3}  # resumed, not refused as another job
    assert b.fingerprint["input"]["path"] == os.path.join(str(tmp_path), "d.svm")


def test_from_sparse_checks_before_slicing():
    # column index 12 is out of range for 10 columns; slicing would hide or mangle it
    bad = sp.csr_matrix((np.ones(3), np.array([1, 12, 2]), np.array([0, 1, 2, 3])), shape=(3, 10))
    with pytest.raises(ValueError, match="row 1"):
        from_sparse(bad, block_rows=1)


def test_npy_and_parquet_by_relative_and_absolute_path_are_the_same_job(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dask_kernels import read_parquet
    from dask_kernels.io import read_npy

    rows = np.abs(np.random.default_rng(2).standard_normal((120, 10)))
    np.save(tmp_path / "r.npy", rows)
    pq.write_table(pa.table({f"c{j}": rows[:, j] for j in range(10)}), tmp_path / "r.parquet", row_group_size=40)
    monkeypatch.chdir(tmp_path)
    g = GCWS(n_components=16, seed=1).fit(rows[:1])
    for read, name in ((lambda p: read_npy(p, block_rows=40), "r.npy"),
                       (lambda p: read_parquet(p, block_rows=40), "r.parquet")):
        store = str(tmp_path / f"{name}.zarr")
        a = featurize(read(name), g, store=store, progress=False)
        assert a.run_stats == {"computed": 3, "skipped": 0}
        b = featurize(read(str(tmp_path / name)), g, store=store, progress=False)
        assert b.run_stats == {"computed": 0, "skipped": 3}, name  # resumed, not refused as another job
