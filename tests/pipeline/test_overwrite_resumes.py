"""``overwrite=True`` (``featurize --overwrite``, ``overwrite = true`` under a job's [store])
replaces a store of another job; a store of the same job is resumed, as without it, so a nightly
job that replaces its store re-runs after a crash without recomputing its finished blocks."""

import textwrap

import dask
import numpy as np
import pytest
import zarr

from dask_kernels import GCWS, featurize, open_store
from dask_kernels.cli import main
from dask_kernels.io import read_npy

RNG = np.random.default_rng(5)
X = np.abs(RNG.standard_normal((400, 6)))
G = GCWS(n_components=8, seed=1).fit(X[:1])
REF = G.transform(X)
N_BLOCKS = 8  # of 50 rows


def _featurize(path, block_rows=50, **kw):
    return featurize(read_npy(str(path), block_rows=block_rows), G, store=str(path.parent / "s.zarr"),
                     block_rows=block_rows, progress=False, **kw)


@pytest.fixture
def npy(tmp_path):
    np.save(tmp_path / "X.npy", X)
    return tmp_path / "X.npy"


def test_a_finished_store_of_the_same_job_is_kept(npy):
    assert _featurize(npy, overwrite=True).run_stats["computed"] == N_BLOCKS
    s = _featurize(npy, overwrite=True)
    assert s.run_stats["computed"] == 0 and np.array_equal(s.features.compute(), REF)


def test_a_run_that_failed_half_way_is_resumed(npy):
    bad = X.copy()
    bad[160, 2] = np.nan  # block 3: the run stops there, blocks before it are done
    np.save(npy, bad)
    with dask.config.set(scheduler="sync"), pytest.raises(ValueError, match="row 160"):
        _featurize(npy, overwrite=True)
    done = int(open_store(str(npy.parent / "s.zarr"), verify=False).done.sum())
    assert 0 < done < N_BLOCKS
    np.save(npy, X)  # fixed: the same job
    s = _featurize(npy, overwrite=True)
    assert s.run_stats["computed"] == N_BLOCKS - done and np.array_equal(s.features.compute(), REF)


def test_new_rows_of_the_same_shape_replace_the_changed_blocks(npy):
    _featurize(npy, overwrite=True)
    day2 = X.copy()
    day2[:50] *= 2  # block 0 only
    np.save(npy, day2)
    s = _featurize(npy, overwrite=True)
    assert s.run_stats["computed"] == 1 and np.array_equal(s.features.compute(), G.transform(day2))


def test_another_job_an_appended_store_or_other_codecs_are_replaced(npy):
    _featurize(npy, overwrite=True)
    s = _featurize(npy, block_rows=40, overwrite=True)
    assert s.run_stats["computed"] == 10 and s.block_rows == 40  # another job: replaced
    store = str(npy.parent / "s.zarr")
    np.save(npy.parent / "Y.npy", X[:100] * 3)
    featurize(read_npy(str(npy.parent / "Y.npy")), G, store=store, mode="append", progress=False)
    assert open_store(store).n_rows == 500
    s = _featurize(npy.parent / "Y.npy", block_rows=40, overwrite=True)
    assert s.n_rows == 100 and np.array_equal(s.features.compute(), G.transform(X[:100] * 3))  # segments gone
    def codecs():
        return [type(c).__name__ for c in zarr.open_group(store, mode="r")["features"].compressors]

    assert "ZstdCodec" in codecs()
    s = _featurize(npy.parent / "Y.npy", block_rows=40, overwrite=True, compressors=None)  # made with raw bytes
    assert s.run_stats["computed"] == 3 and "ZstdCodec" not in codecs()


def test_a_job_with_overwrite_rerun_computes_nothing(npy, capsys):
    job = npy.parent / "job.toml"
    job.write_text(textwrap.dedent("""
        [input]
        path = "X.npy"
        [map]
        method = "gcws"
        params = { n_components = 8 }
        [store]
        path = "f.zarr"
        block_rows = 50
        overwrite = true
        progress = false
    """))
    assert main(["run", str(job)]) == 0
    assert f"{N_BLOCKS} computed, 0 already done" in capsys.readouterr().out
    assert main(["run", str(job)]) == 0
    assert f"0 computed, {N_BLOCKS} already done" in capsys.readouterr().out
