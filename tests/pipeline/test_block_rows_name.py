"""One name, ``block_rows``, everywhere for rows per block (``featurize(chunks=)``,
``--chunks`` and a job file's ``[store] chunks`` keep working for one release with a
FutureWarning), and one ``--param`` parser whose bad values are one line, not a traceback."""

import textwrap

import numpy as np
import pytest

from dask_kernels import GCWS, featurize, open_store
from dask_kernels.cli import main
from dask_kernels.cli.run import JobError, load_job, steps

X = np.random.default_rng(0).random((120, 4))
G = GCWS(n_components=8, seed=1).fit(X[:1])


def test_featurize_block_rows_and_its_deprecated_alias(tmp_path):
    a = featurize(X, G, store=str(tmp_path / "a.zarr"), block_rows=50, progress=False)
    assert a.features.chunks[0] == (50, 50, 20)
    with pytest.warns(FutureWarning, match=r"featurize\(chunks=\) is deprecated.*block_rows="):
        b = featurize(X, G, store=str(tmp_path / "b.zarr"), chunks=50, progress=False)
    assert b.features.chunks[0] == (50, 50, 20)
    assert np.array_equal(a.features.compute(), b.features.compute())
    with pytest.raises(TypeError, match="both block_rows and its deprecated alias chunks"):
        featurize(X, G, block_rows=50, chunks=50)


def test_cli_block_rows_and_deprecated_chunks(tmp_path, capsys):
    from distributed import LocalCluster

    np.save(tmp_path / "X.npy", X)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                      dashboard_address=":0") as cluster:
        common = ["--param", "n_components=8", "--scheduler", cluster.scheduler_address, "--no-progress"]
        assert main(["featurize", str(tmp_path / "X.npy"), str(tmp_path / "a.zarr"), "--block-rows", "40",
                     *common]) == 0
        assert open_store(str(tmp_path / "a.zarr")).n_blocks == 3
        with pytest.warns(FutureWarning, match="--chunks is deprecated.*--block-rows"):
            assert main(["featurize", str(tmp_path / "X.npy"), str(tmp_path / "b.zarr"), "--chunks", "60",
                         *common]) == 0
        assert open_store(str(tmp_path / "b.zarr")).n_blocks == 2
        capsys.readouterr()
        assert main(["featurize", str(tmp_path / "X.npy"), str(tmp_path / "c.zarr"), "--chunks", "6",
                     "--block-rows", "6", *common]) == 1
    assert "--chunks is the deprecated name of --block-rows" in capsys.readouterr().err
    assert not (tmp_path / "c.zarr").exists()


JOB = """
[input]
path = "X.npy"
[map]
method = "gcws"
[store]
path = "f.zarr"
{store}
"""


def test_job_file_store_chunks_is_a_deprecated_block_rows(tmp_path):
    job = tmp_path / "job.toml"
    job.write_text(textwrap.dedent(JOB.format(store="chunks = 30")))
    with pytest.warns(FutureWarning, match=r"\[store\] chunks is deprecated.*block_rows"):
        plan = steps(load_job(str(job)), None)
    assert plan[0][1][-2:] == ["--block-rows", "30"]
    job.write_text(textwrap.dedent(JOB.format(store="block_rows = 30")))
    assert steps(load_job(str(job)), None)[0][1][-2:] == ["--block-rows", "30"]
    job.write_text(textwrap.dedent(JOB.format(store="block_rows = 30\nchunks = 30")))
    with pytest.raises(JobError, match=r"\[store\] chunks: the deprecated name of block_rows"):
        load_job(str(job))


@pytest.mark.parametrize("command", ["featurize", "train"])
@pytest.mark.parametrize("item,expected", [
    ("n_components=" + "[" * 100_000, "--param n_components: the value is nested too deeply"),
    ("n_components=abc", "--param: The 'n_components' parameter of GCWS must be an int"),
    ("=3", "--param expects NAME=VALUE, got '=3'"),
])
def test_a_bad_param_is_one_line(tmp_path, capsys, command, item, expected):
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", np.zeros(len(X), dtype=np.int64))
    argv = ([command, str(tmp_path / "X.npy"), str(tmp_path / "f.zarr")] if command == "featurize" else
            [command, str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "-o", str(tmp_path / "m.dk"),
             "--method", "gcws"])
    assert main(argv + ["--param", item]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"dask-kernels {command}: error: {expected}") and len(err.splitlines()) == 1
    assert len(err) < 300


def test_something_other_than_a_feature_map_is_refused_before_any_work(tmp_path):
    # it failed inside fit with "BaseSGDClassifier.fit() missing 1 required positional argument: 'y'"
    from sklearn.linear_model import SGDClassifier

    with pytest.raises(TypeError, match="feature_map must be a dask_kernels feature map .*got SGDClassifier"):
        featurize(np.zeros((3, 2)), SGDClassifier(), store=str(tmp_path / "s.zarr"))
    assert not (tmp_path / "s.zarr").exists()


def test_a_feature_store_as_rows_is_refused_saying_what_to_do(tmp_path):
    # it failed with "expected a 2-d array of rows, found shape ()"
    gcws = GCWS(n_components=8, seed=0).fit(X)
    store = featurize(X, gcws, store=str(tmp_path / "f.zarr"), progress=False)
    with pytest.raises(TypeError, match="X is a feature store.*fit_incremental"):
        featurize(store, gcws, store=str(tmp_path / "again.zarr"), progress=False)
    with pytest.raises(TypeError, match="X is a feature store"):
        featurize(open_store(str(tmp_path / "f.zarr")), gcws, progress=False)
    assert not (tmp_path / "again.zarr").exists()
