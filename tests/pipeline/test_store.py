"""Zarr v3 feature stores: layout, bitwise determinism, resume, refusal, errors mid-job."""

import os

import dask
import dask.array as da
import numpy as np
import pytest
import zarr

from dask_kernels import GCWS, featurize, open_store
from dask_kernels.io import read_svmlight

RNG = np.random.default_rng(1)
X = np.abs(RNG.standard_normal((600, 24)))
Y = RNG.integers(0, 2, 600)
G = GCWS(n_components=32, seed=5).fit(X[:1])
REF = G.transform(X)


def _chunk_bytes(path, array, i):
    with open(os.path.join(path, array, "c", str(i), *(["0"] if array == "features" else [])), "rb") as f:
        return f.read()


def test_layout_and_reader(tmp_path):
    p = str(tmp_path / "s.zarr")
    s = featurize(da.from_array(X, chunks=(100, 24)), G, labels=Y, row_ids=np.arange(600) + 10**9, store=p,
                  progress=False)
    assert s.complete and s.run_stats == {"computed": 6, "skipped": 0}
    assert s.features.dtype == np.uint8 and s.features.chunks == ((100,) * 6, (32,))
    assert np.array_equal(s.features.compute(), REF) and np.array_equal(s.labels.compute(), Y)
    assert s.row_ids.compute()[0] == 10**9
    assert list(s.blocks()) == [(i, i + 100) for i in range(0, 600, 100)] and s.n_blocks == 6
    assert s.spec == G.spec() and np.array_equal(s.feature_map.transform(X[:5]), REF[:5])
    g = zarr.open_group(p, mode="r")
    info = g.attrs["dask_kernels"]
    assert info["rng_scheme"] == "dk-rng-1" and "package_version" in info and g.attrs["complete"] is True
    assert g["features"].chunks == (100, 32) and g["done"][:, 0].tolist() == [1] * 6
    assert os.path.exists(os.path.join(p, "zarr.json"))
    assert "consolidated_metadata" in open(os.path.join(p, "zarr.json")).read()


def test_same_bytes_from_1_and_7_partitions(tmp_path):
    a = featurize(da.from_array(X, chunks=(600, 24)), G, store=str(tmp_path / "a.zarr"), block_rows=100, progress=False)
    b = featurize(da.from_array(X, chunks=(86, 24)), G, store=str(tmp_path / "b.zarr"), block_rows=100, progress=False)
    for i in range(6):
        assert _chunk_bytes(a.path, "features", i) == _chunk_bytes(b.path, "features", i)


def test_svmlight_store_keeps_labels_and_qid(tmp_path):
    p = tmp_path / "d.svm"
    lines = [f"{i % 3} qid:{i // 10} " + " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(row) if v) for i, row
             in enumerate(X[:95])]
    p.write_text("\n".join(lines) + "\n")
    src = read_svmlight(str(p), n_features=24, blocksize=1500)
    assert src.n_partitions > 3
    s = featurize(src, G, store=str(tmp_path / "s.zarr"), block_rows=20, progress=False)
    assert s.n_blocks == 5 and np.array_equal(s.features.compute(), REF[:95])
    assert s.labels.compute().tolist() == [i % 3 for i in range(95)]
    assert s.qid.compute().tolist() == [i // 10 for i in range(95)]


class FlakyRows:
    """Rows that fail for block 2 while a flag file exists (a job killed mid-way)."""

    def __init__(self, data, flag):
        self.data, self.flag = data, flag
        self.shape, self.dtype, self.ndim = data.shape, data.dtype, 2

    def __getitem__(self, key):
        if key[0].start == 200 and os.path.exists(self.flag):
            raise RuntimeError("simulated crash in block 2")
        return self.data[key]


def test_killed_job_resumes_without_recomputing(tmp_path):
    flag = tmp_path / "crash"
    flag.touch()
    Xd = da.from_array(FlakyRows(X, str(flag)), chunks=(100, 24), name="flaky-rows")
    p = str(tmp_path / "s.zarr")
    with dask.config.set(scheduler="synchronous"), pytest.raises(RuntimeError, match="simulated crash"):
        featurize(Xd, G, labels=Y, store=p, progress=False)
    partial = open_store(p)
    assert not partial.complete
    finished = int(partial.done.sum())
    assert 1 <= finished < 6
    for i in np.flatnonzero(partial.done):  # what was written is already right
        assert np.array_equal(partial.features[i * 100:(i + 1) * 100].compute(), REF[i * 100:(i + 1) * 100])
    flag.unlink()
    s = featurize(Xd, G, labels=Y, store=p, progress=False)
    assert s.run_stats == {"computed": 6 - finished, "skipped": finished}
    assert s.complete and np.array_equal(s.features.compute(), REF) and np.array_equal(s.labels.compute(), Y)


def test_retried_block_writes_identical_bytes(tmp_path):
    p = str(tmp_path / "s.zarr")
    Xd = da.from_array(X, chunks=(100, 24))
    featurize(Xd, G, store=p, progress=False)
    before = _chunk_bytes(p, "features", 3)
    g = zarr.open_group(p, mode="r+", use_consolidated=False)
    g["done"][3] = 0  # as if the task had died before finishing
    g["features"][300:400] = 0
    g.attrs["complete"] = False
    s = featurize(Xd, G, store=p, progress=False)
    assert s.run_stats == {"computed": 1, "skipped": 5}
    assert _chunk_bytes(p, "features", 3) == before


def test_different_job_is_refused_with_what_differs(tmp_path):
    p = str(tmp_path / "s.zarr")
    Xd = da.from_array(X, chunks=(100, 24))
    featurize(Xd, G, store=p, progress=False)
    with pytest.raises(ValueError, match=r"params.n_components: 32 \(stored\) != 16 \(now\)"):
        featurize(Xd, GCWS(n_components=16, seed=5).fit(X[:1]), store=p, progress=False)
    with pytest.raises(ValueError, match=r"input.shape: \[600, 24\] \(stored\) != \[500, 24\] \(now\)"):
        featurize(Xd[:500], G, store=p, progress=False)
    with pytest.raises(ValueError, match="block_rows: 100"):
        featurize(Xd, G, store=p, block_rows=50, progress=False)
    s = featurize(Xd, GCWS(n_components=16, seed=5).fit(X[:1]), store=p, overwrite=True, progress=False)
    assert s.features.shape == (600, 16) and s.run_stats["computed"] == 6


def test_nan_names_global_row_and_keeps_written_blocks(tmp_path):
    Xn = X.copy()
    Xn[457, 3] = np.inf
    p = str(tmp_path / "s.zarr")
    with dask.config.set(scheduler="synchronous"), pytest.raises(ValueError, match="row 457, column 3"):
        featurize(da.from_array(Xn, chunks=(100, 24)), G, store=p, progress=False)
    s = open_store(p)
    assert not s.complete and not s.done[4]
    for i in np.flatnonzero(s.done):
        assert np.array_equal(s.features[i * 100:(i + 1) * 100].compute(), REF[i * 100:(i + 1) * 100])


def test_fsspec_url(tmp_path):
    url = "file://" + str(tmp_path / "u.zarr")
    s = featurize(da.from_array(X, chunks=(150, 24)), G, store=url, progress=False)
    assert np.array_equal(open_store(url).features.compute(), REF) and s.complete


def test_opening_missing_or_foreign_store(tmp_path):
    with pytest.raises(FileNotFoundError):
        open_store(str(tmp_path / "none.zarr"))
    zarr.open_group(str(tmp_path / "other.zarr"), mode="w")
    with pytest.raises(ValueError, match="not a dask_kernels feature store"):
        open_store(str(tmp_path / "other.zarr"))
    with pytest.raises(ValueError, match="not a dask_kernels feature store"):
        featurize(X, G, store=str(tmp_path / "other.zarr"), progress=False)


def test_sparse_blocks_across_partitions_with_labels_and_row_ids(tmp_path):
    import scipy.sparse as sp

    from dask_kernels.io import from_sparse

    src = from_sparse(sp.csr_matrix(X), y=Y, block_rows=70)  # partitions of 70 rows, blocks of 100
    s = featurize(src, G, store=str(tmp_path / "a.zarr"), block_rows=100, progress=False)
    assert np.array_equal(s.features.compute(), REF) and np.array_equal(s.labels.compute(), Y)
    ids = np.arange(600)[::-1]
    s = featurize(src, G, labels=-Y, row_ids=ids, store=str(tmp_path / "b.zarr"), block_rows=100, progress=False)
    assert np.array_equal(s.labels.compute(), -Y) and np.array_equal(s.row_ids.compute(), ids)


@pytest.mark.parametrize("lazy", [False, True])
def test_a_missing_label_is_refused_naming_its_row(tmp_path, lazy):
    """NaN labels were stored silently; training then failed with "y contains labels not in
    classes_ [0.0, 1.0, nan]: [nan]"."""
    X = np.random.default_rng(0).random((30, 3))
    y = np.r_[np.zeros(15), np.ones(15)]
    y[23] = np.nan
    labels = da.from_array(y, chunks=10) if lazy else y
    with pytest.raises(ValueError, match="labels: row 23 is missing"):
        featurize(da.from_array(X, chunks=(10, 3)), GCWS(n_components=8).fit(X), labels=labels,
                  store=str(tmp_path / "s.zarr"), progress=False)


def test_an_empty_label_cell_of_a_csv_is_refused_naming_its_row(tmp_path, capsys):
    from dask_kernels.cli import main

    (tmp_path / "t.csv").write_text("a,b,y\n1,2,0\n3,4,\n5,6,1\n")
    assert main(["featurize", str(tmp_path / "t.csv"), str(tmp_path / "s.zarr"), "--label-column", "y",
                 "--param", "n_components=8", "--no-progress"]) != 0
    assert "labels: row 1 is missing" in capsys.readouterr().err
